import Foundation
import HTTP
import SyncCore
import TestSupport
import Testing

@testable import BrsyncServer

/// A pull that asks (`chain=ID`) is told where the server holds the
/// stream of that id: only the id the token's device last pushed under, and
/// never from memory.
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
        // Nothing pushed under the id yet: the token's device has no stream to be told of.
        #expect(try Self.page(laptop, asking).chain == nil)
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
        // Another device's token is not told where the laptop stands, nor
        // where its own stream would be under an id it never pushed under.
        #expect(try Self.page(desktop, asking).chain == nil)
        #expect(try Self.page(desktop, PullRequest(limit: 1, chainOf: desktop.deviceID).target).chain == nil)
        #expect(try desktop.push([desktop.change("three.example", ["browser": .string("epiphany")])]).status == 200)
        #expect(
            try Self.page(desktop, PullRequest(limit: 1, chainOf: desktop.deviceID).target).chain
                == ChainEcho(last: 1, digest: try #require(desktop.chains[1])))
        #expect(try Self.page(desktop, asking).chain == nil)
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
