import Cryptography
import Foundation
import HTTP
import JSON
import Storage
import SyncCore
import TestSupport
import Testing

@testable import BrsyncServer
@testable import ServerStore

/// The switch to sealed format 2 (docs/sealed-format-v2.md, "Older clients
/// and the switch"), on the server: each device's protocol is kept, an
/// encrypted account is marked once every device seen lately speaks
/// protocol 6, its pulls then say so, and an older client is told to
/// upgrade before anything is read or written.
@Suite struct SealedFormatMarkTests {
    typealias Accounts = EncryptedAccountTests

    /// The page a pull answers, read.
    static func page(_ device: TestDevice) throws -> PullResponse {
        let response = try device.pull()
        #expect(response.status == 200, "\(response.text)")
        return try Wire.read(response.text, PullResponse.init(reading:))
    }

    static func protocols(_ fixture: ServerFixture, _ account: String) throws -> [String: Int] {
        let id = try #require(try fixture.store.accounts().first { $0.name == account }?.id)
        return try fixture.store.reading { transaction in
            try transaction.devices(account: id).reduce(into: [:]) { $0[$1.name] = $1.clientProtocol }
        }
    }

    @Test(arguments: StoreKind.allCases) func anAccountTurnsToFormat2OnceEveryRecentDeviceSpeaksIt(
        _ kind: StoreKind
    ) throws {
        let fixture = try ServerFixture(kind)
        let (laptop, desktop) = try Accounts.encryptedAccount(fixture)
        desktop.signingKey = Accounts.firstSigner // a key holder too: its pulls are signed
        // A device added but never used, and one revoked, hold nothing back.
        _ = try fixture.device("alice", "unused")
        let old = try fixture.device("alice", "old", protocol: Wire.withdrawalProtocol)
        #expect(try Self.page(old).sealedFormat == .one)
        try fixture.store.revokeDevice(account: "alice", name: "old")

        laptop.protocolVersion = Wire.withdrawalProtocol
        desktop.protocolVersion = Wire.withdrawalProtocol
        #expect(try Self.page(laptop).sealedFormat == .one)
        #expect(try Self.page(desktop).sealedFormat == .one)
        #expect(try Self.protocols(fixture, "alice")["laptop"] == 5)

        // The laptop upgrades: the desktop, seen lately at 5, holds the account in format 1.
        laptop.protocolVersion = Wire.sealedFormatProtocol
        #expect(try Self.page(laptop).sealedFormat == .one)
        #expect(try Self.page(laptop).sealedFormat == .one)
        #expect(try Self.protocols(fixture, "alice")["laptop"] == 6)

        // The desktop upgrades: the account is marked, and every pull says so from then on.
        desktop.protocolVersion = Wire.sealedFormatProtocol
        _ = try Self.page(desktop)
        #expect(try Self.page(desktop).sealedFormat == .two)
        #expect(try Self.page(laptop).sealedFormat == .two)
        let raw = try laptop.pull()
        #expect(raw.text.contains(#""sealedFormat":2"#), "\(raw.text)")

        // An older client is told to upgrade, with the date, and reads or writes nothing.
        laptop.protocolVersion = Wire.withdrawalProtocol
        let refused = try laptop.pull()
        #expect(refused.status == 409 && refused.errorCode == .upgradeRequired, "\(refused.text)")
        #expect(refused.errorMessage.contains("sealed in format 2 since 20"), "\(refused.errorMessage)")
        let push = try laptop.push([Accounts.sealed(laptop, "late")])
        #expect(push.status == 409 && push.errorCode == .upgradeRequired, "\(push.text)")
        laptop.protocolVersion = Wire.sealedFormatProtocol
        #expect(try Self.page(laptop).changes.isEmpty, "the older client's push applied nothing")
        // The mark stays: a device speaking 5 again does not undo it.
        #expect(try Self.page(desktop).sealedFormat == .two)
    }

    /// A readable account is never marked, and its pulls never carry the field.
    @Test(arguments: StoreKind.allCases) func aReadableAccountStaysFormat1(_ kind: StoreKind) throws {
        let fixture = try ServerFixture(kind)
        let phone = try fixture.device("bob", "phone", protocol: Wire.sealedFormatProtocol)
        #expect(try Self.page(phone).sealedFormat == .one)
        #expect(!(try phone.pull().text.contains("sealedFormat")))
        phone.protocolVersion = Wire.withdrawalProtocol
        #expect(try phone.pull().status == 200)
    }

    /// Only devices seen in the last 30 days count: one dormant longer does
    /// not hold the account back (it meets `upgrade_required` on its return).
    @Test(arguments: StoreKind.allCases) func aDormantDeviceDoesNotHoldTheAccountBack(_ kind: StoreKind) throws {
        let fixture = try ServerFixture(kind)
        let (laptop, desktop) = try Accounts.encryptedAccount(fixture)
        desktop.protocolVersion = Wire.withdrawalProtocol
        _ = try Self.page(desktop)
        laptop.protocolVersion = Wire.sealedFormatProtocol
        _ = try Self.page(laptop)
        let account = try #require(try fixture.store.accounts().first { $0.name == "alice" }?.id)
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        // Checked as of 29 days on, the desktop was seen within the window; as of 31, it was not.
        for (days, marked) in [(29, false), (31, true)] {
            let later = now + Int64(days) * 86_400_000
            let done = try fixture.store.writing(account: account) {
                try $0.markSealedFormat(account: account, now: later, seenSince: later - Wire.sealedFormatWindowMillis)
            }
            #expect(done == marked, "\(days) days on")
        }
        fixture.store.changed(account) // as a request that marks it does: cached reads of its devices are stale
        desktop.protocolVersion = Wire.withdrawalProtocol
        let back = try desktop.pull()
        #expect(back.status == 409 && back.errorCode == .upgradeRequired, "\(back.text)")
    }

    /// A token alone (a stolen or photographed device token, without the
    /// account key) cannot mark the account ahead of its device: a pull
    /// saying protocol 6 unsigned, or signed with another key, counts as the
    /// device's last signed word (an older brsync's device would then be
    /// locked out by `upgrade_required`). Saying an older protocol still
    /// counts: a token can hold the account in format 1, as the device
    /// itself would by running an older brsync.
    @Test(arguments: StoreKind.allCases) func aTokenAloneCannotMarkTheAccount(_ kind: StoreKind) throws {
        let fixture = try ServerFixture(kind)
        let (laptop, desktop) = try Accounts.encryptedAccount(fixture)
        desktop.signingKey = Accounts.firstSigner
        desktop.protocolVersion = Wire.withdrawalProtocol
        _ = try Self.page(desktop)
        laptop.protocolVersion = Wire.sealedFormatProtocol
        #expect(try Self.page(laptop).sealedFormat == .one)
        #expect(try Self.protocols(fixture, "alice")["desktop"] == 5)

        // The desktop's token, without its key: unsigned, then signed by a key of the thief's own.
        let thief = TestDevice(client: desktop.client, token: desktop.token, deviceID: desktop.deviceID)
        thief.protocolVersion = Wire.sealedFormatProtocol
        for signer in [nil, Crypto.SigningKey(seed: Array(repeating: 7, count: 32))] {
            thief.signingKey = signer
            #expect(try Self.page(thief).sealedFormat == .one)
            #expect(try Self.protocols(fixture, "alice")["desktop"] == 5)
        }
        var malformed = thief.authorization
        malformed.add(WriteSignature.header, "not a signature")
        let refused = try thief.client.send(method: "GET", target: "/v1/pull?since=0", headers: malformed)
        #expect(refused.status == 400, "\(refused.text)")

        // Saying less is taken unsigned: the laptop's token holds the account back.
        let laptopThief = TestDevice(client: laptop.client, token: laptop.token, deviceID: laptop.deviceID)
        laptopThief.protocolVersion = Wire.withdrawalProtocol
        _ = try Self.page(laptopThief)
        #expect(try Self.protocols(fixture, "alice")["laptop"] == 5)

        // The devices themselves, signed, move it on.
        desktop.protocolVersion = Wire.sealedFormatProtocol
        _ = try Self.page(desktop)
        _ = try Self.page(laptop)
        #expect(try Self.page(laptop).sealedFormat == .two)
    }

    /// What devices said unsigned while their account was readable counts
    /// no more than protocol 5 once it is encrypted (re-review of format 2,
    /// F3): a token that said 6 then cannot mark the account ahead of its
    /// device; each key holder's next signed pull says 6 again. (A device
    /// read at 5 that wrote 6 just before the switch is remembered at 6 by
    /// this process for up to a minute: its signed 6 is written then.)
    @Test(arguments: StoreKind.allCases) func protocolsSaidWhileReadableCountNoMoreOnceEncrypted(
        _ kind: StoreKind
    ) throws {
        let fixture = try ServerFixture(kind)
        let laptop = try fixture.device("alice", "laptop", protocol: Wire.sealedFormatProtocol)
        let desktop = try fixture.device("alice", "desktop", protocol: Wire.sealedFormatProtocol)
        _ = try Self.page(laptop)
        _ = try Self.page(desktop)
        #expect(try Self.protocols(fixture, "alice") == ["laptop": 6, "desktop": 6])
        laptop.keyID = Accounts.firstKey
        laptop.signingKey = Accounts.firstSigner
        #expect(try Accounts.encrypt(laptop).status == 200)
        #expect(try Self.protocols(fixture, "alice") == ["laptop": 5, "desktop": 5])

        // The desktop's token, unsigned, says 6 again: not counted.
        #expect(try Self.page(desktop).sealedFormat == .one)
        #expect(try Self.page(laptop).sealedFormat == .one)
        #expect(try Self.protocols(fixture, "alice") == ["laptop": 6, "desktop": 5])

        // Signed by the account's key, it counts, and the account is marked.
        desktop.signingKey = Accounts.firstSigner
        _ = try Self.page(desktop)
        #expect(try Self.protocols(fixture, "alice") == ["laptop": 6, "desktop": 6])
        #expect(try Self.page(laptop).sealedFormat == .two)
    }

    /// A store from before signed protocols: in an encrypted account not
    /// yet marked, every device counts as protocol 5 after the upgrade;
    /// a marked or readable account's devices keep theirs.
    @Test func aStoreFromBeforeSignedProtocolsCapsThem() throws {
        let directory = try TemporaryDirectory(prefix: "brsyncd-protocols")
        defer { directory.remove() }
        let path = directory.file("store.sqlite")
        do {
            let database = try Database(path: path, mode: .readWriteCreate)
            try database.execute("PRAGMA application_id = \(SQLiteDialect.applicationID)")
            // Every step before the one capping protocols (the next to last).
            try Migrator(Array(StoreSchema.sqlite.migrations.dropLast(2))).migrate(database)
            for (id, name, encrypted, format) in [(1, "sealed", 1, 1), (2, "marked", 1, 2), (3, "readable", 0, 1)] {
                try database.execute(
                    """
                    INSERT INTO accounts (id, name, uid, next_seq, purged_through, stamp_high, created_at, key_id, epoch, encrypted, sealed_format)
                    VALUES (\(id), '\(name)', '\(id)123456789abcdef', 1, 0, 0, 0, '\(encrypted == 1 ? "k" : "")', 'e', \(encrypted), \(format));
                    INSERT INTO devices (id, account_id, name, token_hash, revoked, created_at, protocol)
                    VALUES (\(id), \(id), 'laptop', X'0\(id)', 0, 0, 6);
                    """)
            }
        }
        let store = try SyncStore(sqlite: path)
        store.close()
        let protocols = try Database(path: path).query("SELECT account_id, protocol FROM devices ORDER BY account_id") {
            "\($0.int64(0) ?? 0):\($0.int64(1) ?? 0)"
        }
        #expect(protocols == ["1:5", "2:6", "3:6"])
    }
}
