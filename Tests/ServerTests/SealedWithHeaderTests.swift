import Cryptography
import Foundation
import HTTP
import JSON
import SyncCore
import TestSupport
import Testing

@testable import BrsyncServer

/// Pushes and relays say on their head what their records are sealed with
/// (`Brsync-Sealed-With`), and send the body only after `100 Continue`:
/// the server refuses records readable for an encrypted account, or sealed
/// with a key the account left, before a byte of them is sent.
@Suite struct SealedWithHeaderTests {
    /// A POST of `body` to `path` saying `claim` (none: no header), waiting
    /// for `100 Continue` before the body, signed as `device` signs.
    static func send(
        _ device: TestDevice, _ path: String, body: [UInt8], claim: [String]
    ) throws -> HTTPResponseParser.ParsedResponse {
        var headers = device.authorization
        for value in claim { headers.add(Wire.sealedWithHeader, value) }
        if let signer = device.signingKey {
            headers.add(
                WriteSignature.header,
                WriteAuthority.signatureHeader(by: signer, token: device.token, path: path, body: body))
        }
        return try device.client.send(method: "POST", target: path, headers: headers, body: body, expectContinue: true)
    }

    static func pushBody(_ device: TestDevice, _ change: ChangeRecord, keyID: String?) -> [UInt8] {
        PushRequest(
            device: device.deviceID, from: change.sequence, to: change.sequence, changes: [change], keyID: keyID
        ).body()
    }

    @Test(arguments: StoreKind.allCases) func recordsAreRefusedOnTheHeadBeforeTheirBodyLeaves(_ kind: StoreKind) throws
    {
        let fixture = try ServerFixture(kind)
        let (laptop, desktop) = try EncryptedAccountTests.encryptedAccount(fixture)

        // A machine without the key, on its first sync after the switch: refused on the head.
        let readable = desktop.change("bank.example", ["browser": .string("firefox")])
        let refused = try Self.send(
            desktop, "/v1/push", body: Self.pushBody(desktop, readable, keyID: nil), claim: ["none"])
        #expect(refused.status == 409 && refused.errorCode == .encryptionRequired, "\(refused.text)")
        #expect(
            refused.headers["Connection"] == "close" && refused.headers[Wire.timeHeader] != nil, "\(refused.headers)")
        let relay = RelayRequest(records: [readable]).body()
        #expect(try Self.send(desktop, "/v1/relay", body: relay, claim: ["none"]).errorCode == .encryptionRequired)
        #expect(try fixture.store.records(account: "alice").isEmpty)

        // Sealed with the account's key: the body comes and is taken.
        let sealed = EncryptedAccountTests.sealed(laptop, "one")
        let taken = try Self.send(
            laptop, "/v1/push", body: Self.pushBody(laptop, sealed, keyID: laptop.keyID), claim: [laptop.keyID!])
        #expect(taken.status == 200, "\(taken.text)")

        // Another key, never the account's: key_rotated, not retired (a server restored from before a rotation says so too).
        let unknown = try Self.send(
            laptop, "/v1/push",
            body: Self.pushBody(laptop, EncryptedAccountTests.sealed(laptop, "x"), keyID: "00000000000000c3"),
            claim: ["00000000000000c3"])
        #expect(
            unknown.status == 409 && unknown.errorCode == .keyRotated
                && unknown.json.flatMap(WireError.init(json:))?.retired == false, "\(unknown.text)")

        // After a rotation the old key is retired: said so, on the head.
        let account = try fixture.store.authenticate(token: laptop.token).accountUID
        let certificate = EncryptedAccountTests.certificate(
            account, from: EncryptedAccountTests.firstKey, by: EncryptedAccountTests.firstSigner,
            to: EncryptedAccountTests.secondKey, next: EncryptedAccountTests.secondSigner)
        let rotated = try EncryptedAccountTests.encrypt(
            laptop, key: EncryptedAccountTests.secondKey, signer: EncryptedAccountTests.secondSigner,
            replacing: EncryptedAccountTests.firstKey, certificates: [certificate])
        #expect(rotated.status == 200, "\(rotated.text)")
        let old = try Self.send(
            laptop, "/v1/push",
            body: Self.pushBody(
                laptop, EncryptedAccountTests.sealed(laptop, "two"), keyID: EncryptedAccountTests.firstKey),
            claim: [EncryptedAccountTests.firstKey])
        #expect(
            old.status == 409 && old.errorCode == .keyRotated
                && old.json.flatMap(WireError.init(json:))?.retired == true, "\(old.text)")
        // A pull naming the retired key says so too.
        let pull = try laptop.client.send(
            method: "GET", target: "/v1/pull?since=0&key=\(EncryptedAccountTests.firstKey)",
            headers: laptop.authorization)
        #expect(pull.status == 409 && pull.json.flatMap(WireError.init(json:))?.retired == true, "\(pull.text)")
    }

    @Test(arguments: StoreKind.allCases) func aHeadThatIsNotTheBodysOrNotAClaimIsRefused(_ kind: StoreKind) throws {
        let fixture = try ServerFixture(kind)
        let bob = try fixture.device("bob", "laptop", protocol: Wire.protocolVersion)
        let change = bob.change("a.example", ["browser": .string("firefox")])
        // A readable account: a claim of a key is refused on the head; "none" goes through.
        let named = try Self.send(
            bob, "/v1/push", body: Self.pushBody(bob, change, keyID: nil), claim: [EncryptedAccountTests.firstKey])
        #expect(named.status == 409 && named.errorCode == .notEncrypted, "\(named.text)")
        for claim in [["nothing"], ["NONE"], ["00000000000000a"], ["none", "none"], [""]] {
            let bad = try Self.send(bob, "/v1/push", body: Self.pushBody(bob, change, keyID: nil), claim: claim)
            #expect(bad.status == 400 && bad.text.contains(Wire.sealedWithHeader), "\(claim): \(bad.text)")
        }
        // A head that says "none" with a body that names a key: refused, nothing applied.
        let lying = try Self.send(
            bob, "/v1/push", body: Self.pushBody(bob, change, keyID: EncryptedAccountTests.firstKey), claim: ["none"])
        #expect(lying.status == 400 && lying.text.contains("is not the one"), "\(lying.text)")
        #expect(try fixture.store.records(account: "bob").isEmpty)
        let plain = try Self.send(bob, "/v1/push", body: Self.pushBody(bob, change, keyID: nil), claim: ["none"])
        #expect(plain.status == 200, "\(plain.text)")
        // Without the header (an older brsync), as before: the body is read and judged.
        let older = bob.change("b.example", ["browser": .string("firefox")])
        #expect(try bob.push([older]).status == 200)
        #expect(try fixture.store.records(account: "bob").count == 2)
    }
}

extension SealedWithHeaderTests {
    /// A key the account left is never taken again, however many rotations
    /// followed (no cap on the ids kept), and a request naming it is told it
    /// was retired.
    @Test(arguments: StoreKind.allCases) func everyRetiredKeyStaysRetired(_ kind: StoreKind) throws {
        let fixture = try ServerFixture(kind)
        let laptop = try fixture.device("alice", "laptop", protocol: Wire.protocolVersion)
        func id(_ index: Int) -> String { String(repeating: "0", count: 14) + String(format: "%02x", index) }
        laptop.keyID = id(1)
        #expect(
            try EncryptedAccountTests.encrypt(laptop, key: id(1), signer: EncryptedAccountTests.signer(1)).status == 200
        )
        let account = try fixture.store.authenticate(token: laptop.token).accountUID
        for index in 1..<100 {
            let certificate = EncryptedAccountTests.certificate(
                account, from: id(index), by: EncryptedAccountTests.signer(UInt8(index)),
                to: id(index + 1), next: EncryptedAccountTests.signer(UInt8(index + 1)))
            let rotated = try EncryptedAccountTests.encrypt(
                laptop, key: id(index + 1), signer: EncryptedAccountTests.signer(UInt8(index + 1)),
                replacing: id(index), certificates: [certificate])
            #expect(rotated.status == 200, "rotation \(index): \(rotated.text)")
        }
        // Back to the first key, with a valid certificate of the current one: refused.
        let back = EncryptedAccountTests.certificate(
            account, from: id(100), by: EncryptedAccountTests.signer(100), to: id(1),
            next: EncryptedAccountTests.signer(1))
        let refused = try EncryptedAccountTests.encrypt(
            laptop, key: id(1), signer: EncryptedAccountTests.signer(1), replacing: id(100), certificates: [back])
        #expect(refused.status == 409 && refused.errorCode == .keyRetired, "\(refused.text)")
        let named = try laptop.client.send(
            method: "GET", target: "/v1/pull?since=0&key=\(id(1))", headers: laptop.authorization)
        #expect(
            named.errorCode == .keyRotated && named.json.flatMap(WireError.init(json:))?.retired == true,
            "\(named.text)")
    }
}
