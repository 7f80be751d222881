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
