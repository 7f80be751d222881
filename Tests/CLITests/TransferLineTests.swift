import SyncClient
import Testing

@testable import Replica
@testable import SyncCommands

/// The line a sync says, in a terminal and in the settings window: the
/// same facts, and where to act on them (a command, or a page and its button).
@Suite struct TransferLineTests {
    @Test func theWindowsLineNamesItsPagesWhereTheTerminalsNamesCommands() {
        var summary = SyncClient.Summary()
        summary.pushed = 1
        summary.conflicts = 2
        summary.removed = [RemovedRecord(id: 4, collection: "rules", key: "a.example")]
        summary.awaitingApproval = ["work": "its arguments are not ones synced data may choose"]
        let commands = Transfer.line(summary, "sync")
        #expect(
            commands.contains("2 value(s) lost to concurrent edits ('brsync log --conflicts' shows them")
                && commands.contains("'brsync restore --removed ID' brings one back")
                && commands.contains("'brsync browsers approve work' shows what it would run"), "\(commands)")
        let window = Transfer.line(summary, "sync", wording: .window)
        #expect(
            window.contains("2 value(s) lost to concurrent edits (Needs you, on the Sync page, lists them")
                && window.contains("rules 'a.example' (#4)") && window.contains("Approve…")
                && !window.contains("'brsync"), "\(window)")
    }

    /// What a sync says besides its counts (what `brsync watch` logs a sync
    /// for, as `brsync sync` says it): nothing for a sync that only moved
    /// records; a joined account, a re-sync, a new key each say so.
    @Test func aSyncSaysMoreThanItsCountsOnlyWhenSomethingHappened() {
        var summary = SyncClient.Summary()
        summary.pushed = 3
        summary.pulled = 2
        summary.applied = 2
        #expect(Transfer.notes(summary).isEmpty)
        #expect(Transfer.line(summary, "sync") == "sync: pushed 3 change(s), pulled 2 record(s), 2 changed here")
        for change in [\SyncClient.Summary.accountChanged, \.fullResync, \.encryptionStarted, \.encryptionEnded] {
            var moved = SyncClient.Summary()
            moved[keyPath: change] = true
            let notes = Transfer.notes(moved)
            #expect(notes.count == 1, "\(change)")
            #expect(Transfer.line(moved, "sync").hasSuffix(", " + (notes.first ?? "")))
        }
        var joined = SyncClient.Summary()
        joined.accountChanged = true
        #expect(Transfer.notes(joined).first?.contains("it joined that account as a new machine") == true)
    }

    /// `brsync doctor` on a home pointed at another account: with a key, it
    /// says the next sync stops; without, that it joins.
    @Test func doctorSaysWhatASwitchWillDo() throws {
        let withKey = try #require(Doctor.ownChain(.otherAccount, holdsKey: true))
        #expect(withKey.detail.contains("other_account") && withKey.fix?.contains("remote set") == true)
        let without = try #require(Doctor.ownChain(.otherAccount, holdsKey: false))
        #expect(without.detail.contains("joins that account as a new machine"))
    }

    /// A kept stop that waits for a key or a token names what settles it,
    /// not the part that stopped (run again, it would stop the same way).
    @Test func doctorNamesWhatSettlesAKeptStop() {
        func fix(_ code: String?, _ part: SyncPart = .pull) -> String {
            Doctor.fix(for: KeptProblem(part: part, message: "m", atMillis: 1, code: code))
        }
        #expect(fix("encrypted").hasPrefix("brsync key add") && fix("encryption_required").hasPrefix("brsync key add"))
        #expect(fix("other_account").contains("remote set") && fix("key_rotated").contains("key add"))
        #expect(fix("revoked").contains("join --replace") && fix("revoked").contains("remote set"))
        #expect(fix("encryption_reset").contains("key init"))
        #expect(fix("busy") == "brsync pull (the message says what else to do)")
        #expect(fix("quota_exceeded").contains("raise the account's limit"))
        // Moved to a readable account (or reset): the key it waits for is no more; forgetting the mark is the fix.
        let readable = Doctor.fix(
            for: KeptProblem(part: .sync, message: "m", atMillis: 1, code: "encrypted"), accountReadable: true)
        #expect(readable.hasPrefix("brsync key forget"))
        #expect(fix(nil, .push) == "brsync push (the message says what else to do)")
    }

    /// `key forget` on a keyless home: moved to another account, it says so;
    /// on the same account (or not known), the operator reset it.
    @Test func forgetSaysWhetherTheAccountMovedOrWasReset() {
        let moved = AccountKeys.Forgotten.markClearedText(seen: "aaaa", now: "bbbb")
        #expect(moved.contains("another account (bbbb)") && moved.contains("(aaaa)") && !moved.contains("reset"))
        for (seen, now) in [("aaaa", "aaaa"), (nil, "bbbb"), ("aaaa", nil)] as [(String?, String?)] {
            #expect(AccountKeys.Forgotten.markClearedText(seen: seen, now: now).contains("its operator reset it"))
        }
    }
}
