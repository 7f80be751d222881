import JSON
import SyncCore
import Testing

@testable import Replica

/// Records found by their tag (``Replica/tagRecords(keyID:tag:)``), the way
/// a device's ledger names them.
struct RecordTagTests {
    /// A stand-in for the account key's HMAC: the tag must depend on the key
    /// id, the collection and the key, as the real one does.
    static func tag(_ keyID: String) -> (RecordCollection, String) -> UInt64 {
        { collection, key in
            var hash: UInt64 = 0xcbf2_9ce4_8422_2325
            for byte in (keyID + "\0" + collection.rawValue + "\0" + key).utf8 {
                hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3
            }
            return hash
        }
    }

    @Test func recordsAreFoundByTagUnderTheKeyTheyWereTaggedWith() throws {
        let fixture = try ReplicaFixture()
        let replica = fixture.replica
        try fixture.usable("firefox")
        try replica.addRule(pattern: "github.com", browser: "firefox", priority: nil)
        try replica.addRule(pattern: "zoom.us", browser: "firefox", priority: nil)
        let first = Self.tag("0123456789abcdef")
        #expect(try replica.tagsKeyID() == nil)
        // Browsers and settings are records too.
        let tagged = try replica.tagRecords(keyID: "0123456789abcdef", tag: first)
        #expect(tagged >= 3)
        #expect(try replica.tagRecords(keyID: "0123456789abcdef", tag: first) == 0, "tags are made once")
        let github = try replica.records(tagged: first(.rules, "github.com"))
        #expect(github.map(\.collection) == [.rules] && github.map(\.key) == ["github.com"])
        #expect(try replica.records(tagged: first(.rules, "gitlab.com")).isEmpty)

        // A new record is tagged at the next call, and only it.
        try replica.addRule(pattern: "gitlab.com", browser: "firefox", priority: nil)
        #expect(try replica.tagRecords(keyID: "0123456789abcdef", tag: first) == 1)
        #expect(try replica.records(tagged: first(.rules, "gitlab.com")).map(\.key) == ["gitlab.com"])

        // The newest record removed (set aside): its row id may be used
        // again by the next new record, which is tagged all the same.
        let removedID = try #require(
            try replica.database.scalar("SELECT id FROM records WHERE collection = 'rules' AND key = 'gitlab.com'")?
                .int64Value)
        try replica.transaction {
            try replica.database.run("DELETE FROM records WHERE collection = 'rules' AND key = 'gitlab.com'")
            try replica.noteRecordsRemoved()
        }
        try replica.addRule(pattern: "codeberg.org", browser: "firefox", priority: nil)
        #expect(
            try replica.database.scalar("SELECT id FROM records WHERE collection = 'rules' AND key = 'codeberg.org'")?
                .int64Value == removedID, "the row id is used again")
        #expect(try replica.tagRecords(keyID: "0123456789abcdef", tag: first) == 1)
        #expect(try replica.records(tagged: first(.rules, "codeberg.org")).map(\.key) == ["codeberg.org"])

        // A deleted rule is still a record (its tombstone): still found.
        _ = try replica.removeRule(pattern: "zoom.us")
        #expect(try replica.records(tagged: first(.rules, "zoom.us")).map(\.key) == ["zoom.us"])

        // Another key: every tag made again, the old ones name nothing.
        let second = Self.tag("fedcba9876543210")
        #expect(try replica.tagRecords(keyID: "fedcba9876543210", tag: second) == tagged + 1)
        #expect(try replica.tagsKeyID() == "fedcba9876543210")
        #expect(try replica.records(tagged: first(.rules, "github.com")).isEmpty)
        #expect(try replica.records(tagged: second(.rules, "github.com")).map(\.key) == ["github.com"])
    }

    /// Registers read by tag for a few tags are the ones the full read
    /// gives for them, and nothing else.
    @Test func registersOfSomeTagsAreTheFullReadsOfThem() throws {
        let fixture = try ReplicaFixture()
        let replica = fixture.replica
        try fixture.usable("firefox")
        for pattern in ["github.com", "zoom.us", "gitlab.com"] {
            try replica.addRule(pattern: pattern, browser: "firefox", priority: nil)
        }
        _ = try replica.removeRule(pattern: "zoom.us")
        let tag = Self.tag("0123456789abcdef")
        let all = try replica.tagAndReadRegisters(keyID: "0123456789abcdef", tag: tag)
        let some: Set<UInt64> = [tag(.rules, "github.com"), tag(.rules, "zoom.us"), tag(.rules, "absent.example")]
        let read = try replica.registers(tagged: some)
        #expect(Set(read.keys) == [tag(.rules, "github.com"), tag(.rules, "zoom.us")])
        #expect(read == all.filter { some.contains($0.key) })
        #expect(read[tag(.rules, "zoom.us")]?["deleted"] != nil, "a tombstone's registers")
        #expect(try replica.registers(tagged: []).isEmpty)
    }

    /// A check that holds the stamps of some records reads the others from
    /// the file, one by one when they are few and in one pass when they are
    /// many; either way it gives what a read of them all gives.
    @Test(arguments: [(before: 40, during: 600), (before: 600, during: 40)])
    func keptAndReadStampsTogetherAreTheFullRead(before: Int, during: Int) throws {
        let fixture = try ReplicaFixture()
        let replica = fixture.replica
        try fixture.usable("firefox")
        for index in 0..<before {
            try replica.addRule(pattern: "before\(index).example", browser: "firefox", priority: nil)
        }
        let tag = Self.tag("0123456789abcdef")
        try replica.keepStoredStamps(keyID: "0123456789abcdef")
        defer { replica.dropStoredStamps() }
        for index in 0..<during {
            try replica.addRule(pattern: "during\(index).example", browser: "firefox", priority: nil)
        }
        let mixed = try replica.tagAndReadRegisters(keyID: "0123456789abcdef", tag: tag)
        replica.dropStoredStamps()
        let read = try replica.tagAndReadRegisters(keyID: "0123456789abcdef", tag: tag)
        #expect(mixed.count >= before + during)
        #expect(mixed == read)
    }

    /// Registers of records this object stored while it kept their stamps
    /// come from memory (a pull's ledger check reads nothing back), and
    /// equal what is stored; once another connection wrote the file, or a
    /// transaction that stored rolled back, the stored ones are read instead.
    @Test func keptStampsAreWhatIsStoredUntilAnotherWriterOrARollback() throws {
        let fixture = try ReplicaFixture()
        let replica = fixture.replica
        try fixture.usable("firefox")
        try replica.addRule(pattern: "before.example", browser: "firefox", priority: nil)
        let tag = Self.tag("0123456789abcdef")
        try replica.keepStoredStamps(keyID: "0123456789abcdef")
        defer { replica.dropStoredStamps() }
        for pattern in ["github.com", "zoom.us"] {
            try replica.addRule(pattern: pattern, browser: "firefox", priority: nil)
        }
        _ = try replica.removeRule(pattern: "zoom.us")
        let kept = try replica.tagAndReadRegisters(keyID: "0123456789abcdef", tag: tag)
        replica.dropStoredStamps()
        let read = try replica.tagAndReadRegisters(keyID: "0123456789abcdef", tag: tag)
        #expect(kept == read && kept.count >= 4, "kept stamps are the stored ones")
        #expect(kept[tag(.rules, "zoom.us")]?["deleted"] != nil, "a tombstone's registers")

        // A row changed behind the store function (the test's own hand) is
        // not seen while the stamps are kept: they are what is used.
        let github = tag(.rules, "github.com")
        func forgeGitHubStamps() throws {
            try replica.database.run(
                """
                UPDATE records SET fields = '{"pattern":{"v":"github.com","s":"00000000000000ff-00000000-forged"}}'
                WHERE collection = 'rules' AND key = 'github.com'
                """)
        }
        try replica.keepStoredStamps(keyID: "0123456789abcdef")
        try replica.addRule(pattern: "github.com", browser: "firefox", priority: 3)
        let stored = try replica.tagAndReadRegisters(keyID: "0123456789abcdef", tag: tag)[github]
        try forgeGitHubStamps()
        #expect(try replica.tagAndReadRegisters(keyID: "0123456789abcdef", tag: tag)[github] == stored)

        // Another connection's commit: the file is read.
        let other = try Replica.open(home: fixture.home)
        try other.addRule(pattern: "other.example", browser: "firefox", priority: nil)
        #expect(
            try replica.tagAndReadRegisters(keyID: "0123456789abcdef", tag: tag)[github]?["pattern"]?.device == "forged"
        )

        // A transaction that stored and rolled back: the file is read.
        try replica.keepStoredStamps(keyID: "0123456789abcdef")
        try replica.addRule(pattern: "github.com", browser: "firefox", priority: 4)
        try forgeGitHubStamps()
        struct Stop: Error {}
        #expect(throws: Stop.self) {
            try replica.transaction {
                try replica.addRule(pattern: "github.com", browser: "firefox", priority: 5)
                throw Stop()
            }
        }
        #expect(
            try replica.tagAndReadRegisters(keyID: "0123456789abcdef", tag: tag)[github]?["pattern"]?.device == "forged"
        )
    }

    /// Many records are tagged in one pass: every one, each found by its tag.
    @Test func manyRecordsAreTaggedEveryOne() throws {
        let fixture = try ReplicaFixture()
        let replica = fixture.replica
        let stamp = HLCTimestamp(wallMillis: 1_700_000_000_500, counter: 0, device: "laptop")
        let count = 600
        let changes = (0..<count).map { index in
            ChangeRecord(
                sequence: Int64(index + 1), collection: .settings, key: "setting-\(index)",
                state: RecordState(
                    fields: ["value": StampedValue(.string("on"), stamp: stamp)], versions: VersionVector(["laptop": 1])
                ))
        }
        var skipped: [String] = []
        try replica.applyPulled(changes, cursor: Int64(count), epoch: "e", skipped: &skipped)
        let tag = Self.tag("0123456789abcdef")
        let read = try replica.tagAndReadRegisters(keyID: "0123456789abcdef", tag: tag)
        #expect(read.count == count)
        #expect(try replica.tagRecords(keyID: "0123456789abcdef", tag: tag) == 0, "every one tagged")
        #expect(try replica.database.scalar("SELECT COUNT(*) FROM record_tags")?.intValue == count)
        for index in [0, 255, 256, count - 1] {
            #expect(try replica.records(tagged: tag(.settings, "setting-\(index)")).map(\.key) == ["setting-\(index)"])
        }
    }

    /// Two keys that Swift's strings take as equal (canonically equivalent)
    /// are two records in the file: the stamps kept for one never stand
    /// for the other's.
    @Test func keptStampsOfOneKeyNeverStandForAnEquivalentOne() throws {
        let fixture = try ReplicaFixture()
        let replica = fixture.replica
        let composed = "caf\u{E9}"
        let decomposed = "cafe\u{301}"
        #expect(composed == decomposed && Array(composed.utf8) != Array(decomposed.utf8))
        func pulled(_ key: String, wall: Int64) -> ChangeRecord {
            let stamp = HLCTimestamp(wallMillis: wall, counter: 0, device: "laptop")
            return ChangeRecord(
                sequence: 1, collection: .settings, key: key,
                state: RecordState(
                    fields: ["value": StampedValue(.string("on"), stamp: stamp)], versions: VersionVector(["laptop": 1])
                ))
        }
        var skipped: [String] = []
        try replica.applyPulled([pulled(composed, wall: 1_700_000_000_500)], cursor: 1, epoch: "e", skipped: &skipped)
        try replica.keepStoredStamps(keyID: "0123456789abcdef")
        defer { replica.dropStoredStamps() }
        try replica.applyPulled([pulled(decomposed, wall: 1_700_000_009_000)], cursor: 2, epoch: "e", skipped: &skipped)
        let tag = Self.tag("0123456789abcdef")
        let read = try replica.tagAndReadRegisters(keyID: "0123456789abcdef", tag: tag)
        #expect(read[tag(.settings, composed)]?["value"]?.wallMillis == 1_700_000_000_500, "its own, from the file")
        #expect(read[tag(.settings, decomposed)]?["value"]?.wallMillis == 1_700_000_009_000)
    }

    /// A pulled record's tag comes from the key the server files it under
    /// (the cipher checked it) when it was opened under the key the tags
    /// are made with; under another key, or stored by another way, it is made again.
    @Test func aPulledRecordsTagComesFromItsFiledKeyUnderTheSameKeyOnly() throws {
        let fixture = try ReplicaFixture()
        let replica = fixture.replica
        let tag = Self.tag("0123456789abcdef")
        let stamp = HLCTimestamp(wallMillis: 1_700_000_000_500, counter: 0, device: "laptop")
        func pulled(_ key: String) -> ChangeRecord {
            var change = ChangeRecord(
                sequence: 1, collection: .settings, key: key,
                state: RecordState(
                    fields: ["value": StampedValue(.string("on"), stamp: stamp)], versions: VersionVector(["laptop": 1])
                ))
            change.filedKey = "h1.filed-\(key)"
            return change
        }
        let fromFiledKey: (String) -> UInt64? = { $0 == "h1.filed-one" ? 42 : nil }
        var skipped: [String] = []
        try replica.keepStoredStamps(keyID: "0123456789abcdef")
        try replica.applyPulled([pulled("one"), pulled("two")], cursor: 2, epoch: "e", skipped: &skipped)
        let read = try replica.tagAndReadRegisters(keyID: "0123456789abcdef", tag: tag, tagOfFiledKey: fromFiledKey)
        #expect(read[42]?["value"] == stamp && read[tag(.settings, "one")] == nil, "the filed key's tag")
        #expect(read[tag(.settings, "two")]?["value"] == stamp, "no tag in its filed key: made")
        #expect(try replica.records(tagged: 42).map(\.key) == ["one"])

        // Opened under another key than the tags': every tag made.
        try replica.keepStoredStamps(keyID: "fedcba9876543210")
        try replica.applyPulled([pulled("three")], cursor: 3, epoch: "e", skipped: &skipped)
        let other = try replica.tagAndReadRegisters(
            keyID: "0123456789abcdef", tag: tag, tagOfFiledKey: { _ in 7 })
        #expect(other[7] == nil && other[tag(.settings, "three")]?["value"] == stamp)
        replica.dropStoredStamps()
    }

    /// What a passing check read is kept by device, and the next check is
    /// whole until one ran, once records are set aside, a day after the
    /// last whole one, or with the clock set back past it.
    @Test func whatAPassingCheckReadIsKeptAndWhenTheNextIsWhole() throws {
        let fixture = try ReplicaFixture()
        let replica = fixture.replica
        let now: Int64 = 1_800_000_000_000
        #expect(try replica.ledgerCheckMustBeWhole(now: now), "none ran yet")
        let read = Replica.LedgerChecked(head: 42, shards: [0: 0xfedc_ba98_7654_3210, 7: 1])
        try replica.noteLedgerChecks(
            ["0123456789abcdef": nil, "fedcba9876543210": "its write is missing here"],
            checked: ["0123456789abcdef": read], whole: true, now: now)
        #expect(try replica.ledgerChecked() == ["0123456789abcdef": read])
        // A row that does not read (a damaged file) is left out: that device is checked whole.
        for damaged in ["0=", "x=12ab", "0=not-a-digest", "7", "0=1ffffffffffffffff"] {
            try replica.database.run(
                "INSERT OR REPLACE INTO ledger_checked (device, head, shards) VALUES ('damaged', 1, ?)",
                [.text(damaged)])
            #expect(try replica.ledgerChecked() == ["0123456789abcdef": read], "\(damaged)")
        }
        try replica.database.run("DELETE FROM ledger_checked WHERE device = 'damaged'")
        #expect(try !replica.ledgerCheckMustBeWhole(now: now + 1))
        #expect(try replica.ledgerCheckMustBeWhole(now: now + Replica.ledgerWholeCheckEveryMillis))
        #expect(try replica.ledgerCheckMustBeWhole(now: now - 1), "a clock set back")
        // A check that read only part does not move the last whole one.
        try replica.noteLedgerChecks(["0123456789abcdef": nil], checked: [:], whole: false, now: now + 10)
        #expect(try replica.ledgerChecked().isEmpty, "a device not passing now is checked whole next")
        #expect(try replica.ledgerCheckMustBeWhole(now: now + Replica.ledgerWholeCheckEveryMillis))
        // Records set aside: whole at the next check.
        try replica.transaction { try replica.noteRecordsRemoved() }
        #expect(try replica.ledgerCheckMustBeWhole(now: now + 1))
        try replica.noteLedgerChecks([:], checked: [:], whole: true, now: now + 2)
        #expect(try !replica.ledgerCheckMustBeWhole(now: now + 3))
    }
}

/// Devices' ledgers pulled into the replica: kept like records, never
/// listed, logged or counted, and a malformed one set aside with why.
struct PulledLedgerTests {
    static func ledger(
        _ key: String, _ fields: [String: JSONValue], wall: Int64 = 1_700_000_000_500
    )
        -> ChangeRecord
    {
        let stamp = HLCTimestamp(wallMillis: wall, counter: 0, device: "laptop")
        return ChangeRecord(
            sequence: 1, collection: .ledger, key: key,
            state: RecordState(
                fields: fields.mapValues { StampedValue($0, stamp: stamp) }, versions: VersionVector(["laptop": 1])))
    }

    @Test func ledgerRecordsAreKeptAndNothingElse() throws {
        let fixture = try ReplicaFixture()
        let replica = fixture.replica
        var skipped: [String] = []
        let page = try replica.applyPulled(
            [
                Self.ledger("laptop/head", ["ledger": .string("SAEAAA")]),
                Self.ledger("laptop/2", ["ledger": .string("UAEA"), "deleted": .bool(true)]),
                Self.ledger("laptop/pending/3", ["ledger": .string("UAEAAAA")]),
                Self.ledger("laptop/9999", ["ledger": .string("UAEAAAA")]),
                Self.ledger("laptop/0", ["ledger": .string("not base64!")]),
                Self.ledger("laptop/1", ["ledger": .string("UAEA"), "note": .string("x")]),
            ], cursor: 5, epoch: "e", skipped: &skipped)
        #expect(page.changed == 0 && page.conflicts == 0, "a ledger is no one's rule")
        #expect(try replica.records(.ledger).map(\.key).sorted() == ["laptop/head", "laptop/pending/3"])
        #expect(try replica.deviceWrites().isEmpty, "a ledger's own stamps are not the device's writes")
        #expect(
            skipped.sorted() == [
                "ledger 'laptop/0': its ledger is not packed bytes",
                "ledger 'laptop/1': a ledger record holds a field \"note\"",
                "ledger 'laptop/2': a ledger record is never deleted",
                "ledger 'laptop/9999': not a ledger record's key",
            ], "\(skipped)")
        #expect(try replica.pulledAsideCount() == 4)
        #expect(try replica.rules().isEmpty)
    }
}

/// This device's own ledger not taken by the server: counted sync by sync,
/// a warning from the third over 15 minutes, cleared by a sync it took.
struct OwnLedgerNotTakenTests {
    @Test func aWarningComesAtTheThirdSyncOverFifteenMinutesAndClears() throws {
        let fixture = try ReplicaFixture()
        let replica = fixture.replica
        let now: Int64 = 1_800_000_000_000
        #expect(try replica.ownLedgerNotTaken(now: now) == nil)
        let minute: Int64 = 60_000
        #expect(try !replica.noteOwnLedgerNotTaken("refused", now: now).warns)
        #expect(try !replica.noteOwnLedgerNotTaken("refused", now: now + minute).warns)
        let third = try replica.noteOwnLedgerNotTaken("refused again", now: now + 2 * minute)
        #expect(third.syncs == 3 && third.firstAtMillis == now && !third.warns, "three syncs, not yet 15 minutes")
        let fourth = try replica.noteOwnLedgerNotTaken("refused again", now: now + 15 * minute)
        #expect(fourth.syncs == 4 && fourth.warns && fourth.why == "refused again")
        #expect(try replica.ownLedgerNotTaken(now: now + 15 * minute) == fourth)
        // A clock set back past the first: the wait starts again.
        let back = try replica.noteOwnLedgerNotTaken("refused", now: now - minute)
        #expect(back.syncs == 1 && back.firstAtMillis == now - minute && !back.warns)
        try replica.noteOwnLedgerTaken()
        #expect(try replica.ownLedgerNotTaken(now: now) == nil)
    }
}

/// Ledger stamps once the server refused one for its clock: held back, and
/// never issued twice.
struct LedgerStampTests {
    @Test func stampsHeldBackAreNeverIssuedTwice() throws {
        let fixture = try ReplicaFixture()
        let replica = fixture.replica
        let ceiling = replica.currentMillis - 86_400_000
        let first = try replica.ledgerStamp(ceiling: ceiling)
        let second = try replica.ledgerStamp(ceiling: ceiling)
        #expect(first.wallMillis == ceiling && second.wallMillis == ceiling && second.counter > first.counter)
        // Without a ceiling: the clock's tick, above both.
        let free = try replica.ledgerStamp(ceiling: nil)
        #expect(free > second)
        // A ceiling that moved (the server's clock read again): its own stamps.
        let lower = ceiling - 3_600_000
        let third = try replica.ledgerStamp(ceiling: lower)
        let fourth = try replica.ledgerStamp(ceiling: lower)
        #expect(third.wallMillis == lower && fourth > third)
        #expect(try replica.ledgerStamp(ceiling: ceiling) > second, "back at the first ceiling, above what it issued")
    }
}

/// Edits re-stamped because this machine's clock ran fast
/// (``Replica/restampUnpushed()``).
struct RestampTests {
    /// A write pulled since that lost to the fast edit here (its own clock
    /// four minutes fast, within what a server allows): the edit, stamped
    /// again from the server's time, stays above it, as this machine showed
    /// it (below it, the register here moved back under a write another
    /// device's ledger names).
    @Test func aReStampedEditStaysAboveAWritePulledSince() throws {
        let fixture = try ReplicaFixture()
        let replica = fixture.replica
        try fixture.usable("firefox")
        try fixture.usable("chrome")
        let now = replica.currentMillis
        try replica.observeServerTime(now + 3_600_000)
        try replica.addRule(pattern: "github.com", browser: "firefox", priority: nil)
        let fast = try #require(try replica.record(.rules, key: "github.com")?.fields["browser"]?.stamp)
        let pulled = HLCTimestamp(wallMillis: now + 240_000, counter: 0, device: "0123456789abcdef")
        var skipped: [String] = []
        _ = try replica.applyPulled(
            [
                ChangeRecord(
                    sequence: 1, collection: .rules, key: "github.com",
                    state: RecordState(
                        fields: ["browser": StampedValue(.string("chrome"), stamp: pulled)],
                        versions: VersionVector(["0123456789abcdef": 1])))
            ], cursor: 1, epoch: "e1", aside: [], skipped: &skipped)
        #expect(try replica.record(.rules, key: "github.com")?.fields["browser"]?.stamp == fast, "the fast edit won")
        try replica.observeServerTime(now)
        #expect(try replica.restampUnpushed() > 0)
        let restamped = try #require(try replica.record(.rules, key: "github.com")?.fields["browser"])
        #expect(restamped.value == .string("firefox") && restamped.stamp > pulled, "\(restamped.stamp)")
        #expect(restamped.stamp.wallMillis < now + 3_600_000, "no longer an hour ahead")
    }

    /// An edit the server could have taken (an account that starts over
    /// unpushes every change) is never stamped again below what it was, even
    /// when the server's clock now reads earlier: a write made between the
    /// two stamps would otherwise win over it. Made in step, it keeps its
    /// stamp: only the edit made a year ahead is stamped again. `forked`: the replica took a
    /// new id first (a copied home, a key change) while its clock's
    /// high-water mark was a year ahead, so its changes were minted again
    /// from that mark, which the server refuses.
    @Test(arguments: [false, true]) func anEditIsNeverReStampedBelowItsOwnStamp(forked: Bool) throws {
        let fixture = try ReplicaFixture()
        let replica = fixture.replica
        try fixture.usable("firefox")
        let now = replica.currentMillis
        try replica.observeServerTime(now)
        try replica.addRule(pattern: "github.com", browser: "firefox", priority: nil)
        let first = try #require(try replica.record(.rules, key: "github.com")?.fields["browser"]?.stamp)
        try replica.observeServerTime(now + 365 * 86_400_000)
        try replica.addRule(pattern: "zoom.us", browser: "firefox", priority: nil)
        try replica.observeServerTime(now - 60_000)
        let old = replica.deviceID
        if forked { #expect(try replica.forkDeviceID() != old) }
        #expect(try replica.restampUnpushed() > 0)
        let github = try #require(try replica.record(.rules, key: "github.com")?.fields["browser"]?.stamp)
        let zoom = try #require(try replica.record(.rules, key: "zoom.us")?.fields["browser"]?.stamp)
        #expect(github >= first && github.device == replica.deviceID, "\(github) against \(first)")
        // Made in step, before the clock ran ahead: only what came after is stamped again.
        if !forked { #expect(github == first, "\(github) against \(first)") }
        #expect(zoom > github && zoom.wallMillis < now + 86_400_000, "no longer a year ahead: \(zoom)")
    }
}

/// Devices whose ledger this machine no longer checks
/// (``Replica/forgetDevice(_:ledgerHigh:now:)``), and the failures key
/// changes ended (``Replica/ledgerFailuresEnded(now:)``).
struct ForgottenDeviceTests {
    static let device = "0123456789abcdef"

    static func stamp(_ millis: Int64, _ device: String = device) -> HLCTimestamp {
        HLCTimestamp(wallMillis: millis, counter: 0, device: device)
    }

    @Test func aDeviceIsForgottenUntilItWritesAgainAndADamagedRowForgetsNothing() throws {
        let fixture = try ReplicaFixture()
        let replica = fixture.replica
        let high = Self.stamp(1_800_000_000_000)
        #expect(throws: ReplicaError.self, "no failure: nothing to forget") {
            try replica.forgetDevice(Self.device, ledgerHigh: high, now: 5)
        }
        try replica.noteLedgerChecks([Self.device: "its rule is missing here"], now: 1)
        let forgotten = try replica.forgetDevice(Self.device, ledgerHigh: high, now: 5)
        #expect(forgotten.what == "its rule is missing here" && forgotten.writesHigh == nil)
        #expect(try replica.forgottenDevices() == [Self.device: forgotten])
        #expect(try replica.ledgerFailures().isEmpty, "its failure ended")
        #expect(throws: ReplicaError.self) { try replica.forgetDevice(replica.deviceID, ledgerHigh: high, now: 5) }
        // It wrote again: a newer ledger record, or any write when none was held.
        #expect(!forgotten.wroteSince(ledgerHigh: high, writesHigh: nil))
        #expect(forgotten.wroteSince(ledgerHigh: Self.stamp(1_800_000_000_001), writesHigh: nil))
        #expect(forgotten.wroteSince(ledgerHigh: high, writesHigh: Self.stamp(1)))
        var withWrites = forgotten
        withWrites.writesHigh = Self.stamp(10)
        #expect(!withWrites.wroteSince(ledgerHigh: nil, writesHigh: Self.stamp(10)))
        #expect(withWrites.wroteSince(ledgerHigh: nil, writesHigh: Self.stamp(11)))
        try replica.rememberDevice(Self.device)
        #expect(try replica.forgottenDevices().isEmpty)
        // A row that does not read (a damaged file) forgets nothing: that device is checked.
        for damage in ["ledger_high = 'not a stamp'", "writes_high = 'not a stamp'"] {
            try replica.noteLedgerChecks([Self.device: "its rule is missing here"], now: 1)
            try replica.forgetDevice(Self.device, ledgerHigh: high, now: 5)
            try replica.database.run("UPDATE forgotten_devices SET \(damage)")
            #expect(try replica.forgottenDevices().isEmpty, "\(damage)")
        }
    }

    /// Each key change adds the failures it ends to those kept, each shown
    /// 30 days from its own key change (an outside review found a second key
    /// change replaced the first one's).
    @Test func failuresEndedByKeyChangesAreKeptEachForThirtyDays() throws {
        let fixture = try ReplicaFixture()
        let replica = fixture.replica
        try replica.noteLedgerChecks([Self.device: "its deletion of rules 'v.com' is missing here"], now: 1)
        try replica.beginEncryptedSync(keyID: "00112233445566aa")
        try replica.noteLedgerChecks(["fedcba9876543210": "it wrote past what its ledger describes"], now: 2)
        try replica.beginEncryptedSync(keyID: "00112233445566bb")
        let ended = try replica.ledgerFailuresEnded()
        #expect(ended.map(\.failure.device) == [Self.device, "fedcba9876543210"], "\(ended)")
        #expect(ended.first?.failure.what == "its deletion of rules 'v.com' is missing here")
        let later = (ended.map(\.endedAtMillis).max() ?? 0) + Replica.endedFailuresShownMillis
        #expect(try replica.ledgerFailuresEnded(now: later).isEmpty)
        try replica.database.run("UPDATE meta SET value = 'not JSON' WHERE key = 'ledger_failures_ended'")
        #expect(try replica.ledgerFailuresEnded().isEmpty, "what does not read is left out")
    }
}
