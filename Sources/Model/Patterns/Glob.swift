/// A compiled wildcard expression of the pattern language over lower-case bytes:
/// `*` matches any run of characters except `/`, `**` any run including `/`,
/// `?` exactly one character; everything else matches itself.
struct Glob: Sendable, Hashable {
    enum Token: Sendable, Hashable {
        case literal(UInt8)
        case anyOne
        case star
        case globStar
    }

    let tokens: [Token]

    init(_ bytes: some Sequence<UInt8>) {
        var tokens: [Token] = []
        var iterator = Array(bytes).makeIterator()
        var pending: UInt8? = iterator.next()
        while let byte = pending {
            pending = iterator.next()
            switch byte {
            case UInt8(ascii: "*"):
                if pending == UInt8(ascii: "*") {
                    pending = iterator.next()
                    tokens.append(.globStar)
                } else {
                    tokens.append(.star)
                }
            case UInt8(ascii: "?"):
                tokens.append(.anyOne)
            default:
                tokens.append(.literal(byte))
            }
        }
        self.tokens = tokens
    }

    var endsWithStar: Bool {
        switch tokens.last {
        case .star?, .globStar?: return true
        default: return false
        }
    }

    /// Number of literal characters: more literal text means a more specific pattern.
    var literalCount: Int {
        tokens.reduce(0) { count, token in
            if case .literal = token { return count + 1 }
            return count
        }
    }

    /// Positions `k` such that the glob matches `subject[0..<k]`, as a table of
    /// `subject.count + 1` flags. Runs in O(tokens × subject) with no backtracking,
    /// so no pattern can make matching slow.
    func matchEnds(_ subject: UnsafeBufferPointer<UInt8>) -> [Bool] {
        let count = subject.count
        var current = [Bool](repeating: false, count: count + 1)
        current[0] = true
        var next = [Bool](repeating: false, count: count + 1)
        for token in tokens {
            for index in 0...count { next[index] = false }
            var any = false
            switch token {
            case .literal(let byte):
                for index in 0..<count where current[index] && subject[index] == byte {
                    next[index + 1] = true
                    any = true
                }
            case .anyOne:
                for index in 0..<count where current[index] {
                    next[index + 1] = true
                    any = true
                }
            case .star, .globStar:
                // `*` stops at a slash (it matches the slash, not past it); `**` does not.
                let stopsAtSlash = token == .star
                var reachable = false
                for index in 0...count {
                    if current[index] { reachable = true }
                    if reachable {
                        next[index] = true
                        any = true
                        if stopsAtSlash && index < count && subject[index] == UInt8(ascii: "/") { reachable = false }
                    }
                }
            }
            swap(&current, &next)
            if !any { return current }
        }
        return current
    }

    /// Whether the glob matches all of `subject`.
    func matchesWhole(_ subject: some StringProtocol) -> Bool {
        var text = String(subject)
        return text.withUTF8 { matchEnds($0)[$0.count] }
    }
}
