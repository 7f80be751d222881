import Cryptography
import Foundation
import HTTP
import JSON
import Model
import SyncCore
import TestSupport
import Testing

@testable import BrsyncServer
@testable import ServerStore

/// The server's side of end-to-end encryption: it cannot open a
/// record, but it keeps an encrypted account sealed (readable changes and
/// old clients are refused) and an account that is not encrypted free of
/// sealed ones.
@Suite struct EncryptedAccountTests {
    /// A change in the sealed form, as far as the server can tell (it checks
    /// the form; only devices can open the values).
    static func sealed(_ device: TestDevice, _ label: String, deleted: Bool? = nil) -> ChangeRecord {
        func base64URL(_ seed: String, _ count: Int) -> String {
            String(String(repeating: seed.filter { $0.isLetter || $0.isNumber } + "Ab0-_", count: count).prefix(count))
        }
        var fields: [String: JSONValue] = [
            "e2e.key": .string("e1." + base64URL("k" + label, 60)),
            "browser": .string("e1." + base64URL("v" + label, 50)),
        ]
        if let deleted {
            fields["deleted"] = .bool(deleted)
            fields["e2e.deleted"] = .string("e1." + base64URL("d" + label, 44))
        }
        return device.change("h1." + base64URL(label, 43), fields)
    }

    static let firstKey = "00000000000000a1", secondKey = "00000000000000b2"

    /// Account alice, encrypted with ``firstKey`` by its laptop (protocol 3,
    /// signing with ``firstSigner``), and its desktop of protocol 3 without the key.
    static func encryptedAccount(_ fixture: ServerFixture) throws -> (keyHolder: TestDevice, keyless: TestDevice) {
        let laptop = try fixture.device("alice", "laptop", protocol: Wire.signedWritesProtocol)
        let desktop = try fixture.device("alice", "desktop", protocol: Wire.signedWritesProtocol)
        laptop.keyID = firstKey
        laptop.signingKey = firstSigner
        #expect(try encrypt(laptop).status == 200)
        return (laptop, desktop)
    }
    /// The signing keys of the test's account keys (the server sees ids and
    /// signing keys only; it cannot tell how a client derives them).
    static let firstSigner = signer(1), secondSigner = signer(2)

    static func signer(_ seed: UInt8) -> Crypto.SigningKey {
        Crypto.SigningKey(seed: [UInt8](repeating: seed, count: 32))
    }
    static func publicKey(_ signer: Crypto.SigningKey) -> String { Crypto.base64URL(signer.publicKey) }

    /// A key change as brsync asks for it: signed with the new key, naming its
    /// signing key, a rotation with the certificates given.
    static func encrypt(
        _ device: TestDevice, key: String = firstKey, signer: Crypto.SigningKey = firstSigner, replacing: String? = nil,
        certificates: [KeyCertificate] = [], afterReset: Bool = false
    ) throws -> HTTPResponseParser.ParsedResponse {
        var request = EncryptRequest(
            keyID: key, replacing: replacing, publicKey: publicKey(signer), certificates: certificates)
        request.afterReset = afterReset
        return try device.post("/v1/account/encrypt", body: request.body, signedBy: signer)
    }

    /// A certificate that `account` moves from `from` (signed by `by`) to `to` (signed by `next`).
    static func certificate(
        _ account: String, from: String, by old: Crypto.SigningKey, to: String, next: Crypto.SigningKey
    ) -> KeyCertificate {
        let statement = KeyCertificate.statement(account: account, from: from, to: to, publicKey: publicKey(next))
        return KeyCertificate(
            from: from, to: to, publicKey: publicKey(next), signature: Crypto.base64URL(old.sign(statement)))
    }

    @Test(arguments: StoreKind.allCases) func anEncryptedAccountTakesSealedRecordsOnlyAndOnlyFromProtocol2(
        _ kind: StoreKind
    ) throws {
        let fixture = try ServerFixture(kind)
        let laptop = try fixture.device("alice", "laptop")
        let desktop = try fixture.device("alice", "desktop")
        laptop.protocolVersion = Wire.protocolVersion
        #expect(try laptop.push([laptop.change("bank.example", ["browser": .string("firefox")])]).status == 200)

        // Protocols 1 and 2 cannot ask for encryption; protocol 3 can, once.
        let old = try Self.encrypt(desktop)
        #expect(old.status == 400 && old.text.contains("protocol 3"), "\(old.text)")
        desktop.protocolVersion = 2
        #expect(try Self.encrypt(desktop).status == 400)
        desktop.protocolVersion = nil
        let first = try Self.encrypt(laptop)
        #expect(first.status == 200 && first.text.contains(#""changed":true"#), "\(first.text)")
        #expect(try Self.encrypt(laptop).text.contains(#""changed":false"#))

        // Nothing readable stays: the account is empty, and says it is encrypted, with which key.
        let page = try laptop.pull()
        #expect(
            page.status == 200 && page.text.contains(#""encrypted":true"#)
                && page.text.contains(#""key":"\#(Self.firstKey)""#), "\(page.text)")
        #expect(try laptop.pullAll().records.isEmpty)

        // An old client is told to upgrade, whatever it asks.
        let oldPull = try desktop.pull()
        #expect(
            oldPull.status == 409 && oldPull.errorCode == .upgradeRequired && oldPull.text.contains("upgrade brsync"),
            "\(oldPull.text)")
        let oldPush = try desktop.push([desktop.change("x.example", ["browser": .string("chrome")])])
        #expect(oldPush.status == 409 && oldPush.errorCode == .upgradeRequired)
        // Protocol 2 reads, but writes nothing: it cannot sign.
        desktop.protocolVersion = 2
        desktop.keyID = Self.firstKey
        #expect(try desktop.pull().status == 200)
        desktop.nextSequence = 1
        let unsigned = try desktop.push([Self.sealed(desktop, "zero")])
        #expect(unsigned.status == 409 && unsigned.errorCode == .upgradeRequired, "\(unsigned.text)")

        // A change that is not sealed is rejected by itself, naming why (its
        // number still counts); the sealed one beside it applies.
        desktop.protocolVersion = Wire.protocolVersion
        desktop.signingKey = Self.firstSigner
        laptop.signingKey = Self.firstSigner
        desktop.nextSequence = 1
        let mixed = try desktop.push([
            Self.sealed(desktop, "one"), desktop.change("health.example", ["browser": .string("chrome")]),
        ])
        #expect(mixed.status == 200, "\(mixed.text)")
        let mixedAnswer = try PushResponse(json: try #require(mixed.json))
        #expect(
            mixedAnswer.acknowledged == 2 && mixedAnswer.applied == 1 && mixedAnswer.rejected.map(\.sequence) == [2],
            "\(mixed.text)")
        #expect(mixedAnswer.rejected.first?.reason.contains("readable key") == true, "\(mixed.text)")
        #expect(try laptop.pullAll().records.count == 1, "only the sealed change was applied")

        // Sealed changes go through; a deletion keeps its readable flag.
        let accepted = try desktop.push([Self.sealed(desktop, "two", deleted: true)])
        #expect(accepted.status == 200, "\(accepted.text)")
        let records = try laptop.pullAll().records
        #expect(records.count == 2 && records.values.contains { $0.state.isDeleted })

        // Each way a change can be readable is refused.
        var valueReadable = Self.sealed(desktop, "three")
        valueReadable.state.fields["browser"] = StampedValue(
            .string("firefox"), stamp: valueReadable.state.fields["browser"]!.stamp)
        var keyMissing = Self.sealed(desktop, "four")
        keyMissing.state.fields["e2e.key"] = nil
        var numberValue = Self.sealed(desktop, "five")
        numberValue.state.fields["priority"] = StampedValue(.int(3), stamp: numberValue.state.fields["browser"]!.stamp)
        var shortValue = Self.sealed(desktop, "six")
        shortValue.state.fields["browser"] = StampedValue(
            .string("e1.abc"), stamp: shortValue.state.fields["browser"]!.stamp)
        var flagNotBool = Self.sealed(desktop, "seven", deleted: true)
        flagNotBool.state.fields["deleted"] = StampedValue(
            .string("e1." + String(repeating: "A", count: 50)), stamp: flagNotBool.state.fields["deleted"]!.stamp)
        desktop.nextSequence = 4 // after the three taken above; each of these is numbered in turn
        for (change, reason) in [
            (valueReadable, "field \"browser\" is readable"), (keyMissing, "no sealed key"),
            (numberValue, "field \"priority\" is readable"), (shortValue, "field \"browser\" is readable"),
            (flagNotBool, "deletion flag"),
        ] {
            var renumbered = change
            renumbered.sequence = desktop.nextSequence
            desktop.nextSequence += 1
            let answer = try desktop.push([renumbered])
            let rejected = answer.json.flatMap { try? PushResponse(json: $0) }?.rejected ?? []
            #expect(
                answer.status == 200 && rejected.count == 1 && rejected[0].reason.contains(reason),
                "\(reason): \(answer.text)")
        }
        // A relay is held to the same rule, record by record.
        let relay = RelayRequest(
            records: [
                laptop.change("relayed.example", ["browser": .string("firefox")]),
                Self.sealed(laptop, "relayed-sealed"),
            ],
            keyID: Self.firstKey)
        let relayed = try laptop.post("/v1/relay", body: relay.body())
        let relayedAnswer = try PushResponse(json: try #require(relayed.json))
        #expect(
            relayed.status == 200 && relayedAnswer.rejected.map(\.key) == ["relayed.example"]
                && relayedAnswer.applied == 1, "\(relayed.text)")
        #expect(try laptop.pullAll().records.count == 3)
    }

    @Test(arguments: StoreKind.allCases) func anAccountNotEncryptedRefusesSealedChanges(_ kind: StoreKind) throws {
        let fixture = try ServerFixture(kind)
        let laptop = try fixture.device("alice", "laptop", protocol: Wire.protocolVersion)
        // A client with a key names it: the whole request is refused, so it learns the account is not encrypted.
        laptop.keyID = Self.firstKey
        let answer = try laptop.push([Self.sealed(laptop, "one")])
        #expect(answer.status == 409 && answer.errorCode == .notEncrypted, "\(answer.text)")
        // Without a key, a change that carries encryption's fields, or whose
        // deletion flag is not true or false, is rejected by itself; the rest applies.
        laptop.keyID = nil
        laptop.nextSequence = 1
        let sealedTwo = Self.sealed(laptop, "two")
        var badFlag = laptop.change("flag.example", ["browser": .string("firefox")])
        badFlag.state.fields["deleted"] = StampedValue(
            .object(["v": .string("x")]), stamp: badFlag.state.fields["browser"]!.stamp)
        // A box (sealed format 2), under any field name, is encryption's too.
        let boxed = laptop.change("boxed.example", ["browser": .string("e2." + String(repeating: "Q", count: 80))])
        let batch = try laptop.push([
            sealedTwo, badFlag, boxed, laptop.change("good.example", ["browser": .string("firefox")]),
        ])
        #expect(batch.status == 200, "\(batch.text)")
        let batchAnswer = try PushResponse(json: try #require(batch.json, "\(batch.text)"))
        #expect(batch.status == 200 && batchAnswer.acknowledged == 4 && batchAnswer.applied == 1, "\(batch.text)")
        #expect(batchAnswer.rejected.map(\.sequence) == [1, 2, 3], "\(batch.text)")
        #expect(batchAnswer.rejected[1].reason.contains("deletion flag"), "\(batch.text)")
        #expect(batchAnswer.rejected[2].reason.contains("encryption's fields"), "\(batch.text)")
        #expect(try laptop.pullAll().records.keys.sorted() == ["rules/good.example"])
        #expect(!(try laptop.pull().text.contains("encrypted")))
        // Other accounts are not touched by one's encryption.
        let bob = try fixture.device("bob", "phone")
        #expect(try bob.push([bob.change("bob.example", ["browser": .string("chrome")])]).status == 200)
        #expect(try Self.encrypt(laptop).status == 200)
        #expect(try bob.pullAll().records.count == 1)
        #expect(try bob.pull().status == 200 && !(try bob.pull().text.contains("encrypted")))
    }

    /// A rotation replaces the account's key: it deletes what was sealed with
    /// the old one, and refuses the old key from then on (pushes, relays,
    /// pulls), so a machine with only the old key syncs nothing more.
    @Test(arguments: StoreKind.allCases) func aRotatedKeyIsRefusedEverywhere(_ kind: StoreKind) throws {
        let fixture = try ServerFixture(kind)
        let laptop = try fixture.device("alice", "laptop")
        let desktop = try fixture.device("alice", "desktop")
        for device in [laptop, desktop] {
            device.protocolVersion = Wire.protocolVersion
            device.keyID = Self.firstKey
            device.signingKey = Self.firstSigner
        }
        let account = try fixture.store.authenticate(token: laptop.token).accountUID
        let certificate = Self.certificate(
            account, from: Self.firstKey, by: Self.firstSigner, to: Self.secondKey, next: Self.secondSigner)
        #expect(try Self.encrypt(laptop).status == 200)
        #expect(try laptop.push([Self.sealed(laptop, "one")]).status == 200)
        // Encrypting again with another key changes nothing (the client sees the account's key).
        let other = try Self.encrypt(desktop, key: Self.secondKey, signer: Self.secondSigner)
        #expect(
            other.status == 200 && other.text.contains(#""changed":false"#) && other.text.contains(Self.firstKey),
            "\(other.text)")
        // A rotation from a key the account does not use is refused; from its key, it happens once.
        let stale = try Self.encrypt(
            desktop, key: "00000000000000c3", signer: Self.signer(3), replacing: Self.secondKey)
        #expect(
            stale.status == 409 && stale.errorCode == .keyRotated, "\(stale.text) \(stale.errorCode?.rawValue ?? "nil")"
        )
        let rotated = try Self.encrypt(
            laptop, key: Self.secondKey, signer: Self.secondSigner, replacing: Self.firstKey,
            certificates: [certificate])
        #expect(rotated.status == 200 && rotated.text.contains(#""changed":true"#), "\(rotated.text)")
        let retry = try Self.encrypt(
            laptop, key: Self.secondKey, signer: Self.secondSigner, replacing: Self.firstKey,
            certificates: [certificate])
        #expect(retry.status == 200 && retry.text.contains(#""changed":false"#), "a retry: \(retry.text)")
        // The old key: refused for pushes, relays and pulls; nothing of it stays.
        desktop.nextSequence = 1
        let push = try desktop.push([Self.sealed(desktop, "two")])
        #expect(
            push.status == 409 && push.errorCode == .keyRotated && push.errorMessage.contains("brsync key add"),
            "\(push.text)")
        let relay = RelayRequest(records: [Self.sealed(desktop, "three")], keyID: Self.firstKey)
        let relayed = try desktop.post("/v1/relay", body: relay.body())
        #expect(relayed.status == 409 && relayed.errorCode == .keyRotated)
        let pull = try desktop.client.send(
            method: "GET", target: "/v1/pull?since=0&key=\(Self.firstKey)", headers: desktop.authorization)
        #expect(pull.status == 409 && pull.errorCode == .keyRotated)
        // A push naming no key, and a key named to an account that is not encrypted, are refused too.
        desktop.keyID = nil
        desktop.nextSequence = 1
        #expect(try desktop.push([Self.sealed(desktop, "four")]).errorCode == .encryptionRequired)
        let bob = try fixture.device("bob", "phone", protocol: Wire.protocolVersion)
        bob.keyID = Self.firstKey
        #expect(try bob.push([bob.change("bob.example", ["browser": .string("x")])]).errorCode == .notEncrypted)
        // The new key is taken.
        laptop.keyID = Self.secondKey
        laptop.signingKey = Self.secondSigner
        laptop.nextSequence = 1
        laptop.chains = [:]
        #expect(try laptop.push([Self.sealed(laptop, "five")]).status == 200)
        let page = try laptop.client.send(
            method: "GET", target: "/v1/pull?since=0&key=\(Self.secondKey)", headers: laptop.authorization)
        #expect(page.status == 200 && page.text.contains(Self.secondKey))
        #expect(
            try Wire.read(page.text, PullResponse.init(reading:)).changes.count == 1,
            "only what was sealed with the new key")
    }

    /// Bad requests to encrypt: refused with what is wrong, and the account stays readable.
    @Test(arguments: StoreKind.allCases) func aBadEncryptionRequestChangesNothing(_ kind: StoreKind) throws {
        let fixture = try ServerFixture(kind)
        let laptop = try fixture.device("alice", "laptop", protocol: Wire.protocolVersion)
        #expect(try laptop.push([laptop.change("kept.example", ["browser": .string("firefox")])]).status == 200)
        for (body, message) in [
            ("", "not JSON"), ("not json", "not JSON"), ("[]", "{\"key\": ID}"), ("{}", "{\"key\": ID}"),
            (#"{"key": 5}"#, "{\"key\": ID}"), (#"{"key": "xyz"}"#, "{\"key\": ID}"),
            (#"{"key": "00000000000000A1"}"#, "{\"key\": ID}"),
            (#"{"key": "00000000000000a1", "replaces": "no"}"#, "replaces"),
            (#"{"key": "00000000000000a1\u0000"}"#, "{\"key\": ID}"),
        ] {
            let answer = try laptop.client.send(
                method: "POST", target: "/v1/account/encrypt", headers: laptop.authorization, body: Array(body.utf8))
            #expect(answer.status == 400 && answer.errorMessage.contains(message), "\(body): \(answer.text)")
        }
        // A pull naming something that is not a key id is refused; the account is still readable.
        let pull = try laptop.client.send(
            method: "GET", target: "/v1/pull?since=0&key=nothex", headers: laptop.authorization)
        #expect(pull.status == 400 && pull.errorMessage.contains("key"), "\(pull.text)")
        let page = try laptop.pull()
        #expect(page.status == 200 && !page.text.contains("encrypted") && page.text.contains("kept.example"))
        // Without a token, nothing is read.
        let stranger = try laptop.client.send(
            method: "POST", target: "/v1/account/encrypt", body: Array(#"{"key":"00000000000000a1"}"#.utf8))
        #expect(stranger.status == 401)
    }

    @Test(arguments: ["two", "-1", "0", "99999", ""]) func aProtocolHeaderThatIsNotANumberIsRefused(
        _ value: String
    ) throws {
        let fixture = try ServerFixture(.sqlite)
        let laptop = try fixture.device("alice", "laptop")
        var headers = laptop.authorization
        headers.add(Wire.protocolHeader, value)
        let pull = try laptop.client.send(method: "GET", target: "/v1/pull", headers: headers)
        #expect(pull.status == 400 && pull.text.contains(Wire.protocolHeader), "\(value): \(pull.text)")
        let push = try laptop.client.send(method: "POST", target: "/v1/push", headers: headers, body: Array("{}".utf8))
        #expect(push.status == 400, "\(value): \(push.text)")
    }

    /// After the switch, the readable records are gone from the file and from
    /// the write-ahead log, not only from the table.
    @Test func theSQLiteFileKeepsNoReadableRecordAfterEncryption() throws {
        let fixture = try ServerFixture(.sqlite)
        let laptop = try fixture.device("alice", "laptop", protocol: Wire.protocolVersion)
        let marker = "unmistakable-secret-pattern"
        let changes = (0..<200).map {
            laptop.change("\(marker)-\($0).example", ["browser": .string("\(marker)-browser-\($0)")])
        }
        #expect(try laptop.push(changes).status == 200)
        let path = try #require(fixture.store.sqlite).path
        func holdsMarker() throws -> Bool {
            [path, path + "-wal"].contains { file in
                guard let bytes = FileManager.default.contents(atPath: file) else { return false }
                return bytes.range(of: Data(marker.utf8)) != nil
            }
        }
        #expect(try holdsMarker(), "the test would prove nothing if the marker were never written")
        #expect(try Self.encrypt(laptop).status == 200)
        #expect(try !holdsMarker(), "the readable records linger in the database file or its log")
    }
}
