import HTTP
import JSON
import Replica
import SyncCore
import SystemServices
import TestSupport
import Testing

/// An honest server restored from a copy raises no ledger alarm
/// (Deploy/SECURITY.md, "A device's own writes, counted"): whatever a device's
/// writes come back with, what counts them comes back too.
@Suite struct LedgerRestoreTests {
    /// A server restored from a copy older than a device's last head: the
    /// device relays its own ledger records as the server confirmed them,
    /// after the records they count, so a machine that pulls those writes
    /// again holds what counts them (a device that never wrote again would
    /// otherwise leave them uncounted for good).
    @Test(arguments: StoreKind.allCases)
    func aDevicesLedgerComesBackWithItsWritesAfterARestore(_ kind: StoreKind) throws {
        let world = try SyncWorld(kind)
        let (a, b) = (try world.machine("a"), try world.machine("b"))
        try LyingServerTests.rules(a, ["one.example"])
        _ = try KeyChangeTests.shareNewKey(world, from: a, with: [b])
        try world.sync(b)
        let copy = try world.backupServer()
        try LyingServerTests.rules(a, ["two.example"])
        try world.sync(a)
        #expect(
            try a.replica.record(.ledger, key: Ledger.Key.head(device: a.replica.deviceID).description) != nil,
            "a confirmed head is kept where it was written")
        try world.restoreServer(copy)
        try world.sync(a)
        try world.sync(b)
        #expect(try SyncWorld.rules(b.replica).keys.sorted() == ["one.example", "two.example"])
        let failures = try b.replica.ledgerFailures()
        #expect(failures.isEmpty, "\(failures)")
    }

    /// A server that refuses a push for its clock and says its time is two
    /// days back (a lie, or a clock set back): the device's next ledger
    /// records still go above the head the server took (below it, they lose
    /// the merge everywhere and every machine's check of the device fails),
    /// and the other machine counts its new write.
    @Test func aClockRefusalWithAnEarlyTimeKeepsTheLedgerAboveWhatTheServerTook() throws {
        let world = try SyncWorld(.sqlite)
        let (a, b) = (try world.machine("a"), try world.machine("b"))
        try LyingServerTests.rules(a, ["one.example"])
        _ = try KeyChangeTests.shareNewKey(world, from: a, with: [b])
        try world.sync(b)
        // A head confirmed at the end of a sync, after its pull: nothing
        // this machine pulled is as new (the clock refusal below comes first).
        try LyingServerTests.rules(a, ["between.example"])
        try world.sync(a)
        let headKey = Ledger.Key.head(device: a.replica.deviceID).description
        let taken = try #require(try a.replica.record(.ledger, key: headKey)?.fields.values.first?.stamp)
        // Nothing pulled since is as new as the head (its pull brought this
        // machine's own pending records, often in the head's millisecond).
        try a.replica.database.run(
            "UPDATE meta SET value = ? WHERE key = 'pulled_high'", [.text(String(taken.wallMillis - 1_000))])
        let early = String(Clock.wallMillis() - 2 * 86_400_000)
        let refused = LyingServer.Counter()
        let liar = try LyingServer(
            in: world, headers: { $0.set(Wire.timeHeader, early) },
            answering: { request in
                guard request.path == "/v1/push", refused.value.add(1, ordering: .relaxed).oldValue == 0 else {
                    return nil
                }
                return HTTPResponse(
                    status: 422, headers: ["Content-Type": "application/json"],
                    body: Array(
                        #"{"error":"clock_skew","message":"a stamp is 172800 s ahead of the server's clock"}"#.utf8))
            }, rewrite: { _, _, _ in nil })
        defer { liar.stop() }
        try LyingServerTests.rules(a, ["two.example"])
        let lied = try liar.serving(world) { try world.sync(a) }
        #expect(refused.value.load(ordering: .relaxed) > 0)
        #expect(lied.newDeviceID == nil && lied.problems.isEmpty, "\(lied)")
        let head = try #require(try a.replica.record(.ledger, key: headKey)?.fields.values.first?.stamp)
        #expect(head > taken, "the new head went above the one taken: \(head) \(taken)")
        try world.sync(b)
        #expect(try SyncWorld.rules(b.replica).keys.contains("two.example"))
        let failures = try b.replica.ledgerFailures()
        #expect(failures.isEmpty, "\(failures)")
    }

    /// What a server refusing every push for its clock tells of this
    /// device's ledger (``pushesRefusedForTheClockLeaveNoWriteUncounted(_:)``).
    enum ClockRefusal: String, CaseIterable, CustomTestStringConvertible {
        /// Where it stands on the device's chain, as brsyncd's refusals do.
        case standing
        /// Nothing: the device's head, asked, shows the book current.
        case bare
        /// Nothing, and the device's head, asked, is not the book's.
        case headHidden

        var testDescription: String { rawValue }
    }

    /// A server that refuses every push for its clock, two days back: the
    /// repairs re-stamp the unpushed edit and relay what is stamped ahead,
    /// but a relay carries a write of this device the server did not
    /// acknowledge only with pending records of its own (a push's answer
    /// that would fold it never comes), or not at all while the book is not
    /// known to be current: the edit then waits for a push, and goes up with
    /// the next sync. A machine that pulls finds its checks of the device
    /// met. (Relayed bare, the re-stamped edit reached the server under the
    /// device's id counted by no ledger: with the device never pushing again
    /// under that id, every machine's check of it failed for good,
    /// convergence seed 656.)
    @Test(arguments: ClockRefusal.allCases)
    func pushesRefusedForTheClockLeaveNoWriteUncounted(_ refusalKind: ClockRefusal) throws {
        let world = try SyncWorld(.sqlite)
        let (a, b) = (try world.machine("a"), try world.machine("b"))
        try LyingServerTests.rules(a, ["one.example"])
        _ = try KeyChangeTests.shareNewKey(world, from: a, with: [b])
        try world.sync(b)
        try world.sync(a)
        var refusal: [String: JSONValue] = [
            "error": .string("clock_skew"), "message": .string("a stamp is 172800 s ahead of the server's clock"),
        ]
        if refusalKind == .standing {
            let pushed = try a.replica.syncState().pushedThrough
            guard case .known(let chain) = try a.replica.storedChain(pushed) else {
                Issue.record("no chain kept through \(pushed)")
                return
            }
            (refusal["acknowledged"], refusal["digest"]) = (.int(pushed), .string(chain))
        }
        let body = Array(JSONValue.object(refusal).jsonText.utf8)
        let early = String(Clock.wallMillis() - 2 * 86_400_000)
        let refused = LyingServer.Counter()
        let hidesHead = refusalKind == .headHidden
        let liar = try LyingServer(
            in: world, headers: { $0.set(Wire.timeHeader, early) },
            answering: { request in
                guard request.path == "/v1/push" else { return nil }
                refused.value.add(1, ordering: .relaxed)
                return HTTPResponse(status: 422, headers: ["Content-Type": "application/json"], body: body)
            },
            rewrite: { request, _, answer in
                guard hidesHead, request.target.contains("keys=ledger:"), case .object(var page)? = answer else {
                    return nil
                }
                page["changes"] = .array([])
                return .object(page)
            })
        defer { liar.stop() }
        try LyingServerTests.rules(a, ["two.example"])
        #expect(throws: (any Error).self) { try liar.serving(world) { try world.sync(a) } }
        #expect(refused.value.load(ordering: .relaxed) > 1, "the push was refused after a repair too")
        #expect(try a.replica.unpushedCount() > 0, "the edit waits here")
        try world.sync(b)
        #expect(
            try SyncWorld.rules(b.replica).keys.contains("two.example") != hidesHead,
            "relayed with its pending records, or left for the push")
        let failures = try b.replica.ledgerFailures()
        #expect(failures.isEmpty, "\(failures)")
        // Nothing lost: the next sync, the server honest, takes the edit.
        try world.sync(a)
        try world.sync(b)
        #expect(try SyncWorld.rules(b.replica).keys.contains("two.example"))
        let after = try b.replica.ledgerFailures()
        #expect(after.isEmpty, "\(after)")
    }

    /// A pending record its device's head folded is passed over by the
    /// checks, unread: one damaged here (written over with text that is no
    /// ledger, under its own stamp) neither fails the device's check nor
    /// stops it from checking what came after.
    @Test func aPendingRecordItsHeadFoldedIsNotRead() throws {
        let world = try SyncWorld(.sqlite)
        let (a, b) = (try world.machine("a"), try world.machine("b"))
        try LyingServerTests.rules(a, ["one.example"])
        _ = try KeyChangeTests.shareNewKey(world, from: a, with: [b])
        try LyingServerTests.rules(a, ["two.example"])
        try world.sync(a)
        try world.sync(b)
        let device = a.replica.deviceID
        let rows = try b.replica.ledgerRows().filter { $0.key.hasPrefix(device + "/pending/") }
        #expect(!rows.isEmpty, "b holds a's pending records")
        for row in rows {
            let stamp = try #require(row.fields.stamp)
            try b.replica.database.run(
                "UPDATE records SET fields = ? WHERE collection = 'ledger' AND key = ?",
                [.text(#"{"ledger":{"s":"\#(stamp)","v":"!"}}"#), .text(row.key)])
        }
        try LyingServerTests.rules(a, ["three.example"])
        try world.sync(a)
        let pulled = try world.sync(b)
        #expect(pulled.ledgerCheck != nil, "the checks ran")
        let failures = try b.replica.ledgerFailures()
        #expect(failures.isEmpty, "\(failures)")
    }
}
