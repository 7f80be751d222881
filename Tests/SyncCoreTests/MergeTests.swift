import JSON
import Model
import TestSupport
import Testing

@testable import SyncCore

@Suite struct MergeTests {
    /// A random state over a few devices and fields, as replicas would hold.
    func randomState(_ random: inout SeededRandom) -> RecordState {
        let devices = ["a", "b", "c"]
        var state = RecordState()
        for field in ["name", "browser", "priority", RecordState.deletedField] where Bool.random(using: &random) {
            let stamp = HLCTimestamp(
                wallMillis: Int64.random(in: 0...5, using: &random), counter: UInt32.random(in: 0...2, using: &random),
                device: devices.randomElement(using: &random)!)
            // The same stamp always carries the same value, as a real device would write.
            let value: JSONValue = .string("\(field)@\(stamp)")
            state.fields[field] = StampedValue(value, stamp: stamp)
        }
        for device in devices where Bool.random(using: &random) {
            for _ in 0..<Int.random(in: 1...3, using: &random) { state.versions.increment(device) }
        }
        return state
    }

    @Test func mergeIsCommutativeAssociativeIdempotent() {
        var random = SeededRandom.fromEnvironment(fallback: 20_261_121)
        print("MergeTests seed: \(random.seed) (re-run with BRSYNC_TEST_SEED=\(random.seed))")
        for _ in 0..<2000 {
            let a = randomState(&random)
            let b = randomState(&random)
            let c = randomState(&random)
            #expect(a.merged(with: b).state == b.merged(with: a).state, "commutative, seed \(random.seed)")
            #expect(
                a.merged(with: b).state.merged(with: c).state == a.merged(with: b.merged(with: c).state).state,
                "associative, seed \(random.seed)")
            #expect(a.merged(with: a).state == a, "idempotent, seed \(random.seed)")
        }
    }

    /// A merge into a state holding nothing (a record pulled for the first
    /// time) is the other state, losing nothing, the same both ways round;
    /// a vector past the cap is still cut.
    @Test func aMergeIntoNothingIsTheOtherState() {
        var random = SeededRandom.fromEnvironment(fallback: 20_261_130)
        print("MergeTests empty seed: \(random.seed) (re-run with BRSYNC_TEST_SEED=\(random.seed))")
        let empty = RecordState()
        for _ in 0..<500 {
            let other = randomState(&random)
            let (merged, lost) = empty.merged(with: other)
            #expect(merged == other && lost.isEmpty, "seed \(random.seed)")
            #expect(other.merged(with: empty).state == merged, "seed \(random.seed)")
        }
        var padded = randomState(&random)
        padded.fields["name"] = StampedValue(.string("n"), stamp: .zero(device: "a"))
        padded.versions = VersionVector(
            (0..<(Wire.maxVersionEntries + 5)).reduce(into: [:]) { $0[String(format: "%016x", $1)] = 1 })
        let cut = empty.merged(with: padded).state
        #expect(cut.versions.counters.count == Wire.maxVersionEntries && cut.fields == padded.fields)
        #expect(cut == padded.merged(with: empty).state)
    }

    /// Vectors padded near the cap (as a lying server can pad them): a merge
    /// never refuses and never passes ``Wire/maxVersionEntries``; it stays
    /// commutative, its values associative; and it keeps every device of the
    /// side with the newest stamp at least at that side's count, so the
    /// newest writer's manifest still holds (RecordCipher checks it).
    @Test func aVectorPastTheCapKeepsTheNewestWritersDevices() {
        var random = SeededRandom.fromEnvironment(fallback: 20_261_127)
        print("MergeTests cap seed: \(random.seed) (re-run with BRSYNC_TEST_SEED=\(random.seed))")
        let cap = Wire.maxVersionEntries
        func padded(_ random: inout SeededRandom) -> RecordState {
            var state = randomState(&random)
            var counters = state.versions.counters
            let offset = Int.random(in: 0..<64, using: &random)
            for index in 0..<(cap - counters.count) {
                counters[String(format: "%016x", offset + index)] = UInt64.random(in: 1...4, using: &random)
            }
            state.versions = VersionVector(counters)
            return state
        }
        for _ in 0..<60 {
            let (a, b, c) = (padded(&random), padded(&random), padded(&random))
            let ab = a.merged(with: b).state
            #expect(ab.versions.counters.count <= cap, "seed \(random.seed)")
            #expect(ab == b.merged(with: a).state, "commutative, seed \(random.seed)")
            #expect(
                ab.merged(with: c).state.fields == a.merged(with: b.merged(with: c).state).state.fields,
                "seed \(random.seed)")
            let (stampA, stampB) = (a.newestStamp ?? .zero(device: ""), b.newestStamp ?? .zero(device: ""))
            // Equal newest stamps are one write: only the devices both have are its writer's.
            let kept =
                stampA == stampB
                ? a.versions.counters.filter { b.versions[$0.key] > 0 }
                : (stampB > stampA ? b : a).versions.counters
            #expect(kept.allSatisfy { ab.versions[$0.key] >= $0.value }, "seed \(random.seed)")
        }
        // A device writing to a full vector stays in it; the smallest counter goes.
        var full = VersionVector((0..<cap).reduce(into: [:]) { $0[String(format: "%016x", $1)] = UInt64($1 + 1) })
        full.increment("0123456789abcdef")
        let kept = full.capped(keeping: ["0123456789abcdef"])
        #expect(kept.counters.count == cap && kept["0123456789abcdef"] == 1 && kept[String(format: "%016x", 0)] == 0)
        #expect(kept.capped(keeping: []) == kept, "a vector within the cap is left alone")
        // A counter a liar set to the largest the wire carries stays sendable.
        var huge = VersionVector(["0123456789abcdef": VersionVector.maxCounter])
        huge.increment("0123456789abcdef")
        #expect(huge["0123456789abcdef"] == VersionVector.maxCounter)
        let text = RecordState.encodeVersions(huge)
        #expect(text.contains("9223372036854775807"), "\(text)")
    }

    /// A fork lowers the old id's count in a record (never raises it; at 0 it is left out).
    @Test func aLoweredCounterNeverRises() {
        let vector = VersionVector(["a": 5, "b": 2])
        #expect(vector.lowering("a", to: 3) == VersionVector(["a": 3, "b": 2]))
        #expect(vector.lowering("a", to: 9) == vector, "never up")
        #expect(vector.lowering("a", to: 0) == VersionVector(["b": 2]), "0 leaves the device out")
        #expect(vector.lowering("c", to: 1) == vector, "a device it does not count stays out")
        // The count before a change that did not count the device at all (0 - 1 wraps): unchanged.
        #expect(vector.lowering("a", to: UInt64(0).subtractingReportingOverflow(1).partialValue) == vector)
    }

    @Test func higherStampWinsAndLosersOfConcurrentEditsAreKept() {
        let early = HLCTimestamp(wallMillis: 10, counter: 0, device: "a")
        let late = HLCTimestamp(wallMillis: 20, counter: 0, device: "b")
        let a = RecordState(
            fields: ["browser": StampedValue(.string("firefox"), stamp: early)], versions: VersionVector(["a": 1]))
        let b = RecordState(
            fields: ["browser": StampedValue(.string("chrome"), stamp: late)], versions: VersionVector(["b": 1]))
        let (merged, lost) = a.merged(with: b)
        #expect(merged.values["browser"] == .string("chrome"))
        #expect(merged.versions == VersionVector(["a": 1, "b": 1]))
        #expect(lost.map(\.lost.value) == [.string("firefox")])

        // A later version that saw the first one is not a conflict.
        let c = RecordState(
            fields: ["browser": StampedValue(.string("chrome"), stamp: late)],
            versions: VersionVector(["a": 1, "b": 1]))
        #expect(a.merged(with: c).lost.isEmpty)
    }

    @Test func tombstoneAndResurrection() {
        let t1 = HLCTimestamp(wallMillis: 1, counter: 0, device: "a")
        let t2 = HLCTimestamp(wallMillis: 2, counter: 0, device: "b")
        let deleted = RecordState(fields: [RecordState.deletedField: StampedValue(.bool(true), stamp: t1)])
        let revived = RecordState(fields: [RecordState.deletedField: StampedValue(.bool(false), stamp: t2)])
        #expect(deleted.isDeleted)
        #expect(!deleted.merged(with: revived).state.isDeleted)
    }

    /// A random encrypted record as copied homes leave it: writes whose
    /// stamps repeat, two writes of one stamp holding different values, and
    /// the deletion flag always beside its sealed twin of the same write.
    func tiedState(_ random: inout SeededRandom) -> RecordState {
        var state = RecordState()
        func stamp() -> HLCTimestamp {
            HLCTimestamp(wallMillis: Int64.random(in: 0...2, using: &random), counter: 0, device: "a")
        }
        // Which of a stamp's two writes: its values and its twin's text.
        func write() -> Int { Int.random(in: 0...1, using: &random) }
        if Bool.random(using: &random) {
            let (at, which) = (stamp(), write())
            state.fields["browser"] = StampedValue(.string("b\(at.wallMillis)/\(which)"), stamp: at)
        }
        if Bool.random(using: &random) {
            let (at, which) = (stamp(), write())
            // Write 0 of wall 1 deletes, write 1 of it does not: the twin's
            // text orders the writes the other way round from the flag's.
            let flag = at.wallMillis == 1 ? which == 0 : at.wallMillis == 2
            state.fields[RecordState.deletedField] = StampedValue(.bool(flag), stamp: at)
            state.fields[RecordState.deletedTwinField] = StampedValue(
                .string("e1.twin\(at.wallMillis)/\(which)"), stamp: at)
        }
        return state
    }

    /// Rule 1 (docs/sealed-format-v2.md, "Ties"): of two deletion flags of
    /// one stamp, the one whose sealed twin wins, so the flag never parts
    /// from its twin; the merge stays commutative, associative, idempotent.
    @Test func aDeletionFlagFollowsItsTwinAtATie() {
        var random = SeededRandom.fromEnvironment(fallback: 20_261_203)
        print("MergeTests tie seed: \(random.seed) (re-run with BRSYNC_TEST_SEED=\(random.seed))")
        for _ in 0..<2000 {
            let (a, b, c) = (tiedState(&random), tiedState(&random), tiedState(&random))
            let ab = a.merged(with: b).state
            #expect(ab == b.merged(with: a).state, "commutative, seed \(random.seed)")
            #expect(
                ab.merged(with: c).state == a.merged(with: b.merged(with: c).state).state,
                "associative, seed \(random.seed)")
            #expect(a.merged(with: a).state == a, "idempotent, seed \(random.seed)")
            let abc = ab.merged(with: c).state
            if let flag = abc.fields[RecordState.deletedField] {
                let twin = abc.fields[RecordState.deletedTwinField]!
                let source = [a, b, c].first { $0.fields[RecordState.deletedTwinField] == twin }!
                #expect(source.fields[RecordState.deletedField] == flag, "the flag of its twin's write")
            }
        }
        // The case itself: the flag's own text would pick `true`; the twin picks `false`.
        let stamp = HLCTimestamp(wallMillis: 1, counter: 0, device: "a")
        func write(_ deleted: Bool, _ twin: String) -> RecordState {
            RecordState(fields: [
                RecordState.deletedField: StampedValue(.bool(deleted), stamp: stamp),
                RecordState.deletedTwinField: StampedValue(.string(twin), stamp: stamp),
            ])
        }
        let merged = write(true, "e1.AAAA").merged(with: write(false, "e1.BBBB")).state
        #expect(!merged.isDeleted && merged.fields[RecordState.deletedTwinField]?.value == .string("e1.BBBB"))
    }

    /// Rule 2: a machine takes the pulled register at a tie, whatever it
    /// holds, so machines that merged one stamp's two writes in different
    /// orders all end with the server's choice; other fields merge as ever.
    @Test func aPulledRegisterWinsATie() {
        let tie = HLCTimestamp(wallMillis: 5, counter: 0, device: "a")
        let later = HLCTimestamp(wallMillis: 6, counter: 0, device: "b")
        let server = RecordState(fields: [
            "browser": StampedValue(.string("chrome"), stamp: tie),
            "priority": StampedValue(.int(1), stamp: tie),
        ])
        let machine = RecordState(fields: [
            "browser": StampedValue(.string("edge"), stamp: tie), // "edge" > "chrome": the text would keep it
            "priority": StampedValue(.int(9), stamp: later),
        ])
        #expect(machine.merged(with: server).state.values["browser"] == .string("edge"))
        let pulled = machine.merged(with: server, tiesToOther: true).state
        #expect(pulled.values == ["browser": .string("chrome"), "priority": .int(9)])
        #expect(pulled.merged(with: server, tiesToOther: true).state == pulled, "the next pull changes nothing")
    }
}

@Suite struct ClockTests {
    @Test func tickIsMonotonicWhenTheWallClockGoesBack() {
        var clock = HybridLogicalClock(device: "d")
        let first = clock.tick(wallMillis: 1000)
        let second = clock.tick(wallMillis: 500)
        let third = clock.tick(wallMillis: 1000)
        #expect(first < second && second < third)
        #expect(second.wallMillis == 1000 && second.counter == 1)
    }

    @Test func observeMovesPastRemoteStamps() {
        var clock = HybridLogicalClock(device: "d")
        _ = clock.tick(wallMillis: 100)
        let remote = HLCTimestamp(wallMillis: 5000, counter: 7, device: "z")
        clock.observe(remote, wallMillis: 200)
        let next = clock.tick(wallMillis: 300)
        #expect(next > remote)
    }

    @Test func textFormRoundTripsAndSorts() {
        let stamps = [
            HLCTimestamp(wallMillis: 1_700_000_000_000, counter: 3, device: "abc"),
            HLCTimestamp(wallMillis: 1_700_000_000_000, counter: 10, device: "abc"),
            HLCTimestamp(wallMillis: 1_700_000_000_001, counter: 0, device: "aaa"),
        ]
        for stamp in stamps { #expect(HLCTimestamp(text: stamp.description) == stamp) }
        #expect(stamps.map(\.description).sorted() == stamps.sorted().map(\.description))
        #expect(HLCTimestamp(text: "garbage") == nil)
        #expect(HLCTimestamp(text: "0000000000000001-0000000g-x") == nil)
        #expect(HLCTimestamp(text: "0000000000000001-00000000-") == nil)
        #expect(HLCTimestamp(text: "0000000000000001-00000000-a b") == nil)
    }

    @Test func versionVectorOrder() {
        let a = VersionVector(["x": 1])
        let b = VersionVector(["x": 2])
        let c = VersionVector(["y": 1])
        #expect(a.compare(to: b) == .before)
        #expect(b.compare(to: a) == .after)
        #expect(a.compare(to: c) == .concurrent)
        #expect(a.compare(to: a) == .equal)
        #expect(a.merged(with: c) == VersionVector(["x": 1, "y": 1]))
    }
}
