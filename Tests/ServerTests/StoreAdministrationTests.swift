import Foundation
import Net
import SyncCore
import TestSupport
import Testing

@testable import BrsyncServer

/// Accounts, devices and tokens through the store core: the same answers and
/// messages on every store (the core decides; each dialect only runs SQL).
@Suite struct StoreAdministrationTests {
    static func message(_ body: () throws -> Void) -> String? {
        do { try body() } catch { return String(describing: error) }
        return nil
    }

    @Test(arguments: StoreKind.allCases) func administrationAnswersTheSameOnEveryStore(_ kind: StoreKind) throws {
        let fixture = try ServerFixture(kind)
        let store = fixture.store
        try store.addAccount("alice")
        try store.addAccount("bob")
        let token = try store.addDevice(account: "alice", name: "laptop")
        _ = try store.addDevice(account: "alice", name: "desktop")
        #expect(token.hasPrefix("brs_") && token.count == 47)
        #expect(try store.authenticate(token: token).name == "laptop")
        #expect(try store.devices(account: "alice").map(\.name) == ["desktop", "laptop"], "by name")
        #expect(try store.accounts().map { "\($0.name) \($0.devices) \($0.records)" } == ["alice 2 0", "bob 0 0"])

        let refusals: [(String, () throws -> Void)] = [
            ("the account 'alice' exists already", { try store.addAccount("alice") }),
            ("1 to 64 characters", { try store.addAccount(" ") }),
            (
                "1 to 64 characters",
                { _ = try store.addDevice(account: "alice", name: String(repeating: "x", count: 65)) }
            ),
            ("no account named 'nobody'", { try store.removeAccount("nobody") }),
            ("no account named 'nobody'", { _ = try store.addDevice(account: "nobody", name: "x") }),
            ("no account named 'nobody'", { _ = try store.devices(account: "nobody") }),
            ("no account named 'nobody'", { _ = try store.records(account: "nobody") }),
            ("has a device named 'laptop' already", { _ = try store.addDevice(account: "alice", name: "laptop") }),
            ("no device named 'ghost'", { try store.revokeDevice(account: "alice", name: "ghost") }),
            ("no device named 'ghost'", { _ = try store.reissueToken(account: "alice", device: "ghost") }),
            ("no device named 'laptop'", { try store.revokeDevice(account: "bob", name: "laptop") }),
            (
                "the token is not valid",
                { _ = try store.authenticate(token: "brs_" + String(repeating: "A", count: 43)) }
            ),
        ]
        for (expected, body) in refusals {
            let message = Self.message(body)
            #expect(
                message?.contains(expected) == true, "\(kind): expected '\(expected)', got \(message ?? "no error")")
        }
        #expect(
            try store.accounts().count == 2 && store.devices(account: "alice").count == 2, "a refusal changes nothing")

        try store.revokeDevice(account: "alice", name: "laptop")
        #expect(Self.message { _ = try store.authenticate(token: token) }?.contains("revoked") == true)
        #expect(try store.devices(account: "alice").first { $0.name == "laptop" }?.revoked == true)
        // A new token reinstates the device; the old one stays dead.
        let reissued = try store.reissueToken(account: "alice", device: "laptop")
        #expect(try store.authenticate(token: reissued).name == "laptop")
        #expect(Self.message { _ = try store.authenticate(token: token) }?.contains("not valid") == true)

        try store.removeAccount("alice")
        #expect(try store.accounts().map(\.name) == ["bob"])
        #expect(Self.message { _ = try store.authenticate(token: reissued) }?.contains("not valid") == true)
        #expect(try store.counts() == (records: 0, devices: 0, accounts: 1))
    }
}
