import Model
import Replica
import SyncCore

/// Pulling: pages applied one transaction each, and what a page can say
/// about the server's timeline (a new epoch or account, a reset, an
/// encrypted account).
extension SyncClient {
    /// Pulls every page after the cursor; each page and its cursor are applied
    /// in one transaction, so a client killed mid-pull resumes where it stopped.
    /// Pages in a row that may leave the cursor where it was (a restart, a
    /// reset) before a pull gives up: whatever the server answers, a pull ends.
    static let maxPagesWithoutProgress = 8

    @discardableResult
    public func pull() throws -> Summary {
        try lock.withLock {
            try prepareEncryption()
            var stalled = 0
            while true {
                let before = try replica.syncState().pullCursor
                guard try pullPage() else { return summary }
                stalled = try replica.syncState().pullCursor > before ? 0 : stalled + 1
                if stalled >= Self.maxPagesWithoutProgress {
                    throw SyncError.badAnswer("the server's pages do not move the cursor on (\(stalled) in a row at \(before))")
                }
            }
        }
    }

    /// Pulls and applies one page; returns whether more are waiting. (A client
    /// stopped between pages resumes from the stored cursor.) Records that
    /// cannot be used are reported and skipped; the rest is applied.
    public func pullPage() throws -> Bool {
        try lock.withLock { try pullPageLocked() }
    }

    private func pullPageLocked() throws -> Bool {
        var restarts = 0
        while true {
            let state = try replica.syncState()
            let reconciling = try replica.isReconciling()
            var target = "/v1/pull?since=\(state.pullCursor)&limit=\(options.pullLimit)"
            // Records this replica's own pushes made are skipped, when it proves
            // it made the stream's latest push (number and digest); while
            // reconciling, every record the server has must come.
            if reconciling {
                target += "&full=1" // the cursor passes below the purge point on the way
            } else if state.pushedThrough > 0, let digest = try replica.changeDigest(state.pushedThrough) {
                target += "&device=\(replica.deviceID)&pushed=\(state.pushedThrough)&digest=\(digest)"
            }
            if let keyID { target += "&key=\(keyID)" }
            if let epoch = state.epoch, epoch.utf8.allSatisfy({ ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x61 && $0 <= 0x7A) }) {
                target += "&epoch=\(epoch)"
            }
            let page = try fetchPage(target)
            let accountChanged = try replica.checkAccount(page.account)
            let epochChanged = accountChanged ? false : try handleEpoch(page.epoch)
            if accountChanged || epochChanged {
                // Another timeline: everything local goes up again before pulling from zero.
                restarts += 1
                guard restarts <= 3 else { throw SyncError.badAnswer("the server changed its epoch or account \(restarts) times during one pull") }
                if accountChanged { summary.fullResync = true }
                try push()
                continue
            }
            if page.reset {
                // The server purged a deletion this replica never pulled: start over from zero.
                restarts += 1
                guard restarts <= 3 else { throw SyncError.badAnswer("the server asked to start over \(restarts) times during one pull") }
                try replica.beginReconcile()
                summary.fullResync = true
                continue
            }
            if page.encrypted != (cipher != nil) {
                guard cipher != nil else { throw Self.keyNeeded }
                // A key, and a readable account: the server was restored from
                // before the switch. It is encrypted again, every record sent.
                restarts += 1
                guard restarts <= 3 else { throw SyncError.badAnswer("the server keeps its account readable after it was encrypted (\(restarts) times during one pull)") }
                try replica.requireEncryptedRelay()
                try prepareEncryption()
                continue
            }
            for (sequence, reason) in page.unusable {
                summary.problems.append("set aside record #\(sequence) from the server: \(reason)")
            }
            var changes = page.changes
            if let cipher {
                // A record that does not open is set aside, named; the rest of the page is applied.
                changes = page.changes.compactMap { change in
                    // A record with no field holds nothing to open or apply.
                    if change.state.fields.isEmpty { return nil }
                    do { return try cipher.open(change) } catch {
                        summary.problems.append("set aside record #\(change.sequence) from the server: \(error)")
                        return nil
                    }
                }
            }
            let started = Replica.systemNow()
            summary.applied += try replica.applyPulled(changes, cursor: page.next, epoch: page.epoch, skipped: &summary.problems)
            summary.applyMilliseconds += Replica.systemNow() - started
            summary.pulled += page.changes.count
            pulledSoFar += page.changes.count
            if !page.changes.isEmpty { progress?("pulled", pulledSoFar, nil) }
            if !page.more && reconciling { summary.dropped += try replica.finishReconcile() }
            return page.more
        }
    }

    /// A new server epoch (the server was restored or reset): start over,
    /// and relay every record held, so nothing a client holds is lost.
    func handleEpoch(_ epoch: String) throws -> Bool {
        let known = try replica.syncState().epoch
        guard let known, known != epoch else {
            if known == nil { try replica.startNewEpochIfFirst(epoch) }
            return false
        }
        try replica.startNewEpoch(epoch)
        summary.fullResync = true
        try relayEverything()
        return true
    }
}
