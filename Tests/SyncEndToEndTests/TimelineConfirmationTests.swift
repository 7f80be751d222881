import BrsyncServer
import Foundation
import HTTP
import Net
import Replica
import SyncClient
import SyncCore
import TestSupport
import Testing

/// A read-only credential never moves an encrypted account's timeline (so no
/// key holder re-syncs for it), and a real rollback is still found: the key
/// holder whose cursor is past the account confirms it, signed, with one
/// request more, and everything it holds goes up again.
@Suite(.serialized) struct TimelineConfirmationTests {
    @Test(arguments: StoreKind.allCases) func aCredentialWithoutTheKeyNeverMovesTheTimeline(_ kind: StoreKind) throws {
        let world = try SyncWorld(kind)
        let (a, b) = (try world.machine("a"), try world.machine("b"))
        try KeyChangeTests.rule(a, "kept.example")
        try world.sync(a)
        _ = try KeyChangeTests.changeKey(world, a)
        try world.sync(a)
        let before = try #require(try a.replica.syncState().epoch)
        let secret = try world.store.joinSecret("alice", "phone")
        let http = HTTPClient(
            .init(
                address: SocketAddress(host: "127.0.0.1", port: world.port), serverName: "localhost",
                tls: try TLSContext.client(caFile: world.caFile)))
        for token in [b.token, secret] {
            for cursor in 0..<20 {
                let answer = try http.send(
                    method: "GET", target: "/v1/pull?since=\(999_999_000 + cursor)",
                    headers: ["Authorization": "Bearer \(token)", Wire.protocolHeader: String(Wire.protocolVersion)])
                #expect(
                    answer.status == 409
                        && String(decoding: answer.body, as: UTF8.self).contains(
                            WireError.Code.rollbackUnconfirmed.rawValue)
                )
            }
        }
        // The key holder's next sync: one request, nothing new, the same timeline.
        let summary = try world.sync(a)
        #expect(
            summary.pulled == 0 && !summary.fullResync && summary.relayed == 0 && summary.requests == 1, "\(summary)")
        #expect(try a.replica.syncState().epoch == before)
    }

    @Test(arguments: StoreKind.allCases) func aRollbackIsConfirmedByAKeyHolderAndHealed(_ kind: StoreKind) throws {
        let world = try SyncWorld(kind)
        let (a, b) = (try world.machine("a"), try world.machine("b"))
        try KeyChangeTests.rule(a, "a.example")
        try world.sync(a)
        let key = try KeyChangeTests.shareNewKey(world, from: a, with: [b])
        try KeyChangeTests.rule(b, "b.example")
        try world.sync(b)
        try world.sync(a)
        // The server lost records a has pulled (a copy put back in place):
        // a's cursor is past the account's latest record on the same timeline.
        let state = try a.replica.syncState()
        let before = try #require(state.epoch)
        _ = try a.replica.applyPulled([], cursor: state.pullCursor + 1_000, epoch: before)
        let healed = try world.sync(a)
        #expect(healed.fullResync, "\(healed)")
        let after = try #require(try a.replica.syncState().epoch)
        #expect(after != before)
        // Everything a holds went up again; b follows the new timeline without being asked to confirm anything.
        let next = try world.sync(b)
        #expect(next.fullResync, "\(next)")
        #expect(try SyncWorld.rules(b.replica).keys.sorted() == ["a.example", "b.example"])
        #expect(try KeyChangeTests.freshRules(world, key: key) == ["a.example", "b.example"])
    }
}

/// A home pointed at another account's token (a mistake, or a move) brings
/// the cursor of the account it synced with: the account it now reaches
/// keeps its timeline, so its other machines do not re-sync.
extension TimelineConfirmationTests {
    /// `ownTimeline`: bob's account started a timeline of its own first (a
    /// rollback): the two accounts' epochs differ, and the home takes
    /// alice's with her account (its records go up once, not twice).
    @Test(arguments: StoreKind.allCases, [false, true])
    func aHomeOfAnotherAccountRestartsNothingThere(_ kind: StoreKind, ownTimeline: Bool) throws {
        let world = try SyncWorld(kind)
        let (a, a2) = (try world.machine("a"), try world.machine("a2"))
        try KeyChangeTests.rule(a, "alice.example")
        try world.sync(a)
        try world.sync(a2)
        try world.store.addAccount("bob")
        let y = try world.machine("y", account: "bob")
        for index in 1...12 { try KeyChangeTests.rule(y, "bob\(index).example") }
        try world.sync(y)
        if ownTimeline {
            let http = HTTPClient(
                .init(
                    address: SocketAddress(host: "127.0.0.1", port: world.port), serverName: "localhost",
                    tls: try TLSContext.client(caFile: world.caFile)))
            let beyond = try http.send(
                method: "GET", target: "/v1/pull?since=999999999",
                headers: ["Authorization": "Bearer \(y.token)", Wire.protocolHeader: String(Wire.protocolVersion)])
            #expect(beyond.status == 200)
            try world.sync(y)
        }
        let (aliceEpoch, bobState) = (try #require(try a2.replica.syncState().epoch), try y.replica.syncState())
        // Without a timeline of its own each account has the store's epoch; y's cursor is past alice's records.
        let aliceCursor = try a2.replica.syncState().pullCursor
        #expect((bobState.epoch == aliceEpoch) == !ownTimeline && bobState.pullCursor > aliceCursor)
        let held = try RecordCollection.allCases.map { try y.replica.records($0).count }.reduce(0, +)
        y.token = try world.store.addDevice(account: "alice", name: "y")
        let moved = try world.sync(y)
        #expect(moved.accountChanged && moved.relayed == held, "held \(held): \(moved)")
        #expect(try SyncWorld.rules(y.replica).keys.contains("alice.example"))
        #expect(try y.replica.syncState().epoch == aliceEpoch)
        // Alice's machine: her timeline as it was, only what y brought.
        let summary = try world.sync(a2)
        #expect(!summary.fullResync && summary.relayed == 0 && summary.pushed == 0, "\(summary)")
        #expect(try a2.replica.syncState().epoch == aliceEpoch)
        #expect(try SyncWorld.rules(a2.replica).count == 13)
        // Asked where it stands before that sync, a home of another account says so.
        y.token = try world.store.addDevice(account: "bob", name: "y-again")
        #expect(try world.client(y).ownChainStanding() == .otherAccount)
    }

    /// A home of alice's account with six rules (one another machine of
    /// hers wrote), pointed at bob's, whose
    /// limit of two records stops the switch: its relay is left pending.
    /// Returns the home and how many records it holds.
    func switchStoppedByAQuota(_ world: SyncWorld) throws -> (SimulatedMachine, held: Int) {
        let a = try world.machine("a")
        for index in 0..<5 { try KeyChangeTests.rule(a, "site\(index).example") }
        // A rule of another of alice's machines: a is heard from it.
        let w = try world.machine("w")
        try KeyChangeTests.rule(w, "site5.example")
        try world.sync(w)
        try world.sync(a)
        #expect(try a.replica.deviceWrites().map(\.device) == [w.replica.deviceID])
        let held = try RecordCollection.allCases.map { try a.replica.records($0).count }.reduce(0, +)
        try world.store.addAccount("bob")
        try world.store.setLimits(account: "bob", records: 2, bytes: nil, devices: nil)
        // A problem alice's server left: of another account once the machine moved.
        try a.replica.recordSyncProblem("alice's", code: "busy", in: .pull)
        a.token = try world.store.addDevice(account: "bob", name: "a")
        #expect(throws: SyncError.self) { try world.sync(a) }
        #expect(try a.replica.encryptionState().relayPending)
        let kept = try a.replica.syncState().problems
        #expect(kept.count == 1 && kept.allSatisfy { $0.code == "quota_exceeded" }, "\(kept)")
        #expect(try a.replica.deviceWrites().isEmpty, "alice's machines are not heard from in bob's account")
        return (a, held)
    }

    /// Pointed at a third account before a stopped switch finishes, the home
    /// relays what it holds there once: the relay's answer names the account
    /// it reached, taken in as a pull's would be, so the pull after it is no
    /// second switch.
    @Test func aSwitchLeftPendingThenPointedElsewhereRelaysOnce() throws {
        let world = try SyncWorld()
        let (a, held) = try switchStoppedByAQuota(world)
        try world.store.addAccount("carol")
        a.token = try world.store.addDevice(account: "carol", name: "a")
        let moved = try world.sync(a)
        #expect(moved.accountChanged && moved.relayed == held, "held \(held): \(moved)")
        #expect(try !a.replica.encryptionState().relayPending)
        #expect(try world.sync(a).relayed == 0)
        let c = try world.machine("c", account: "carol")
        try world.sync(c)
        #expect(try SyncWorld.rules(c.replica).count == 6)
    }

    /// A stopped switch finished by a later sync, once the limit is raised,
    /// says it joined that account.
    @Test func aSwitchFinishedLaterSaysItJoined() throws {
        let world = try SyncWorld()
        let (a, held) = try switchStoppedByAQuota(world)
        try world.store.setLimits(account: "bob", records: 100, bytes: nil, devices: nil)
        let finished = try world.sync(a)
        #expect(finished.accountChanged && finished.relayed == held, "held \(held): \(finished)")
        #expect(try !world.sync(a).accountChanged)
    }

    /// A home without a key pointed at an encrypted account's token sends
    /// nothing there, readable or compressed: it stops for the key at once.
    @Test func aHomeWithoutAKeySendsNothingToAnEncryptedAccount() throws {
        let world = try SyncWorld()
        let a = try world.machine("a")
        try KeyChangeTests.rule(a, "alice.example")
        try world.sync(a)
        try world.store.addAccount("bob")
        let (y, y2) = (try world.machine("y", account: "bob"), try world.machine("y2", account: "bob"))
        try KeyChangeTests.rule(y, "bob.example")
        try world.sync(y)
        _ = try KeyChangeTests.shareNewKey(world, from: y, with: [y2])
        try world.sync(y2)
        try KeyChangeTests.rule(a, "unpushed.example")
        a.token = try world.store.addDevice(account: "bob", name: "a")
        for _ in 0..<2 {
            do {
                try world.sync(a)
                Issue.record("a home without the key synced with an encrypted account")
            } catch let error as SyncError {
                // Told by the server (a request naming no key) or by the page: the key is what it needs.
                switch error {
                case .stopped(let code, let message), .refused(let code, let message):
                    #expect(code == .noAccountKey && message.contains("brsync key add"), "\(message)")
                default: Issue.record("\(error)")
                }
            }
        }
        // Bob's machines find nothing new: nothing of alice's went up.
        let summary = try world.sync(y2)
        #expect(summary.pulled == 0 && !summary.fullResync, "\(summary)")
        #expect(try SyncWorld.rules(y2.replica).keys.sorted() == ["bob.example"])
        // The mark names the account it saw encrypted: pointed back at
        // alice's (readable) account, the home still sends nothing, and says
        // it is another account, not an operator's reset.
        let bob = try #require(try a.replica.encryptionState().sawEncryptedAccount)
        #expect(try y.replica.syncState().account == bob)
        a.token = try world.store.addDevice(account: "alice", name: "a-again")
        do {
            try world.sync(a)
            Issue.record("a home that saw an account encrypted synced readable")
        } catch SyncError.stopped(let code, let message) {
            #expect(code == .noAccountKey, "\(message)")
            #expect(message.contains("another account") && message.contains("(\(bob))"), "\(message)")
        }
        #expect(try a.replica.encryptionState().sawEncryptedAccount == bob)
    }
}
