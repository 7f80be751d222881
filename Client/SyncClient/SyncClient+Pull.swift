import JSON
import Model
import Net
import Replica
import SyncCore
import SystemServices

/// Pulling: pages applied one transaction each, and what a page can say
/// about the server's timeline (a new epoch or account, a reset, an
/// encrypted account).
extension SyncClient {
    /// Pulls every page after the cursor; each page and its cursor are applied
    /// in one transaction, so a client killed mid-pull resumes where it stopped.
    /// Pages in a row that may leave the cursor where it was (a restart, a
    /// reset) before a pull gives up: whatever the server answers, a pull ends.
    static let maxPagesWithoutProgress = 8
    /// Pages in a row that change nothing here before a pull stops: an
    /// honest server sends them when it skips records this machine pushed
    /// itself, or on a full pull of what this machine holds already (512
    /// pages are 256,000 records); a lying one could move the cursor by one
    /// forever, with no record or the same one again.
    static let maxIdlePages = 512

    @discardableResult
    public func pull() throws -> Summary {
        try locked { try runAlone(.pull) }
    }

    /// Where the server holds this replica's own stream of changes, asked
    /// with a pull of one record that changes nothing on either side
    /// (``PullRequest/chainOf``): this replica's chain, behind it (a restored
    /// server), ahead of what it was told (a lost answer), another home's
    /// under the same id, or unknown (a server that does not say).
    public func ownChainStanding() throws -> ChainEcho.Standing {
        try locked { try chainStanding() }
    }

    /// ``ownChainStanding()``, holding the lock.
    func chainStanding() throws -> ChainEcho.Standing {
        let page = try fetchPage(PullRequest(limit: 1, chainOf: replica.deviceID).target)
        if !page.account.isEmpty, let known = try replica.syncState().account, !known.isEmpty, known != page.account {
            return .otherAccount
        }
        guard let chain = page.chain else { return .unknown }
        let pushedThrough = try replica.syncState().pushedThrough
        return try chain.standing(pushedThrough: pushedThrough) { try storedChain($0) }
    }

    /// How a pull phase ended.
    enum PullEnd {
        /// At the server's head (or, pulling one page, no more waiting).
        case atHead
        /// One page pulled, and more are waiting.
        case more
        /// Another timeline (a new account or epoch): what is local goes up
        /// first, then the pull starts over (``SyncMachine``).
        case timelineChanged
    }

    /// Pulls and applies pages up to the server's head, each in one
    /// transaction with its cursor, then checks what the head shows (the
    /// ledgers, records set aside); with `onePage`, one page only.
    /// Holding the lock, the server brought in line before.
    func pullPhase(onePage: Bool) throws -> PullEnd {
        // A pull keeps the heavier of two boxes of a stamp: boxes kept before they had weights get theirs first.
        try weighKeptBoxes()
        // The next page, fetched (and opened) on a thread of its own while
        // this one applies the page before. It is waited for on every way
        // out: the connection is only this thread's again after that.
        // The server takes the cursor of a request as pulled, so it counts
        // a page pulled a little before it is applied; a client stopped
        // in between asks for that page again, and if a tombstone purge
        // passed it meanwhile the server says `reset` (the cursor is below
        // its purge point) and the replica reconciles: nothing is missed.
        var ahead: PrefetchedPage?
        defer { if let ahead { try? takeIn(ahead.job.wait().exchange.countsOnly) } }
        var spent: FetchedPage?
        if onePage {
            switch try pullPageLocked(ahead: &ahead, spent: &spent, fetchAhead: false) {
            case .applied(let more): return more ? .more : .atHead
            case .pushFirst: return .timelineChanged
            }
        }
        // What the pages store, kept for the ledger checks at the head (they need not read it back).
        if options.checksLedgers, cipher != nil { try replica.keepStoredStamps(keyID: keyID) }
        defer { replica.dropStoredStamps() }
        var stalled = 0
        var idle = 0
        var first = true
        defer { replica.endCheckpointsAside() }
        while true {
            let before = try replica.syncState().pullCursor
            let applied = summary.applied
            let step = try pullPageLocked(ahead: &ahead, spent: &spent, fetchAhead: true, first: first)
            first = false
            switch step {
            case .pushFirst:
                return .timelineChanged
            case .applied(more: false):
                askAgainForSetAside()
                askForWithdrawalsMissed()
                // At the server's head: what each device's ledger says it wrote is here.
                ledgerPulledHead = true
                try checkLedgers()
                return .atHead
            case .applied(more: true):
                // More pages follow: the log they fill is copied back beside them.
                replica.startCheckpointsAside()
            }
            idle = summary.applied == applied ? idle + 1 : 0
            if idle >= Self.maxIdlePages {
                throw SyncError.badAnswer(
                    """
                    the server sent \(idle) pages in a row that changed nothing here and say more follow: stopped; \
                    the next sync goes on from there
                    """)
            }
            stalled = try replica.syncState().pullCursor > before ? 0 : stalled + 1
            if stalled >= Self.maxPagesWithoutProgress {
                throw SyncError.badAnswer(
                    "the server's pages do not move the cursor on (\(stalled) in a row at \(before))")
            }
        }
    }

    /// Pulls and applies one page as the replica stands (what is local
    /// pushed first when the page is on another timeline); returns whether
    /// more are waiting. (A client stopped between pages
    /// resumes from the stored cursor.) Records that cannot be used are
    /// reported and skipped; the rest is applied.
    public func pullPage() throws -> Bool {
        try locked { try drive(.pullPage) }
    }

    /// What pulling a page came to.
    enum PageStep {
        /// The page was applied; more are waiting or not.
        case applied(more: Bool)
        /// Another timeline: push everything local, then pull again.
        case pushFirst
    }

    /// A page being fetched on a thread of its own, and the request it was
    /// fetched with: it is used only when the request the replica's state
    /// makes once the page before is applied is the same.
    struct PrefetchedPage {
        let target: String
        /// Opening and preparing its records, shared with the thread that waits for it.
        let offer: WorkOffer
        let job: ThreadJob<FetchedPage>
    }

    /// A page applied, handed to the thread that fetches the next page:
    /// once the applying thread holds it no more, that thread frees it.
    final class SpentPage: @unchecked Sendable {
        // Set by the applying thread before the fetching thread starts, then
        // touched by that thread only.
        private var page: FetchedPage?

        init(_ page: FetchedPage?) { self.page = page }

        func letGo() { page = nil }
    }

    /// A page as fetched, and its records opened when it is sealed and this
    /// client has the key (what a record that does not open is, in `problems`).
    struct FetchedPage: Sendable {
        var exchange: Exchange
        var page: PullResponse?
        var opened: Opened?
        /// What storing each record to apply (as opened, when sealed) writes
        /// beside its fields, made here (``Replica/PreparedRow``).
        var prepared: [Replica.PreparedRow]?

        /// Fetches the page at `target`, then opens (when sealed and `cipher`
        /// is the key) and prepares its records; with `offer`, shares that
        /// work with the thread waiting for the page (``WorkOffer``).
        static func fetch(
            _ target: String, transport: Transport, cipher: RecordCipher?, offer: WorkOffer? = nil
        ) -> FetchedPage {
            let (exchange, page) = transport.fetchPage(target)
            var fetched = FetchedPage(exchange: exchange, page: page)
            guard let page else {
                offer?.offer(nil)
                return fetched
            }
            let opening = page.encrypted ? cipher : nil
            // Chunks of up to 32 records, at least 8 of them to share (a short page too).
            let work = SharedWork(page.changes, chunk: min(32, page.changes.count / 8)) { change in
                PageRecord(change, opening: opening)
            }
            offer?.offer { work.help() }
            let records = work.results()
            guard opening != nil else {
                fetched.prepared = records.compactMap(\.prepared)
                return fetched
            }
            var opened = Opened(changes: [])
            var prepared: [Replica.PreparedRow] = []
            for record in records {
                if let change = record.opened, let row = record.prepared {
                    opened.changes.append(change)
                    prepared.append(row)
                } else if let setAside = record.aside {
                    opened.add(setAside)
                }
            }
            fetched.opened = opened
            fetched.prepared = prepared
            return fetched
        }
    }

    /// One record of a page as the fetching threads leave it: opened (when
    /// sealed) and prepared for storing, or set aside with why, or nothing
    /// to apply (a sealed record with no field).
    struct PageRecord: Sendable {
        var opened: ChangeRecord?
        var prepared: Replica.PreparedRow?
        var aside: SetAside?

        /// `change` prepared as it is, or opened with `opening` first.
        init(_ change: ChangeRecord, opening: RecordCipher?) {
            guard let cipher = opening else {
                prepared = Replica.PreparedRow(change)
                return
            }
            switch SyncClient.open(change, with: cipher, requiringManifest: true) {
            case .success(let change?):
                opened = change
                prepared = Replica.PreparedRow(change)
            case .success(nil):
                break
            case .failure(let setAside):
                aside = setAside
            }
        }
    }

    /// The records of a sealed page, opened and checked against their
    /// manifests; a record that does not open or fails a check is set aside,
    /// named, and the rest are kept.
    /// - Parameter requiringManifests: false only to prove a key opens
    ///   records (``checkKey(_:)``); a record without a manifest is never
    ///   applied (Deploy/SECURITY.md, "Records sealed as records").
    /// A sealed page's records opened: those that opened and passed their
    /// checks, and those set aside, named (`problems`) and kept (`aside`).
    struct Opened {
        var changes: [ChangeRecord]
        var problems: [String] = []
        var aside: [PulledAside] = []

        /// Names and keeps a record set aside.
        mutating func add(_ setAside: SetAside) {
            problems.append(setAside.problem)
            aside.append(setAside.entry)
        }
    }

    static func open(
        _ changes: [ChangeRecord], with cipher: RecordCipher,
        requiringManifests: Bool = true
    ) -> Opened {
        var opened = Opened(changes: [])
        for change in changes {
            switch open(change, with: cipher, requiringManifest: requiringManifests) {
            case .success(let change?): opened.changes.append(change)
            case .success(nil): break
            case .failure(let setAside): opened.add(setAside)
            }
        }
        return opened
    }

    /// What a record set aside from a sealed page is named as, and kept as.
    struct SetAside: Error {
        let problem: String
        let entry: PulledAside
    }

    /// One record of a sealed page opened and checked: nil when it holds no
    /// field (nothing to open or apply), or why it is set aside.
    static func open(
        _ change: ChangeRecord, with cipher: RecordCipher, requiringManifest: Bool
    ) -> Swift.Result<ChangeRecord?, SetAside> {
        if change.state.fields.isEmpty { return .success(nil) }
        do {
            // Its fields' text is written where it is stored: on the fetching
            // threads (``PageRecord``), beside the apply.
            return .success(try cipher.open(change, requiringManifest: requiringManifest))
        } catch {
            return .failure(
                SetAside(
                    problem: "set aside record #\(change.sequence) from the server: \(error)",
                    entry: PulledAside(
                        collection: change.collection.rawValue, filedKey: change.key,
                        shownKey: error.shownKey,
                        sequence: change.sequence, why: "\(error)")))
        }
    }

    /// The pull request for the page after `cursor`.
    /// Records this replica's own pushes made are skipped, when it proves it
    /// made the stream's latest push (number and digest); while reconciling,
    /// every record the server has must come.
    /// - Parameter first: the first page of a pull of several (``Options/firstBatch``).
    private func pullTarget(
        cursor: Int64, pushedThrough: Int64, origin: CursorOrigin, reconciling: Bool, first: Bool = false
    ) throws -> String {
        let limit = first ? min(options.firstBatch, options.pullLimit) : options.pullLimit
        var request = PullRequest(since: cursor, limit: max(1, limit), keyID: keyID)
        if reconciling {
            request.full = true // the cursor passes below the purge point on the way
        } else if pushedThrough > 0, let digest = try storedChain(pushedThrough) {
            request.pusher = PullRequest.Pusher(device: replica.deviceID, pushed: pushedThrough, digest: digest)
        }
        // The server names its signing key in the answer only when it is not this one.
        request.signer = signingPublicKey
        if let epoch = origin.epoch, SessionRules.isPlainEpoch(epoch) { request.epoch = epoch }
        // The account too: a home pointed at another account's token brings a
        // cursor that must not restart that account's timeline (``CursorOrigin``).
        if let account = origin.account, CursorOrigin.isAccountID(account) { request.account = account }
        return request.target
    }

    /// - Parameters:
    ///   - fetchAhead: when more pages wait, start fetching the next one
    ///     (into `ahead`) before applying this one.
    ///   - spent: the page applied last, which the thread that fetches the
    ///     next one lets go of; the page applied here is left in it.
    ///   - first: the first page of a pull that goes on to the head: a small one.
    private func pullPageLocked(
        ahead: inout PrefetchedPage?, spent: inout FetchedPage?, fetchAhead: Bool, first: Bool = false
    ) throws -> PageStep {
        // The decisions; this function carries them out.
        var machine = PullMachine()
        var confirmedRollback = false
        while true {
            // Before each page, whether fetched ahead or not.
            try checkStopRequested()
            let state = try replica.syncState()
            let reconciling = try replica.isReconciling()
            let target = try pullTarget(
                cursor: state.pullCursor, pushedThrough: state.pushedThrough,
                origin: CursorOrigin(epoch: state.epoch, account: state.account), reconciling: reconciling,
                first: first)
            var fetched: FetchedPage?
            if let waiting = ahead.take() {
                // Waiting for it, this thread opens part of it.
                if waiting.target == target { waiting.offer.help() }
                let result = waiting.job.wait()
                if waiting.target == target { fetched = result } else { try takeIn(result.exchange.countsOnly) }
            }
            let current = fetched ?? FetchedPage.fetch(target, transport: transport, cipher: cipher)
            do {
                try takeIn(current.exchange)
            } catch SyncError.refused(code: .rollbackUnconfirmed, _) where cipher != nil && !confirmedRollback {
                // The server was rolled back: in an encrypted account a key
                // holder says so, signed (one request, only then); the page
                // after it names the new timeline.
                confirmedRollback = true
                try confirmRollback(since: state.pullCursor, epoch: state.epoch)
                continue
            }
            // An exchange without an error holds a page.
            guard let page = current.page else {
                throw SyncError.badAnswer("the answer to GET \(target) holds no page")
            }
            let accountChanged = try noteAccount(page.account, epoch: page.epoch)
            if accountChanged { summary.accountChanged = true }
            let epochChanged = accountChanged ? false : try handleEpoch(page.epoch)
            let action = machine.decide(
                page, accountChanged: accountChanged, epochChanged: epochChanged, hasKey: cipher != nil,
                cursor: state.pullCursor)
            switch try carryOut(action, account: page.account) {
            case .pushFirst: return .pushFirst
            case .again: continue
            case .apply: break
            }
            try checkPageKey(page)
            if fetchAhead && page.more {
                // The request the replica's state makes once this page is applied
                // (its cursor and epoch are the page's); checked when it is used.
                let next = try pullTarget(
                    cursor: page.next, pushedThrough: state.pushedThrough,
                    origin: CursorOrigin(
                        epoch: page.epoch, account: page.account.isEmpty ? state.account : page.account),
                    reconciling: reconciling)
                let (transport, cipher) = (transport, cipher)
                // Freeing a page's records (a sealed page's as sent and as
                // opened) took a tenth of the applying thread's time.
                let previous = SpentPage(spent.take())
                let offer = WorkOffer()
                ahead = PrefetchedPage(
                    target: next, offer: offer,
                    job: ThreadJob {
                        let fetched = FetchedPage.fetch(next, transport: transport, cipher: cipher, offer: offer)
                        previous.letGo()
                        return fetched
                    })
            }
            try apply(page, opened: current.opened, prepared: current.prepared)
            spent = current
            if !page.more && reconciling { try finishReconcile() }
            return .applied(more: page.more)
        }
    }

    /// What carrying out a page's decision leaves the pull to do.
    private enum AfterDecision {
        case apply
        /// Fetch the page again (the replica's state changed).
        case again
        case pushFirst
    }

    /// Carries out what ``PullMachine`` decided for a page (of `account`, when
    /// it names one), before it is applied.
    private func carryOut(_ action: PullMachine.Action, account: String?) throws -> AfterDecision {
        switch action {
        case .pushThenStartOver(let fullResync):
            if fullResync { summary.fullResync = true }
            return .pushFirst
        case .reconcile(let fullResync):
            if fullResync { summary.fullResync = true }
            try replica.beginReconcile()
            return .again
        case .encryptAgainAndStartOver:
            try replica.requireFullRelay()
            try prepareSync()
            return .again
        case .needKey:
            try replica.noteAccountEncrypted(account: account)
            throw Self.noAccountKey
        case .encryptionWasReset:
            try replica.noteEncryptionReset()
            throw Self.encryptionWasReset
        case .stop(let message):
            throw SyncError.badAnswer(message)
        case .apply:
            return .apply
        }
    }

    /// A sealed page for this machine (it has the key) is under its key,
    /// and names the account's signing key as this machine knows it.
    private func checkPageKey(_ page: PullResponse) throws {
        guard cipher != nil, page.encrypted else { return }
        // The server took this request naming this machine's key (a key it
        // no longer uses is refused): a page under another is a lie.
        if let named = page.keyID, named != keyID {
            throw SyncError.badAnswer(
                """
                the server's page says the account is sealed with key \(DisplayText.printable(named.prefix(16))), though it took \
                this request naming this machine's key \(keyID ?? ""): stopped, nothing of the page applied
                """)
        }
        if page.keyID == keyID { try checkSigningKey(page.signingKey) }
        // The account's mark, kept: this machine's changes are sealed in format 2 from then on.
        if page.sealedFormat == .two, options.protocolVersion >= Wire.sealedFormatProtocol {
            try replica.noteSealedFormat(.two)
        }
    }

    /// Applies a page with its cursor, in one transaction: what could not
    /// be used named, a sealed page's records as opened (one that did not
    /// open set aside, the rest applied).
    private func apply(_ page: PullResponse, opened: Opened?, prepared: [Replica.PreparedRow]?) throws {
        for (sequence, reason) in page.unusable {
            summary.problems.append("set aside record #\(sequence) from the server: \(reason)")
        }
        var changes = page.changes
        var aside: [PulledAside] = []
        if let opened {
            aside = opened.aside
            changes = opened.changes
            summary.problems += opened.problems
        }
        let started = Clock.monotonicMillis()
        let applied = try replica.applyPulled(
            changes, cursor: page.next, epoch: page.epoch, aside: aside, prepared: prepared, skipped: &summary.problems)
        summary.take(applied)
        summary.applyMilliseconds += Clock.monotonicMillis() - started
        summary.pulled += page.changes.count
        pulledSoFar += page.changes.count
        if !page.changes.isEmpty { progress?("pulled", pulledSoFar, nil) }
    }

    /// Confirms, signed with the account key, that the account was rolled
    /// back past this replica's cursor on its timeline (``TimelineRequest``).
    func confirmRollback(since cursor: Int64, epoch: String?) throws {
        guard let epoch else {
            throw SyncError.badAnswer(
                "the server says this replica's cursor is from the future, and it never named a timeline")
        }
        let answer = try send(
            method: "POST", target: "/v1/account/timeline", body: TimelineRequest(since: cursor, epoch: epoch).body)
        do { _ = try TimelineResponse(json: answer) } catch { throw SyncError.badAnswer(error.message) }
    }

    /// The end of a reconciling pull: what the server no longer has is
    /// dropped, named, and kept restorable; in an encrypted account nothing
    /// is dropped on the server's word (an honest server never asks: it
    /// keeps an encrypted account's deletions), it is sent back whole.
    private func finishReconcile() throws {
        let outcome = try replica.finishReconcile(keep: cipher != nil)
        summary.removed += outcome.removed
        if outcome.kept > 0 {
            summary.problems.append(
                """
                the server asked this machine to drop \(outcome.kept) record(s) it no longer has: kept, and sent to it again \
                (in an encrypted account a record leaves a machine only with a deletion a key holder sealed)
                """)
        }
    }

    /// Most times one sync starts over on another timeline (a new epoch or
    /// account): an honest server changes it once (a restore); answers that
    /// keep disagreeing about it would relay everything again and again.
    static let maxTimelineChanges = 4

    /// Counts a timeline change of this sync; past ``maxTimelineChanges`` the
    /// sync stops (exit 6), every edit kept for the next one.
    func countTimelineChange(_ what: String) throws {
        timelineChanges += 1
        guard timelineChanges <= Self.maxTimelineChanges else {
            throw SyncError.badAnswer(
                """
                the server's answers changed its \(what) \(timelineChanges) times in one sync (they disagree about its timeline): \
                stopped; nothing was lost, and the next sync tries again
                """)
        }
    }

    /// A new server epoch (the server was restored or reset): start over,
    /// and relay every record held, so nothing a client holds is lost.
    func handleEpoch(_ epoch: String) throws -> Bool {
        switch SessionRules.epoch(epoch, known: try replica.syncState().epoch) {
        case .same:
            return false
        case .first:
            try replica.startNewEpochIfFirst(epoch)
            return false
        case .changed:
            try countTimelineChange("epoch")
            try replica.startNewEpoch(epoch)
            summary.fullResync = true
            try prepareSync()
            return true
        }
    }
}
