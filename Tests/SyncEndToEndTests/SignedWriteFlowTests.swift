import BrsyncServer
import Cryptography
import Model
import Postgres
import Replica
import Storage
import SyncClient
import SyncCore
import TestSupport
import Testing

/// Signed writes as the machines live them: a key holder catches a signing
/// key it did not register, the operator resets the account, and the
/// machines come back without losing an edit; a token holder who encrypts a
/// readable account is named by the machines it locks out.
@Suite struct SignedWriteFlowTests {
    /// What someone holding a device token of the account (not the key) does
    /// to an account encrypted before signed writes: signs a key change with
    /// a key of its own, so the server takes that key first.
    static func claim(
        _ world: SyncWorld, account: String, key: AccountKey, with token: String
    ) throws -> Crypto.SigningKey {
        let bogus = Crypto.SigningKey(seed: Crypto.randomBytes(32))
        let request = EncryptRequest(keyID: key.id, publicKey: Crypto.base64URL(bogus.publicKey))
        let device = try world.store.authenticate(token: token)
        // The server verifies the request is signed with the key it names: it is (the bogus one).
        _ = try world.store.encryptAccount(
            of: device, request,
            authority: try .signed(
                by: bogus, token: token, path: "/v1/account/encrypt",
                body: request.body))
        return bogus
    }

    @Test(arguments: StoreKind.allCases) func aSigningKeyNobodyHereRegisteredStopsEveryKeyHolder(
        _ kind: StoreKind
    ) throws {
        let world = try SyncWorld(kind)
        let (a, b) = (try world.machine("a"), try world.machine("b"))
        try KeyChangeTests.rule(a, "a-rule.com")
        let key = try KeyChangeTests.shareNewKey(world, from: a, with: [b])
        // An account encrypted by an earlier brsyncd: no signing key yet. The token holder registers one first.
        try world.runSQL("UPDATE accounts SET signing_key = ''")
        let stolen = try world.machine("stolen")
        _ = try Self.claim(world, account: "alice", key: key, with: stolen.token)
        try KeyChangeTests.rule(b, "b-after.com")
        for machine in [a, b] {
            let unpushed = try machine.replica.unpushedCount()
            #expect {
                try world.sync(machine)
            } throws: { error in
                guard case SyncError.refused(let code, let message) = error else { return false }
                return code == .signingKeyMismatch && message.contains("ALARM") && message.contains("reset-encryption")
            }
            #expect(try machine.replica.unpushedCount() == unpushed, "nothing was sent")
        }
        // A machine joining with the right code is told too, and keeps no code.
        let fresh = try world.machine("fresh")
        #expect(throws: SyncError.self) { try world.client(fresh).checkKey(key) }
    }

    /// The operator resets the account's encryption: every machine that
    /// holds the key stops (and stays stopped) with what to do; one runs
    /// `key init` with a new key, the others add its code, and every rule,
    /// even one only a stopped machine held, reaches a new machine.
    @Test(arguments: StoreKind.allCases) func anOperatorsResetLosesNoEdit(_ kind: StoreKind) throws {
        let world = try SyncWorld(kind)
        let (a, b, c) = (try world.machine("a"), try world.machine("b"), try world.machine("c"))
        try KeyChangeTests.rule(a, "a-rule.com")
        let key = try KeyChangeTests.shareNewKey(world, from: a, with: [b, c])
        // pushed, then the reset deletes it from the server before anyone pulls it
        try KeyChangeTests.rule(c, "c-only.com")
        try world.sync(c)
        try KeyChangeTests.rule(b, "b-unpushed.com")
        #expect(try world.store.resetEncryption(account: "alice"))
        for machine in [a, b, a] {
            #expect {
                try world.sync(machine)
            } throws: { error in
                guard case SyncError.refused(let code, let message) = error else { return false }
                return code == .encryptionReset && message.contains("brsync key init")
            }
        }
        #expect(try Self.readableRecordsOnServer(world) == 0, "nothing went up readable")
        // `brsync key init` on a: a new key (the reset one is retired); a's records go up sealed.
        try a.replica.clearEncryptionReset()
        let next = AccountKey.generate()
        _ = try world.client(a).changeAccountKey(to: next, afterReset: true) { _ in }
        #expect(try AccountKeyFile.read(home: a.replica.home) == next)
        // b, stopped, and c, which never saw the reset, add the new code and send what they hold.
        for machine in [b, c] {
            #expect(throws: SyncError.self) { try world.sync(machine) } // the key changed: the new code is needed
            try KeyChangeTests.addKey(world, machine, next)
        }
        for machine in [a, b, c, a] { try world.sync(machine) }
        let expected = ["a-rule.com", "b-unpushed.com", "c-only.com"]
        for machine in [a, b, c] {
            #expect(try SyncWorld.rules(machine.replica).keys.sorted() == expected, "\(machine.name)")
        }
        #expect(try KeyChangeTests.freshRules(world, key: next) == expected)
        // The reset key is never taken again.
        #expect(throws: SyncError.self) { try world.client(a).encryptAccount(with: key, replacing: next.id) }
    }

    /// Every key lost: the machines forget it, the operator resets the
    /// account, and each machine sends what it holds, readable. One that
    /// syncs readable after a reset, then stops for good, keeps its edit:
    /// `key init` on another machine takes it in before encrypting again.
    @Test(arguments: StoreKind.allCases) func aResetAfterEveryKeyWasLostLosesNoEdit(_ kind: StoreKind) throws {
        let world = try SyncWorld(kind)
        let (a, b, c) = (try world.machine("a"), try world.machine("b"), try world.machine("c"))
        try KeyChangeTests.rule(a, "a-rule.com")
        try KeyChangeTests.shareNewKey(world, from: a, with: [b])
        try KeyChangeTests.rule(b, "b-rule.com")
        try world.sync(b)
        try world.sync(a)
        for machine in [a, b] { AccountKeyFile.remove(home: machine.replica.home) } // lost
        #expect(try world.store.resetEncryption(account: "alice"))
        for machine in [a, b] {
            let summary = try world.sync(machine) // readable now, everything sent
            #expect(summary.encryptionEnded && summary.newDeviceID != nil, "\(summary)")
        }
        // Syncing on from there is plain: no copy is suspected, no other id taken.
        try KeyChangeTests.rule(b, "b-after.com")
        let plain = try world.sync(b)
        #expect(plain.newDeviceID == nil && !plain.encryptionEnded, "\(plain)")
        try world.sync(a)
        #expect(try KeyChangeTests.freshRules(world, key: nil) == ["a-rule.com", "b-after.com", "b-rule.com"])
        // c, never encrypted, syncs an edit readable, then is never seen again.
        try KeyChangeTests.rule(c, "c-rule.com")
        try world.sync(c)
        // a encrypts the account again (a new key): c's edit is taken in first, and goes up sealed.
        let next = AccountKey.generate()
        _ = try world.client(a).changeAccountKey(to: next, afterReset: true) { _ in }
        #expect(
            try KeyChangeTests.freshRules(world, key: next) == [
                "a-rule.com", "b-after.com", "b-rule.com", "c-rule.com",
            ])
    }

    /// `brsync key forget` after a reset: the machine syncs readable, and
    /// sends every record it holds.
    @Test func forgettingTheKeyAfterAResetSyncsReadable() throws {
        let world = try SyncWorld()
        let a = try world.machine("a")
        try KeyChangeTests.rule(a, "a-rule.com")
        _ = try KeyChangeTests.changeKey(world, a)
        #expect(try world.store.resetEncryption(account: "alice"))
        #expect(throws: SyncError.self) { try world.sync(a) }
        AccountKeyFile.remove(home: a.replica.home)
        try a.replica.endEncryptedSync()
        try world.sync(a)
        #expect(try KeyChangeTests.freshRules(world, key: nil) == ["a-rule.com"])
    }

    /// A token holder encrypts a readable account with a key of its own:
    /// every machine is locked out, and each says what may have happened.
    @Test func aMachineLockedOutByAnEncryptionItDidNotAskForSaysSo() throws {
        let world = try SyncWorld()
        let a = try world.machine("a")
        try KeyChangeTests.rule(a, "a-rule.com")
        try world.sync(a)
        let stolen = try world.machine("stolen")
        _ = try KeyChangeTests.changeKey(world, stolen)
        #expect {
            try world.sync(a)
        } throws: { error in
            guard case SyncError.refused(let code, let message) = error else { return false }
            return code == .noAccountKey
                && message.contains("If no machine of yours turned encryption on ('brsync key init'")
        }
        #expect(try SyncWorld.rules(a.replica).keys.sorted() == ["a-rule.com"], "the rules stay here")
    }

    static func readableRecordsOnServer(_ world: SyncWorld) throws -> Int {
        try world.store.records(account: "alice").filter { !Wire.looksSealed($0) && !$0.state.fields.isEmpty }.count
    }
}

extension SyncWorld {
    /// Runs `sql` on the server's database as an operator (or an earlier
    /// brsyncd) could: what no API does.
    func runSQL(_ sql: String) throws {
        switch host.place {
        case .postgres(let cluster, let database):
            let connection = try PostgresConnection(
                try PostgresConfiguration(url: cluster.url(database: database), password: cluster.password))
            try connection.execute(sql)
        case .sqlite(let path):
            try Database(path: path).execute(sql)
        }
    }
}
