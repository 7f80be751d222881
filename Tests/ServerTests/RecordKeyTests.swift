import Foundation
import JSON
import SyncCore
import TestSupport
import Testing

@testable import BrsyncServer

/// A record's key is compared by its bytes, as both databases compare it.
@Suite struct RecordKeyTests {
    /// Every change pulled, in order (`pullAll` files them by `String`, which
    /// would take the two forms below for one).
    func pulled(_ device: TestDevice) throws -> [ChangeRecord] {
        var cursor: Int64 = 0
        var changes: [ChangeRecord] = []
        while true {
            let page = try Wire.read(try device.pull(since: cursor, limit: 1000).text, PullResponse.init(reading:))
            changes += page.changes
            cursor = page.next
            if !page.more { return changes }
        }
    }

    /// "é" as one scalar and as "e" with a combining accent: equal as Swift
    /// strings, two keys to the databases. They stay two records, in one
    /// push and when a later push of 1,202 changes (two read-ahead batches
    /// on PostgreSQL, one form in each) updates both, and when a machine
    /// asks for records by key.
    @Test(arguments: StoreKind.allCases) func keysThatDifferInBytesAreTwoRecords(_ kind: StoreKind) throws {
        let fixture = try ServerFixture(kind)
        let laptop = try fixture.device("alice", "laptop", protocol: Wire.protocolVersion)
        let composed = "caf\u{E9}.example"
        let decomposed = "cafe\u{301}.example"
        #expect(composed == decomposed && Array(composed.utf8) != Array(decomposed.utf8))
        let first = try laptop.push([
            laptop.change(composed, ["browser": .string("one")]),
            laptop.change(decomposed, ["browser": .string("two")]),
        ])
        #expect(first.status == 200, "\(first.text)")
        func browsers() throws -> [[UInt8]: JSONValue?] {
            Dictionary(
                try pulled(laptop).filter { $0.key.hasPrefix("caf") }.map {
                    (Array($0.key.utf8), $0.state.fields["browser"]?.value)
                }, uniquingKeysWith: { _, last in last })
        }
        #expect(try browsers() == [Array(composed.utf8): .string("one"), Array(decomposed.utf8): .string("two")])
        var changes = [laptop.change(decomposed, ["browser": .string("three")])]
        changes += (0..<1200).map { laptop.change("site\($0).example", ["browser": .string("x")]) }
        changes.append(laptop.change(composed, ["browser": .string("four")]))
        let second = try laptop.push(changes)
        #expect(second.status == 200, "\(second.text)")
        #expect(try browsers() == [Array(composed.utf8): .string("four"), Array(decomposed.utf8): .string("three")])
        #expect(try fixture.store.accounts().first { $0.name == "alice" }?.records == 1202)
        // Asked for by key, each form is its own record.
        let asked = try fixture.store.pullAskedText(
            token: laptop.token,
            asked: [composed, decomposed, composed].map { PullRequest.Asked(collection: .rules, key: $0) },
            clientProtocol: Wire.protocolVersion, clientKeyID: nil, clientSigningKey: nil, maxBytes: 1 << 20)
        let page = try Wire.read(String(decoding: asked, as: UTF8.self), PullResponse.init(reading:))
        #expect(Set(page.changes.map { Array($0.key.utf8) }) == [Array(composed.utf8), Array(decomposed.utf8)])
        #expect(page.changes.count == 2)
    }
}
