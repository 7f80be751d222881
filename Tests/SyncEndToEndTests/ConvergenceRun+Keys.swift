import BrsyncServer
import Foundation
import Replica
import SyncClient
import SyncCore
import Testing

/// Key changes in an end-to-end encrypted run: rotations (through the faulty
/// proxy, so some stop half way), rotations killed right after the server
/// took them, and machines adding the newest code late. With the restores,
/// purges, copies and clock jumps of the run around them, no acknowledged
/// edit may be lost and every machine must go on.
extension Run {
    /// The key the account uses now (nil before the first sync encrypts it).
    func serverKey() -> AccountKey? {
        for machine in machines {
            guard let device = try? store.authenticate(token: machine.token) else { continue }
            return device.accountEncrypted ? keys[device.accountKeyID] : nil
        }
        return nil
    }

    /// `brsync key init` on `machine` (through the faulty proxy), with the
    /// run's account key.
    func initialise(_ machine: SimulatedMachine, direct: Bool = false) {
        guard let accountKey else { return }
        _ = try? client(machine, direct: direct).changeAccountKey(to: accountKey, despiteHeldChecks: true) { _ in }
        acknowledge(machine)
        if serverKey() == accountKey {
            newestKey = accountKey
            note("accounts encrypted during the run")
        }
    }

    /// One key operation on `machine`, as a person would run it.
    func keyOperation(_ machine: SimulatedMachine) throws {
        let home = machine.replica.home
        let holds = (try? AccountKeyFile.read(home: home))?.id
        guard let current = serverKey() else { return }
        if ProcessInfo.processInfo.environment["BRSYNC_MODEL_DEBUG"] != nil {
            print(
                "DEBUG key operation on \(machine.name): holds \(holds?.prefix(8) ?? "-"), the server's \(current.id.prefix(8))"
            )
        }
        switch Int.random(in: 0..<4, using: &random) {
        case 0 where holds == current.id:
            // `brsync key rotate --yes` (a held check does not stop it here).
            let key = AccountKey.generate()
            keys[key.id] = key
            _ = try? client(machine).changeAccountKey(to: key, despiteHeldChecks: true) { _ in }
            if serverKey() == key { newestKey = key }
            acknowledge(machine)
            note("key rotations")
        case 1 where holds == current.id:
            // A rotation killed right after the server took it: the key is
            // pending here, nothing relayed; the machine's next sync settles it.
            let key = AccountKey.generate()
            keys[key.id] = key
            try AccountKeyFile.write(key, home: home, pending: true)
            let client = try self.client(machine, direct: true)
            _ = try? client.sync()
            acknowledge(machine)
            _ = try? client.rotateAccount(to: key, seen: machine.replica.syncState().pullCursor)
            if serverKey() == key { newestKey = key }
            note("rotations killed after the server took them")
        default:
            // `brsync key add`, late, of the code the account uses (the one it takes).
            guard holds != current.id else { return }
            try AccountKeyFile.add(current, home: home)
            note("keys added late")
        }
    }

    /// Before the final syncs: each machine has the chance to move a restored
    /// server forward by itself; then a machine that still cannot sync gets
    /// the code the account uses (a person adds it where a sync said so, and
    /// `brsync key add` takes only that one).
    /// A stop that the account's current code ends: the server's refusal,
    /// or this machine's own mark (it saw the account encrypted, or its key retired).
    static func waitsForACode(_ error: SyncError) -> Bool {
        switch error {
        case .refused(let code, _), .stopped(let code, _):
            return [.noAccountKey, .encryptionRequired, .keyRotated, .keyRetired].contains(code)
        default: return false
        }
    }

    /// After a step: when it moved a server restored from before a rotation
    /// forward (the server's key became the newest one the run already
    /// had), the server dropped what it held under the old key unread.
    /// Writers in use send theirs again; what only a machine gone wrote, and
    /// no machine in use holds, went with it (SECURITY.md, "What is left").
    /// So did what a writer wrote before its home was replaced by an older
    /// copy of itself (the copy goes by its id but keeps none of it) and
    /// nobody else holds.
    func afterPossibleMoveForward(keyBefore: String?, newestBefore: String?) {
        guard let now = serverKey()?.id, now != keyBefore, now == newestBefore,
            !gone.isEmpty || !restoredHomeIDs.isEmpty
        else { return }
        let inUse = Set(machines.map(\.replica.deviceID)).subtracting(restoredHomeIDs)
        let heldNow = heldByMachinesInUse()
        let kept = mustSurvive.filter { inUse.contains($0.stamp.device) || heldNow.contains($0) }
        if kept.count < mustSurvive.count {
            note("edits held by nobody (a machine gone, a home put back), dropped with a restored server's old key")
        }
        mustSurvive = kept
    }

    func settleKeys() throws {
        guard accountKey != nil else { return }
        for machine in machines where newestKey == nil { initialise(machine, direct: true) }
        #expect(newestKey != nil, "no machine could encrypt the account, seed \(seed)")
        // Until a round adds no code and leaves the server's key as it was: a
        // code added lets that machine encrypt the account again (after a
        // restore from before `key init`) or move a restored server forward
        // at its next sync, which the machines before it in the round learn
        // only at theirs.
        for round in 0..<6 {
            var added = false
            let keyBefore = serverKey()?.id
            for machine in machines {
                let (keyBefore, newestBefore) = (serverKey()?.id, newestKey?.id)
                defer { afterPossibleMoveForward(keyBefore: keyBefore, newestBefore: newestBefore) }
                do { _ = try client(machine, direct: true).sync() } catch let error as SyncError
                    where Self.waitsForACode(error)
                {
                    // A machine that saw its key retired is given the newest code (a server
                    // restored from before still names the retired one: this machine moves it forward).
                    // A server restored from before `key init`, with no key holder left to encrypt it
                    // again, is readable: the person adds the code they were given last.
                    // So is one whose writes the server refuses under a retired key.
                    // A machine that raised the alarm (a server restored from before a rotation
                    // was rotated by a machine that kept the old key, and then maybe moved forward
                    // along the other branch) is given the code the account uses: every rotation
                    // in this run is the person's own, so they made that code themselves.
                    let retired: Bool, alarm: Bool
                    switch error {
                    case .stopped(code: .keyRotated, let message):
                        (retired, alarm) = (true, message.hasPrefix("ALARM"))
                    case .refused(code: .keyRetired, _): (retired, alarm) = (true, false)
                    default: (retired, alarm) = (false, false)
                    }
                    guard let current = alarm ? serverKey() : retired ? newestKey : serverKey() ?? newestKey else {
                        continue
                    }
                    if alarm { note("alarms of a rotation on a restored server, ended by the code the person made") }
                    try AccountKeyFile.add(current, home: machine.replica.home)
                    added = true
                    note("codes added before the final syncs")
                } catch {}
                acknowledge(machine)
            }
            if round > 0, !added, serverKey()?.id == keyBefore { break }
        }
    }
}
