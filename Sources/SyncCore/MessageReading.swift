import JSON

/// The members of a message's object, its array of changes read as changes.
struct MessageReading {
    var isObject = false
    var members: [String: JSONValue] = [:]
    /// Whether the changes' member is there and an array.
    var hasChanges = false
    var count = 0
    /// The valid changes, in order (for a push or relay: those before the
    /// first problem that is not ``ChangeRecord/Unreadable``).
    var changes: [ChangeRecord] = []
    /// The changes that are not valid, with their place in the array.
    /// (Refusing a message whole, the first that is not unreadable.)
    var problems: [(index: Int, change: ChangeRecord.ChangeProblem)] = []

    /// The first problem that refuses a push or relay whole.
    var refusal: Wire.Problem? { problems.first { $0.change.unreadable == nil }?.change.problem }
    /// The changes over a limit, rejected alone.
    var unreadable: [ChangeRecord.Unreadable] { problems.compactMap(\.change.unreadable) }

    /// - Parameters:
    ///   - changesName: the member holding the changes.
    ///   - limit: most changes read; past it they are counted, not read.
    ///   - untilProblem: stop reading changes at the first that is not valid
    ///     and not ``ChangeRecord/Unreadable`` (a push and a relay are then
    ///     refused whole; a pull page sets every problem aside).
    ///   - secondThread: reads a long array's second half at once, when given.
    static func read(
        _ bytes: UnsafeBufferPointer<UInt8>, changesName: String, limit: Int, untilProblem: Bool,
        secondThread: SecondThread? = nil
    ) throws(Wire.ReadError) -> MessageReading {
        try Wire.document(bytes) { scanner throws(JSONValue.ParseError) in
            var reading = MessageReading()
            var stopped = false
            guard scanner.peek() == UInt8(ascii: "{") else {
                _ = try scanner.value()
                return reading
            }
            reading.isObject = true
            guard try scanner.beginObject() else { return reading }
            repeat {
                let name = try scanner.name()
                guard name == changesName else {
                    reading.members[name] = try scanner.value()
                    continue
                }
                reading.hasChanges = false
                reading.count = 0
                reading.changes = []
                reading.problems = []
                stopped = false
                guard scanner.peek() == UInt8(ascii: "[") else {
                    _ = try scanner.value()
                    continue
                }
                reading.hasChanges = true
                guard try scanner.beginArray() else { continue }
                if let secondThread, let halves = Halves.read(scanner, limit: limit, on: secondThread) {
                    (reading.count, reading.changes, reading.problems) = (halves.count, halves.changes, halves.problems)
                    scanner = halves.after
                    continue
                }
                repeat {
                    defer { reading.count += 1 }
                    guard reading.count < limit, !(untilProblem && stopped) else {
                        _ = try scanner.value()
                        continue
                    }
                    switch try ChangeRecord.read(&scanner) {
                    case .success(let change): reading.changes.append(change)
                    case .failure(let problem):
                        reading.problems.append((reading.count, problem))
                        if problem.unreadable == nil { stopped = true }
                    }
                } while try scanner.nextElement()
            } while try scanner.nextMember()
            return reading
        }
    }
}

/// A long array of changes read in two halves at once (``SecondThread``),
/// giving exactly what reading it in order gives. Only the usual case is
/// read this way: an array of well-formed JSON whose changes are all valid
/// or only over a limit, within the message's limit. Anything else (a
/// refused change, JSON that is not, too many changes) is left to the
/// reading in order, which then says what is wrong as it always did.
private struct Halves {
    var count: Int
    var changes: [ChangeRecord]
    var problems: [(index: Int, change: ChangeRecord.ChangeProblem)]
    /// The scanner past the array's end.
    var after: JSONScanner

    /// The array whose first element `scanner` is at (its `[` read), or nil
    /// when it is short or not the usual case.
    static func read(_ scanner: JSONScanner, limit: Int, on secondThread: SecondThread) -> Halves? {
        // Where each change starts: a pass that checks the JSON's structure and keeps nothing.
        var probe = scanner
        var starts: [JSONScanner] = []
        do {
            repeat {
                starts.append(probe)
                try probe.skipValue()
            } while try probe.nextElement()
        } catch {
            return nil
        }
        guard starts.count >= secondThread.worthSplitting, starts.count <= limit else { return nil }
        let middle = starts.count / 2
        let second = Starts(Array(starts[middle...]))
        let (firstHalf, secondHalf) = secondThread.both(
            { readEach(starts[..<middle]) }, { readEach(second.scanners[...]) })
        guard let firstHalf, let secondHalf else { return nil }
        var halves = Halves(count: starts.count, changes: [], problems: [], after: probe)
        halves.changes.reserveCapacity(starts.count)
        for (index, result) in (firstHalf + secondHalf).enumerated() {
            switch result {
            case .success(let change): halves.changes.append(change)
            case .failure(let problem):
                // A change that refuses the message: the reading in order stops there.
                guard problem.unreadable != nil else { return nil }
                halves.problems.append((index, problem))
            }
        }
        return halves
    }

    /// Each change read from its start; nil when one is not JSON.
    private static func readEach(
        _ starts: ArraySlice<JSONScanner>
    ) -> [Result<ChangeRecord, ChangeRecord.ChangeProblem>]? {
        var results: [Result<ChangeRecord, ChangeRecord.ChangeProblem>] = []
        results.reserveCapacity(starts.count)
        for start in starts {
            var scanner = start
            guard let result = try? ChangeRecord.read(&scanner) else { return nil }
            results.append(result)
        }
        return results
    }

    /// The second half's starts, handed to the other thread. Each scanner
    /// reads the message's bytes, which outlive the reading of both halves.
    private final class Starts: @unchecked Sendable {
        let scanners: [JSONScanner]
        init(_ scanners: [JSONScanner]) { self.scanners = scanners }
    }
}
