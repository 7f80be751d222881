import JSON
import Storage
import SyncCore
import SystemServices
import Testing

@testable import Replica

/// A pulled page applied with its rows prepared on another thread
/// (``Replica/PreparedRow``) stores exactly what it stores without them:
/// the same rows, rule columns and received-log entries, whether a record
/// is new here, replaces what was here, loses to it, is a deletion, holds
/// several writes, or is set aside.
@Suite struct PreparedRowTests {
    static let elsewhere = "aaaaaaaaaaaaaaaa"
    static let other = "bbbbbbbbbbbbbbbb"

    static func stamp(_ offset: Int64, _ device: String = elsewhere) -> HLCTimestamp {
        HLCTimestamp(wallMillis: 1_700_000_000_000 + offset, counter: 0, device: device)
    }

    static func rule(
        _ sequence: Int64, _ key: String, browser: String, at stamp: HLCTimestamp, versions: [String: UInt64],
        deleted: Bool = false, browserStamp: HLCTimestamp? = nil
    ) -> ChangeRecord {
        var fields: [String: StampedValue] = [
            "pattern": StampedValue(.string(key), stamp: stamp),
            "browser": StampedValue(.string(browser), stamp: browserStamp ?? stamp),
            "priority": StampedValue(.int(1), stamp: stamp),
            "createdAt": StampedValue(.int(1_700_000_000_000), stamp: stamp),
            "origin": StampedValue(.string(stamp.device), stamp: stamp),
        ]
        if deleted { fields[RecordState.deletedField] = StampedValue(.bool(true), stamp: stamp) }
        return ChangeRecord(
            sequence: sequence, collection: .rules, key: key,
            state: RecordState(fields: fields, versions: VersionVector(versions)))
    }

    /// Everything the pages leave about the records they name.
    static func stored(_ fixture: ReplicaFixture, keys: [String]) throws -> [[String]] {
        let database = try Database(path: fixture.file)
        let names = keys.map { "'\($0)'" }.joined(separator: ", ")
        let records = try database.query(
            """
            SELECT collection, key, fields, versions, deleted, index_key, priority, precedence, rule_pattern,
                rule_browser, rule_created, rule_rest
            FROM records WHERE key IN (\(names)) ORDER BY collection, key
            """
        ) { row in (0..<12).map { "\(row[$0])" } }
        let received = try database.query(
            "SELECT device, collection, key, fields FROM received WHERE key IN (\(names)) ORDER BY id"
        ) { row in
            // An entry's members are in no set order: read as JSON.
            (0..<3).map { "\(row[$0])" } + [try JSONValue.parse(row.string(3) ?? "").jsonText]
        }
        return records + [["--"]] + received
    }

    @Test func aPageAppliedWithPreparedRowsStoresWhatItStoresWithout() throws {
        let first = [
            Self.rule(1, "kept.example", browser: "firefox", at: Self.stamp(10), versions: [Self.elsewhere: 1]),
            Self.rule(2, "newer.example", browser: "firefox", at: Self.stamp(10), versions: [Self.elsewhere: 2]),
        ]
        let second = [
            // New here, one write.
            Self.rule(3, "new.example", browser: "chrome", at: Self.stamp(20), versions: [Self.elsewhere: 3]),
            // New here, two writes (its log entry is stamped field by field).
            Self.rule(
                4, "two.example", browser: "chrome", at: Self.stamp(20), versions: [Self.elsewhere: 4, Self.other: 1],
                browserStamp: Self.stamp(30, Self.other)),
            // Replaces what was here.
            Self.rule(5, "newer.example", browser: "chrome", at: Self.stamp(40), versions: [Self.elsewhere: 5]),
            // Older than what is here: merged, not taken as it came.
            Self.rule(6, "kept.example", browser: "chrome", at: Self.stamp(5, Self.other), versions: [Self.other: 2]),
            // A deletion new here.
            Self.rule(
                7, "gone.example", browser: "chrome", at: Self.stamp(50), versions: [Self.elsewhere: 6], deleted: true),
            // Set aside: a browser that is not a string.
            ChangeRecord(
                sequence: 8, collection: .rules, key: "bad.example",
                state: RecordState(
                    fields: [
                        "pattern": StampedValue(.string("bad.example"), stamp: Self.stamp(60)),
                        "browser": StampedValue(.int(5), stamp: Self.stamp(60)),
                    ], versions: VersionVector([Self.elsewhere: 7]))),
            ChangeRecord(
                sequence: 9, collection: .browsers, key: "chrome",
                state: RecordState(
                    fields: ["name": StampedValue(.string("Chrome"), stamp: Self.stamp(70))],
                    versions: VersionVector([Self.elsewhere: 8]))),
        ]
        let keys = (first + second).map(\.key)
        var results: [[[String]]] = []
        for prepare in [false, true] {
            let fixture = try ReplicaFixture()
            var skipped: [String] = []
            try fixture.replica.applyPulled(first, cursor: 2, epoch: "e", skipped: &skipped)
            let applied = try fixture.replica.applyPulled(
                second, cursor: 9, epoch: "e", prepared: prepare ? second.map(Replica.PreparedRow.init) : nil,
                skipped: &skipped)
            #expect(applied.changed == 5, "\(applied)")
            #expect(skipped.count == 1, "\(skipped)")
            results.append(try Self.stored(fixture, keys: keys))
        }
        #expect(results[0].count > 8, "\(results[0])")
        #expect(results[0] == results[1])
    }

    /// Rows prepared for another page (a count that does not match) are not used.
    @Test func rowsPreparedForAnotherPageAreLeftOut() throws {
        let page = [Self.rule(1, "one.example", browser: "firefox", at: Self.stamp(10), versions: [Self.elsewhere: 1])]
        let other = [Self.rule(1, "one.example", browser: "chrome", at: Self.stamp(10), versions: [Self.elsewhere: 1])]
        let fixture = try ReplicaFixture()
        var skipped: [String] = []
        try fixture.replica.applyPulled(
            page, cursor: 1, epoch: "e", prepared: (other + other).map(Replica.PreparedRow.init), skipped: &skipped)
        #expect(try fixture.replica.rules().map(\.browser) == ["firefox"])
    }
}
