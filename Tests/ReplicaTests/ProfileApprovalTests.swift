import Foundation
import JSON
import Model
import Storage
import SyncCore
import TestSupport
import Testing

@testable import Replica

/// A profile's synced arguments run here only when they are ones synced data
/// may choose, or this machine's user approved them, for the exact arguments;
/// a profile made here runs here.
@Suite struct ProfileApprovalTests {
    static let other = "0123456789abcdef"

    /// A profile `id` of `base` with `arguments`, as another machine writes it.
    /// Applies `records` as one pulled page, its cursor the last one's sequence.
    @discardableResult
    static func apply(_ fixture: ReplicaFixture, _ records: [ChangeRecord]) throws -> Replica.AppliedPage {
        var skipped: [String] = []
        return try fixture.replica.applyPulled(
            records, cursor: records.last?.sequence ?? 0, epoch: "e", skipped: &skipped)
    }

    static func pulled(
        _ fixture: ReplicaFixture, _ sequence: Int64, _ id: String, base: String, arguments: [String]
    ) -> ChangeRecord {
        let stamp = HLCTimestamp(wallMillis: fixture.wallMillis + sequence, counter: 0, device: other)
        let fields: [String: JSONValue] = [
            "name": .string(id), "enabled": .bool(true), "deleted": .bool(false),
            "profileOf": .string(base), "profileArgs": .array(arguments.map(JSONValue.string)),
        ]
        return ChangeRecord(
            sequence: sequence, collection: .browsers, key: id,
            state: RecordState(
                fields: fields.mapValues { StampedValue($0, stamp: stamp) },
                versions: VersionVector([other: UInt64(sequence)])))
    }

    static func browser(_ fixture: ReplicaFixture, _ id: String) throws -> LocalBrowser {
        try #require(try fixture.replica.browsers().first { $0.browser.id == id })
    }

    @Test func aPulledProfileRunsOnlyWithArgumentsOnItsListOrApprovedHere() throws {
        let fixture = try ReplicaFixture()
        try fixture.usable("chromium")
        try fixture.usable("firefox")
        _ = try fixture.replica.setDefaultBrowser(named: "firefox")
        let page = [
            Self.pulled(fixture, 1, "work", base: "chromium", arguments: ["--renderer-cmd-prefix=touch /tmp/pwned"]),
            Self.pulled(fixture, 2, "home", base: "chromium", arguments: ["--profile-directory=Home"]),
        ]
        let applied = try Self.apply(fixture, page)
        _ = try fixture.replica.addRule(pattern: "work.example", browser: "work", priority: nil)
        // Kept, named, and never launched with its arguments; the ordinary one runs.
        #expect(applied.changed == 2 && applied.awaitingApproval.map(\.id) == ["work"], "\(applied.awaitingApproval)")
        let work = try Self.browser(fixture, "work")
        #expect(work.exec == nil && work.awaitsApproval && work.profileHeld?.contains("--renderer-cmd-prefix") == true)
        #expect(try Self.browser(fixture, "home").exec == "chromium --profile-directory=Home %u")
        // A link its rule decides opens in the default browser, and explain says why.
        let url = try NormalizedURL("https://work.example/x")
        #expect(try fixture.replica.resolve(url).browser?.browser.id == "firefox")
        let note = try #require(try fixture.replica.heldProfileNote(url))
        #expect(
            note.contains("work.example") && note.contains("wait for your approval")
                && note.contains("brsync browsers approve work"), "\(note)")

        // Approved here, for these arguments: it runs.
        try fixture.replica.approveProfile("work")
        #expect(try Self.browser(fixture, "work").exec == "chromium \"--renderer-cmd-prefix=touch /tmp/pwned\" %u")
        #expect(try fixture.replica.resolve(url).browser?.browser.id == "work")
        #expect(try fixture.replica.heldProfileNote(url) == nil)
        // Other arguments pulled later wait again; so does another base.
        try Self.apply(
            fixture, [Self.pulled(fixture, 3, "work", base: "chromium", arguments: ["--gpu-launcher=/bin/sh"])])
        #expect(try Self.browser(fixture, "work").awaitsApproval)
        try fixture.replica.approveProfile("work")
        try Self.apply(
            fixture, [Self.pulled(fixture, 4, "work", base: "firefox", arguments: ["--gpu-launcher=/bin/sh"])])
        #expect(try Self.browser(fixture, "work").awaitsApproval)
        // Withdrawn: waits again; unknown profiles and plain browsers cannot be approved.
        try fixture.replica.approveProfile("work")
        #expect(!(try Self.browser(fixture, "work").awaitsApproval))
        #expect(try fixture.replica.withdrawApproval("work"))
        #expect(try Self.browser(fixture, "work").awaitsApproval)
        #expect(throws: ReplicaError.self) { try fixture.replica.approveProfile("firefox") }
        #expect(throws: ReplicaError.self) { try fixture.replica.approveProfile("nothing") }
    }

    /// A profile of a profile never runs (profiles of profiles are not
    /// followed): it is said so, not offered for approval.
    @Test func aProfileOfAProfileIsHeldNotOfferedForApproval() throws {
        let fixture = try ReplicaFixture()
        try fixture.usable("chromium")
        let applied = try Self.apply(
            fixture,
            [
                Self.pulled(fixture, 1, "work", base: "chromium", arguments: ["--profile-directory=Work"]),
                Self.pulled(fixture, 2, "chain", base: "work", arguments: ["--gpu-launcher=/bin/sh"]),
            ])
        #expect(applied.awaitingApproval.isEmpty, "\(applied.awaitingApproval)")
        let chain = try Self.browser(fixture, "chain")
        #expect(
            chain.exec == nil && !chain.awaitsApproval && chain.profileHeld?.contains("profiles of profiles") == true)
        try fixture.replica.approveProfile("chain")
        #expect(try Self.browser(fixture, "chain").exec == nil, "approved or not, it does not run")
    }

    /// A profile made here runs here, whatever its arguments; one of a
    /// browser outside the catalog too. Pulled elsewhere, both would wait.
    @Test func aProfileMadeHereRunsHere() throws {
        let fixture = try ReplicaFixture()
        try fixture.replica.addBrowser(
            id: "mybrowser", name: nil, format: nil, scheme: nil, exec: "/opt/mybrowser/run %u")
        try fixture.usable("chromium")
        try fixture.replica.addBrowser(
            id: "odd", name: nil, format: nil, scheme: nil, exec: nil,
            profile: try BrowserProfile(base: "chromium", arguments: ["--enable-features=X"]))
        try fixture.replica.addBrowser(
            id: "mine", name: nil, format: nil, scheme: nil, exec: nil,
            profile: try BrowserProfile(base: "mybrowser", arguments: ["--new-window"]))
        #expect(try Self.browser(fixture, "odd").exec == "chromium --enable-features=X %u")
        #expect(try Self.browser(fixture, "mine").exec == "/opt/mybrowser/run --new-window %u")
    }

    /// A replica made before approvals existed keeps running the profiles it
    /// made itself; one another machine made waits.
    @Test func anUpgradedReplicaKeepsItsOwnProfilesRunning() throws {
        let fixture = try ReplicaFixture()
        try fixture.usable("chromium")
        try fixture.replica.addBrowser(
            id: "mine", name: nil, format: nil, scheme: nil, exec: nil,
            profile: try BrowserProfile(base: "chromium", arguments: ["--enable-features=X"]))
        try Self.apply(
            fixture, [Self.pulled(fixture, 1, "theirs", base: "chromium", arguments: ["--enable-features=Y"])])
        // Back to schema 12: no approvals table.
        let database = try Database(path: fixture.file)
        try database.execute(
            "DROP TABLE profile_approvals; ALTER TABLE removed DROP COLUMN why; DROP INDEX IF EXISTS records_by_precedence; ALTER TABLE records DROP COLUMN precedence; ALTER TABLE records DROP COLUMN rule_pattern; ALTER TABLE records DROP COLUMN rule_browser; ALTER TABLE records DROP COLUMN rule_created; ALTER TABLE records DROP COLUMN rule_rest; ALTER TABLE changes DROP COLUMN refused; DROP TABLE device_writes; DROP TABLE pulled_aside; DROP TABLE record_tags; DROP TABLE ledger_book; DROP TABLE ledger_entries; DROP TABLE ledger_failures; DROP TABLE ledger_checked; DROP TABLE forgotten_devices; DROP TABLE writes_from_elsewhere; DROP TABLE ledger_unmet; ALTER TABLE changes DROP COLUMN sealed_format; DROP TABLE boxes; DROP INDEX changes_by_record; PRAGMA user_version = 12;"
        )
        let reopened = try Replica.open(home: fixture.home)
        #expect(try database.userVersion == ReplicaSchema.migrator.latestVersion)
        let browsers = try reopened.browsers()
        #expect(browsers.first { $0.browser.id == "mine" }?.exec == "chromium --enable-features=X %u")
        #expect(browsers.first { $0.browser.id == "theirs" }?.awaitsApproval == true)
    }
}
