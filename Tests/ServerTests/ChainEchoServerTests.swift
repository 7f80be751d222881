import Foundation
import HTTP
import SyncCore
import TestSupport
import Testing

@testable import BrsyncServer

/// A pull that asks (`chain=ID`) is told where the server holds the
/// stream of that id in the token's account, never from memory.
@Suite struct ChainEchoServerTests {
    static func page(_ device: TestDevice, _ target: String) throws -> PullResponse {
        let response = try device.client.send(method: "GET", target: target, headers: device.authorization)
        #expect(response.status == 200, "\(response.text)")
        return try Wire.read(response.text, PullResponse.init(reading:))
    }

    @Test(arguments: StoreKind.allCases) func aPullIsToldWhereItsOwnStreamStands(_ kind: StoreKind) throws {
        let fixture = try ServerFixture(kind)
        let (laptop, desktop) = (try fixture.device("alice", "laptop"), try fixture.device("alice", "desktop"))
        let asking = PullRequest(limit: 1, chainOf: laptop.deviceID).target
        // Nothing pushed under the id yet: none.
        #expect(try Self.page(laptop, asking).chain == ChainEcho(last: 0, digest: ""))
        #expect(
            try laptop.push([
                laptop.change("one.example", ["browser": .string("firefox")]),
                laptop.change("two.example", ["browser": .string("chrome")]),
            ]).status == 200)
        let expected = ChainEcho(last: 2, digest: try #require(laptop.chains[2]))
        #expect(try Self.page(laptop, asking).chain == expected)
        // With the proof of the latest push, on a later page: the same.
        let proving = PullRequest(
            since: 1, pusher: .init(device: laptop.deviceID, pushed: 2, digest: expected.digest),
            chainOf: laptop.deviceID)
        #expect(try Self.page(laptop, proving.target).chain == expected)
        // No-change pulls remembered: a pull that asks is still read from the store.
        let cursor = try laptop.pullAll().cursor
        for _ in 0..<3 { #expect(try Self.page(laptop, "/v1/pull?since=\(cursor)").chain == nil) }
        #expect(try Self.page(laptop, PullRequest(since: cursor, chainOf: laptop.deviceID).target).chain == expected)
        // Any token of the account is told (homes copied with their token
        // share it; a push's `gap` answer says as much to any of them).
        #expect(try Self.page(desktop, asking).chain == expected)
        #expect(try desktop.push([desktop.change("three.example", ["browser": .string("epiphany")])]).status == 200)
        #expect(
            try Self.page(desktop, PullRequest(limit: 1, chainOf: desktop.deviceID).target).chain
                == ChainEcho(last: 1, digest: try #require(desktop.chains[1])))
        // Another account's token is told nothing of this account's streams.
        let stranger = try fixture.device("bob", "phone")
        #expect(try Self.page(stranger, asking).chain == ChainEcho(last: 0, digest: ""))
    }

    /// In an encrypted account, a token whose device never pushed (only a
    /// key holder's can: pushes are signed) is not told where a stream
    /// stands; a key holder's is.
    @Test(arguments: StoreKind.allCases) func aTokenThatCannotWriteIsNotToldWhereStreamsStand(_ kind: StoreKind) throws
    {
        let fixture = try ServerFixture(kind)
        let (keyHolder, keyless) = try EncryptedAccountTests.encryptedAccount(fixture)
        #expect(try keyHolder.push([EncryptedAccountTests.sealed(keyHolder, "one")]).status == 200)
        let asking = PullRequest(limit: 1, keyID: EncryptedAccountTests.firstKey, chainOf: keyHolder.deviceID).target
        #expect(try Self.page(keyless, asking).chain == nil)
        #expect(try Self.page(keyHolder, asking).chain?.last == 1)
    }

    /// A chain that is no device id, or not the one the proof names, is a 400
    /// naming it, and the memory's fast path does not answer it either.
    @Test(arguments: StoreKind.allCases) func aWrongChainIsNamed(_ kind: StoreKind) throws {
        let fixture = try ServerFixture(kind)
        let laptop = try fixture.device("alice", "laptop")
        #expect(try laptop.push([laptop.change("one.example", ["browser": .string("firefox")])]).status == 200)
        let cursor = try laptop.pullAll().cursor
        for target in [
            "/v1/pull?since=\(cursor)&chain=bad!", "/v1/pull?since=\(cursor)&chain=",
            "/v1/pull?since=\(cursor)&chain=other&device=\(laptop.deviceID)&pushed=1&digest=0123456789abcdef",
        ] {
            _ = try laptop.pull(since: cursor)
            let response = try laptop.client.send(method: "GET", target: target, headers: laptop.authorization)
            #expect(response.status == 400 && response.errorMessage.hasPrefix("chain"), "\(target): \(response.text)")
        }
    }
}
