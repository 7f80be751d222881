import Cryptography
import HTTP
import JSON
import Model
import SyncCore
import TestSupport
import Testing

@testable import BrsyncServer
@testable import ServerStore

/// Only key holders write (Deploy/SECURITY.md, "Who may do what"): a device
/// token without the account key — the one inside every join code — reads
/// ciphertext and nothing more. Each attack, on both stores, is refused and
/// leaves the account as it was.
@Suite struct SignedWritesTests {
    typealias Keys = EncryptedAccountTests

    /// An encrypted account (first key) holding one sealed record, the key
    /// holder's laptop, and a token holder without the key (a photographed
    /// join code): its own signing key, never registered.
    struct Account {
        let fixture: ServerFixture
        let holder: TestDevice
        let attacker: TestDevice
        let uid: String
        let attackerKey = Keys.signer(66)

        init(_ kind: StoreKind) throws {
            fixture = try ServerFixture(kind)
            holder = try fixture.device("alice", "laptop")
            attacker = try fixture.device("alice", "stolen")
            for device in [holder, attacker] {
                device.protocolVersion = Wire.protocolVersion
                device.keyID = Keys.firstKey
            }
            holder.signingKey = Keys.firstSigner
            attacker.signingKey = attackerKey
            uid = try fixture.store.authenticate(token: holder.token).accountUID
            #expect(try Keys.encrypt(holder).status == 200)
            #expect(try holder.push([Keys.sealed(holder, "kept")]).status == 200)
        }

        /// The account as the key holder finds it: its key, signing key and records.
        func state() throws -> (key: String?, signingKey: String?, records: Int) {
            let page = try Wire.read(try holder.pull().text, PullResponse.init(reading:))
            return (page.keyID, page.signingKey, try holder.pullAll().records.count)
        }
    }

    static let untouched: (key: String?, signingKey: String?, records: Int) = (
        Keys.firstKey, Keys.publicKey(Keys.firstSigner), 1
    )

    static func same(_ state: (key: String?, signingKey: String?, records: Int)) -> Bool {
        state.key == untouched.key && state.signingKey == untouched.signingKey && state.records == untouched.records
    }

    @Test(arguments: StoreKind.allCases) func aTokenAloneCannotRotateNorWipe(_ kind: StoreKind) throws {
        let account = try Account(kind)
        let attacker = account.attacker
        // No certificate, one signed by the attacker's key, one for another account, one signed by the right key for another move.
        let forged = Keys.certificate(
            account.uid, from: Keys.firstKey, by: account.attackerKey, to: "00000000000000e6", next: account.attackerKey
        )
        let otherAccount = Keys.certificate(
            "0000000000000000", from: Keys.firstKey, by: Keys.firstSigner, to: "00000000000000e6",
            next: account.attackerKey)
        for certificates in [[], [forged], [otherAccount]] {
            let answer = try Keys.encrypt(
                attacker, key: "00000000000000e6", signer: account.attackerKey, replacing: Keys.firstKey,
                certificates: certificates)
            #expect(answer.status == 403 && answer.errorCode == .badSignature, "\(answer.text)")
        }
        // The key holder's genuine certificate, for a move to its own next key, does not carry the attacker's key.
        let genuine = Keys.certificate(
            account.uid, from: Keys.firstKey, by: Keys.firstSigner, to: Keys.secondKey, next: Keys.secondSigner)
        let hijack = try Keys.encrypt(
            attacker, key: Keys.secondKey, signer: account.attackerKey, replacing: Keys.firstKey,
            certificates: [genuine])
        #expect(hijack.status == 403 && hijack.errorCode == .badSignature, "\(hijack.text)")
        // Unsigned, or signed by another key than the one the body names.
        let request = EncryptRequest(
            keyID: "00000000000000e6", replacing: Keys.firstKey, publicKey: Keys.publicKey(account.attackerKey))
        let unsigned = try attacker.client.send(
            method: "POST", target: "/v1/account/encrypt", headers: attacker.authorization, body: request.body)
        #expect(unsigned.status == 403 && unsigned.errorCode == .signatureRequired, "\(unsigned.text)")
        let mismatched = try attacker.post("/v1/account/encrypt", body: request.body, signedBy: Keys.firstSigner)
        #expect(mismatched.status == 403 && mismatched.errorCode == .badSignature, "\(mismatched.text)")
        let state = try account.state()
        #expect(Self.same(state), "\(state)")
    }

    @Test(arguments: StoreKind.allCases) func aTokenAloneCannotPushNorRelayJunk(_ kind: StoreKind) throws {
        let account = try Account(kind)
        let attacker = account.attacker
        // Signed with its own key: not the account's.
        let pushed = try attacker.push([Keys.sealed(attacker, "junk")])
        #expect(pushed.status == 403 && pushed.errorCode == .signingKeyMismatch, "\(pushed.text)")
        let relay = RelayRequest(
            records: [Keys.sealed(attacker, "kept"), Keys.sealed(attacker, "junk2")], keyID: Keys.firstKey)
        let relayed = try attacker.post("/v1/relay", body: relay.body())
        #expect(relayed.status == 403 && relayed.errorCode == .signingKeyMismatch, "\(relayed.text)")
        // Unsigned, and as an older client that cannot sign.
        attacker.signingKey = nil
        attacker.nextSequence = 1
        #expect(try attacker.push([Keys.sealed(attacker, "junk")]).errorCode == .signatureRequired)
        attacker.protocolVersion = 2
        attacker.nextSequence = 1
        #expect(try attacker.push([Keys.sealed(attacker, "junk")]).errorCode == .upgradeRequired)
        attacker.protocolVersion = Wire.protocolVersion
        // The holder's public key with a signature it did not make, and a
        // signature the holder made for its own token (captured) replayed with another.
        let body = relay.body()
        let real = WriteAuthority.signatureHeader(
            by: Keys.firstSigner, token: account.holder.token, path: "/v1/relay", body: body)
        let forged = Keys.publicKey(Keys.firstSigner) + " " + String(real.split(separator: " ")[1].reversed())
        for header in [real, forged] {
            var headers = attacker.authorization
            headers.add(WriteSignature.header, header)
            let answer = try attacker.client.send(method: "POST", target: "/v1/relay", headers: headers, body: body)
            #expect(answer.status == 403 && answer.errorCode == .badSignature, "\(answer.text)")
        }
        // A signature over another body.
        let other = WriteAuthority.signatureHeader(
            by: Keys.firstSigner, token: attacker.token, path: "/v1/relay", body: Array("{}".utf8))
        var headers = attacker.authorization
        headers.add(WriteSignature.header, other)
        #expect(
            try attacker.client.send(method: "POST", target: "/v1/relay", headers: headers, body: body).errorCode
                == .badSignature)
        // A header that is not a key and a signature.
        for garbage in [
            "", "x y", Keys.publicKey(Keys.firstSigner),
            String(repeating: "A", count: 43) + " " + String(repeating: "!", count: 86),
        ] {
            var headers = attacker.authorization
            headers.add(WriteSignature.header, garbage)
            let answer = try attacker.client.send(method: "POST", target: "/v1/relay", headers: headers, body: body)
            #expect(
                answer.status == 400 && answer.errorMessage.contains(WriteSignature.header),
                "\(garbage): \(answer.text)")
        }
        let state = try account.state()
        #expect(Self.same(state), "\(state)")
    }

    /// A pull names the signing key the server keeps unless the client named
    /// that one (`signer=`): a no-change pull stays small, a mismatch is said.
    @Test func aPullNamesTheSigningKeyOnlyWhenItIsNotTheClients() throws {
        let account = try Account(.sqlite)
        func page(_ signer: String) throws -> PullResponse {
            let target = "/v1/pull?since=0&key=\(Keys.firstKey)&signer=\(signer)"
            let answer = try account.holder.client.send(
                method: "GET", target: target, headers: account.holder.authorization)
            return try Wire.read(answer.text, PullResponse.init(reading:))
        }
        #expect(try page(Keys.publicKey(Keys.firstSigner)).signingKey == nil)
        #expect(try page(Keys.publicKey(account.attackerKey)).signingKey == Keys.publicKey(Keys.firstSigner))
        let bad = try account.holder.client.send(
            method: "GET", target: "/v1/pull?since=0&signer=short", headers: account.holder.authorization)
        #expect(bad.status == 400 && bad.errorMessage.contains("signer"), "\(bad.text)")
    }

    /// After a genuine rotation, neither a token nor a machine that kept the
    /// old key (a revoked laptop) can roll it back: the old key is retired.
    @Test(arguments: StoreKind.allCases) func aRotationCannotBeRolledBack(_ kind: StoreKind) throws {
        let account = try Account(kind)
        let forward = Keys.certificate(
            account.uid, from: Keys.firstKey, by: Keys.firstSigner, to: Keys.secondKey, next: Keys.secondSigner)
        let rotated = try Keys.encrypt(
            account.holder, key: Keys.secondKey, signer: Keys.secondSigner, replacing: Keys.firstKey,
            certificates: [forward])
        #expect(rotated.status == 200 && rotated.text.contains(#""changed":true"#), "\(rotated.text)")
        // Back to the first key, certified by the second (only a holder of it could), or by the first (the revoked laptop).
        let back = Keys.certificate(
            account.uid, from: Keys.secondKey, by: Keys.secondSigner, to: Keys.firstKey, next: Keys.firstSigner)
        for certificates in [[back], []] {
            let answer = try Keys.encrypt(
                account.attacker, key: Keys.firstKey, signer: Keys.firstSigner, replacing: Keys.secondKey,
                certificates: certificates)
            #expect(answer.status == 409 && answer.errorCode == .keyRetired, "\(answer.text)")
        }
        // The revoked laptop's key pushes nothing (the account uses the second key).
        account.attacker.keyID = Keys.firstKey
        account.attacker.signingKey = Keys.firstSigner
        #expect(try account.attacker.push([Keys.sealed(account.attacker, "old")]).errorCode == .keyRotated)
        let page = try Wire.read(try account.holder.pull().text, PullResponse.init(reading:))
        #expect(page.keyID == Keys.secondKey && page.signingKey == Keys.publicKey(Keys.secondSigner))
    }

    /// An account encrypted before signed writes has no signing key: the
    /// first valid signed write registers one, and every pull names it, so a
    /// key holder compares (the client's side: SignedWriteFlowTests).
    @Test(arguments: StoreKind.allCases) func anAccountEncryptedBeforeSignedWritesTakesTheFirstSigningKey(
        _ kind: StoreKind
    ) throws {
        let account = try Account(kind)
        try Self.forgetSigningKey(account.fixture.store, account: "alice")
        #expect(try account.state().signingKey == "", "none registered")
        // The attacker registers its own: it is named in every answer, for the key holders to catch.
        #expect(try account.attacker.push([Keys.sealed(account.attacker, "first-use")]).status == 200)
        #expect(try account.state().signingKey == Keys.publicKey(account.attackerKey))
        // From then on, the holder's writes are refused with a mismatch (its alarm).
        account.holder.nextSequence = 2
        #expect(try account.holder.push([Keys.sealed(account.holder, "later")]).errorCode == .signingKeyMismatch)
        // The operator resets the account: not encrypted, records gone, the reset named; the key holder can encrypt it again.
        #expect(try account.fixture.store.resetEncryption(account: "alice"))
        let reset = try Wire.read(try account.holder.pull().text, PullResponse.init(reading:))
        #expect(!reset.encrypted && reset.encryptionReset && reset.changes.isEmpty, "\(reset)")
        #expect(try !account.fixture.store.resetEncryption(account: "alice"), "resetting twice changes nothing")
        // Encrypted again only on purpose (never by a machine's own sync); the reset key never again, a new one.
        #expect(
            try Keys.encrypt(account.holder, key: Keys.secondKey, signer: Keys.secondSigner).errorCode
                == .encryptionReset)
        #expect(try Keys.encrypt(account.holder, afterReset: true).errorCode == .keyRetired)
        #expect(
            try Keys.encrypt(account.holder, key: Keys.secondKey, signer: Keys.secondSigner, afterReset: true).status
                == 200)
        let again = try Wire.read(try account.holder.pull().text, PullResponse.init(reading:))
        #expect(again.encrypted && !again.encryptionReset && again.signingKey == Keys.publicKey(Keys.secondSigner))
    }

    /// What an account encrypted by an earlier brsyncd looks like: a key id, no signing key.
    static func forgetSigningKey(_ store: SyncStore, account: String) throws {
        try store.writing { transaction in
            guard let id = try transaction.accountID(named: account),
                let counters = try transaction.accountCounters(id)
            else { return }
            try transaction.setEncryption(
                account: id, Store.Encryption(keyID: counters.keyID, signingKey: "", retiredKeys: counters.retiredKeys))
        }
    }
}
