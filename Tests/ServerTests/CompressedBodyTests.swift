import ContentCoding
import HTTP
import JSON
import SyncCore
import TestSupport
import Testing

@testable import BrsyncServer

/// gzip bodies (docs/protocol.md, "Compressed bodies"): a readable
/// account's pull pages come compressed to a client that asks, and its
/// pushes and relays may come compressed; an encrypted account's bodies
/// never, either way; a body that is not one whole gzip member, or would
/// inflate past the body limit, is refused and changes nothing.
@Suite struct CompressedBodyTests {
    static func rules(_ device: TestDevice, _ count: Int) -> [ChangeRecord] {
        (0..<count).map { index in
            device.change(
                "rule\(index).example.com",
                ["browser": .string("firefox"), "pattern": .string("rule\(index).example.com")])
        }
    }

    static func pushBody(_ device: TestDevice, _ changes: [ChangeRecord]) -> [UInt8] {
        PushRequest(
            device: device.deviceID, from: changes.first?.sequence ?? 1, to: changes.last?.sequence ?? 1,
            changes: changes, keyID: device.keyID
        ).body()
    }

    @Test(arguments: StoreKind.allCases) func aReadableAccountsPagesComeCompressedToWhoAsks(_ kind: StoreKind) throws {
        let fixture = try ServerFixture(kind)
        let laptop = try fixture.device("home", "laptop", protocol: Wire.protocolVersion)
        #expect(try laptop.push(Self.rules(laptop, 40)).status == 200)
        let target = "/v1/pull?since=0"
        let plain = try laptop.client.send(method: "GET", target: target, headers: laptop.authorization)
        #expect(plain.status == 200 && plain.headers["Content-Encoding"] == nil)
        #expect(plain.headers.contains("Accept-Encoding", token: "gzip"), "every answer says it takes gzip")
        var asking = laptop.authorization
        asking.add("Accept-Encoding", "br;q=1, gzip;q=0.8")
        let compressed = try laptop.client.send(method: "GET", target: target, headers: asking)
        #expect(compressed.status == 200 && compressed.headers["Content-Encoding"] == "gzip")
        #expect(compressed.body.count * 4 < plain.body.count, "\(compressed.body.count) against \(plain.body.count)")
        let inflated = try Gzip.decompress(compressed.body, limit: 1 << 20)
        // The same page, apart from the server's clock at the moment.
        func withoutClock(_ body: [UInt8]) throws -> JSONValue? {
            guard case .object(var members) = try JSONValue.parse(String(decoding: body, as: UTF8.self)) else {
                return nil
            }
            members["clock"] = nil
            return .object(members)
        }
        let same = try withoutClock(inflated) == (try withoutClock(plain.body))
        #expect(same, "the page inflated is the page sent as it is")

        var refusing = laptop.authorization
        refusing.add("Accept-Encoding", "gzip;q=0, identity")
        let refused = try laptop.client.send(method: "GET", target: target, headers: refusing)
        #expect(refused.headers["Content-Encoding"] == nil && refused.body.count == plain.body.count)
    }

    @Test(arguments: StoreKind.allCases) func anEncryptedAccountsBodiesAreNeverCompressed(_ kind: StoreKind) throws {
        let fixture = try ServerFixture(kind)
        let (laptop, _) = try EncryptedAccountTests.encryptedAccount(fixture)
        let changes = (0..<20).map { EncryptedAccountTests.sealed(laptop, "rule\($0)") }
        #expect(try laptop.push(changes).status == 200)
        var asking = laptop.authorization
        asking.add("Accept-Encoding", "gzip")
        let page = try laptop.client.send(
            method: "GET", target: "/v1/pull?since=0&key=\(laptop.keyID ?? "")", headers: asking)
        #expect(page.status == 200, "\(page.text)")
        #expect(page.body.count > Gzip.minimumBytes && page.headers["Content-Encoding"] == nil)

        // A compressed push is refused on its head, before its body.
        var headers = laptop.authorization
        headers.add("Content-Encoding", "gzip")
        headers.add(Wire.sealedWithHeader, laptop.keyID ?? "")
        let more = [EncryptedAccountTests.sealed(laptop, "more")]
        let sent = try laptop.client.send(
            method: "POST", target: "/v1/push", headers: headers, body: Gzip.compress(Self.pushBody(laptop, more)),
            expectContinue: true)
        #expect(sent.status == 400 && sent.errorMessage.contains("never sent compressed"), "\(sent.text)")
        #expect(try laptop.pullAll().records["rules/\(more[0].key)"] == nil)
        // From a machine without the key (it took the account to be
        // readable): what it must hear is that the account is encrypted.
        for route in ["/v1/push", "/v1/relay"] {
            var keyless = laptop.authorization
            keyless.add("Content-Encoding", "gzip")
            keyless.add(Wire.sealedWithHeader, "none")
            let readable = try laptop.client.send(
                method: "POST", target: route, headers: keyless, body: Gzip.compress(Array("{}".utf8)),
                expectContinue: true)
            #expect(readable.status == 409 && readable.errorCode == .encryptionRequired, "\(route): \(readable.text)")
        }
    }

    @Test(arguments: StoreKind.allCases) func aReadablePushMayComeCompressedAndBadOnesChangeNothing(
        _ kind: StoreKind
    )
        throws
    {
        let fixture = try ServerFixture(kind)
        let laptop = try fixture.device("home", "laptop", protocol: Wire.protocolVersion)
        func post(_ body: [UInt8], coding: String?) throws -> HTTPResponseParser.ParsedResponse {
            var headers = laptop.authorization
            if let coding { headers.add("Content-Encoding", coding) }
            return try laptop.client.send(method: "POST", target: "/v1/push", headers: headers, body: body)
        }
        let batch = Self.rules(laptop, 30)
        let plainBody = Self.pushBody(laptop, batch)
        // Refused, each in its words, nothing applied.
        let bomb = Gzip.compress([UInt8](repeating: UInt8(ascii: " "), count: 9 << 20))
        var truncated = Gzip.compress(plainBody)
        truncated.removeLast(9)
        var trailing = Gzip.compress(plainBody)
        trailing += trailing.suffix(4) // its trailer's size again: the claim reads the same
        let refusals: [(String, [UInt8], String?, String)] = [
            ("a coding it does not take", plainBody, "br", "is not taken"),
            ("two codings", Gzip.compress(Gzip.compress(plainBody)), "gzip, gzip", "is not taken"),
            ("a body past the limit once inflated", bomb, "gzip", "more than the 8388608 allowed"),
            ("a cut body", truncated, "gzip", "the gzip body is refused"),
            ("bytes after the member", trailing, "gzip", "follow the gzip data"),
            ("not gzip at all", plainBody, "gzip", "not gzip data"),
        ]
        for (what, body, coding, words) in refusals {
            let answer = try post(body, coding: coding)
            #expect(answer.status == 400 && answer.errorMessage.contains(words), "\(what): \(answer.text)")
        }
        #expect(try laptop.pullAll().records.isEmpty, "nothing of them applied")

        let taken = try post(Gzip.compress(plainBody), coding: "gzip")
        #expect(taken.status == 200, "\(taken.text)")
        #expect(try PushResponse(json: try #require(taken.json)).acknowledged == batch.last?.sequence)
        #expect(try laptop.pullAll().records.count == batch.count)
    }
}
