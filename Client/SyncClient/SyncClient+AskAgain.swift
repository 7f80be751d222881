import Replica
import SyncCore

/// Records a pull set aside, asked for again (Deploy/SECURITY.md, "Records
/// sealed as records"): a record that did not open or failed its manifest
/// may have been a server's passing lie, or a copy it has since replaced.
extension SyncClient {
    /// How long a record set aside waits before it is asked for again, and
    /// between two asks: a sync with nothing due stays one request.
    static let askAgainMilliseconds: Int64 = 86_400_000

    /// Asks the server, by hidden key, for the records set aside whose turn
    /// has come (``askAgainMilliseconds``; up to ``PullRequest/maxAsked``),
    /// and applies what now opens and passes its checks; what fails again
    /// stays set aside with the new reason. Only what was asked is taken, in
    /// the timeline and account this replica is in; the cursor stays where
    /// it is. An encrypted account's only (a readable account's records are
    /// not filed by hidden keys). A failure is one of the sync's problems,
    /// never its end: the records stay set aside and are asked again later.
    func askAgainForSetAside() {
        guard cipher != nil, keyID != nil else { return }
        do {
            let due = try replica.pulledAsideDue(every: Self.askAgainMilliseconds, limit: PullRequest.maxAsked)
            guard !due.isEmpty else { return }
            // Noted first: a server that never answers is asked once a day, not at every sync.
            try replica.noteAskedAgain(due)
            let asked = due.compactMap { entry -> PullRequest.Asked? in
                guard let collection = RecordCollection(rawValue: entry.collection), Wire.isHiddenKey(entry.filedKey)
                else { return nil }
                return PullRequest.Asked(collection: collection, key: entry.filedKey)
            }
            try askAgain(asked, for: "records set aside")
        } catch {
            summary.problems.append("asking the server again for records set aside: \(error)")
        }
    }

    /// Asks the server for `asked` (hidden keys, at most
    /// ``PullRequest/maxAsked``) as they are now, and applies what opens
    /// and passes its checks (see ``askAgainForSetAside()``); `what` names
    /// them in the sync's problems.
    /// - Returns: the records answered (applied or set aside), and whether
    ///   the server cut its answer short (its page's budget): those not
    ///   answered are to be asked again. Nil when nothing was asked.
    @discardableResult
    func askAgain(
        _ asked: [PullRequest.Asked], for what: String
    ) throws -> (
        answered: Set<PullRequest.Asked>, cut: Bool
    )? {
        guard let answer = try fetchAsked(asked, inTimeline: true), let epoch = answer.epoch else { return nil }
        if answer.leftOut {
            summary.problems.append(
                "asking again for \(what), the server answered with records not asked for, or one "
                    + "twice: left out")
        }
        for entry in answer.aside {
            summary.problems.append("set aside record #\(entry.sequence) from the server again: \(entry.why)")
        }
        let applied = try replica.applyPulled(
            answer.changes, cursor: answer.cursor, epoch: epoch, aside: answer.aside, prepared: nil,
            skipped: &summary.problems)
        summary.take(applied)
        return (answer.answered, answer.cut)
    }

    /// The first part of `items` one request may ask for: at most
    /// ``PullRequest/maxAsked`` records, within the server's request line
    /// (ledger keys name devices of up to 64 characters).
    static func askedPart(_ items: some Collection<PullRequest.Asked>) -> [PullRequest.Asked] {
        var bytes = 0
        return Array(
            items.prefix(PullRequest.maxAsked).prefix { item in
                bytes += item.collection.rawValue.utf8.count + item.key.utf8.count + 2
                return bytes <= 6_000
            })
    }

    /// What the server answered to records asked for by hidden key.
    struct AskedAnswer {
        /// The records asked for that opened and passed their checks.
        var changes: [ChangeRecord]
        /// The records asked for that did not.
        var aside: [PulledAside]
        /// Whether the answer held records not asked for, or one twice (left out).
        var leftOut: Bool
        /// The records asked for that were answered (applied or set aside).
        var answered: Set<PullRequest.Asked>
        /// Whether the server cut its answer short (`more`): some asked for may not be answered.
        var cut: Bool
        /// This replica's timeline (nil before its first pull) and cursor (which stays).
        var epoch: String?
        var cursor: Int64
    }

    /// Asks the server for `asked` (hidden keys, at most
    /// ``PullRequest/maxAsked``) as they are now, in one request. Only what
    /// was asked is taken, each record once, in the account and key this
    /// replica is in, and (`inTimeline`: records to apply) the timeline; an
    /// answer of another is refused whole.
    /// - Returns: nil when this replica has no key, or nothing is asked.
    func fetchAsked(_ asked: [PullRequest.Asked], inTimeline: Bool) throws -> AskedAnswer? {
        guard let cipher, let keyID, !asked.isEmpty else { return nil }
        var request = PullRequest(keyID: keyID)
        request.signer = signingPublicKey
        request.asked = asked
        let fetched = FetchedPage.fetch(request.target, transport: transport, cipher: cipher)
        try takeIn(fetched.exchange)
        guard let page = fetched.page else {
            throw SyncError.badAnswer("the answer to GET \(request.target.prefix(40))… holds no page")
        }
        let state = try replica.syncState()
        let account = try replica.keyAccount()
        guard page.encrypted, page.keyID == nil || page.keyID == keyID, account == nil || page.account == account,
            !inTimeline || (state.epoch != nil && page.epoch == state.epoch)
        else {
            throw SyncError.badAnswer(
                "its answer is not of this account, timeline and key (a restore or a key change meanwhile?): nothing of it applied"
            )
        }
        // Each record asked for, once: one not asked for, or answered
        // twice (which copy would be the record?), is left out.
        var answered: [PullRequest.Asked: Int] = [:]
        for change in page.changes {
            answered[PullRequest.Asked(collection: change.collection, key: change.key), default: 0] += 1
        }
        let wanted = Set(asked).filter { answered[$0] == 1 }
        func wasAsked(_ collection: RecordCollection, _ key: String?) -> Bool {
            key.map { wanted.contains(PullRequest.Asked(collection: collection, key: $0)) } ?? false
        }
        let opened = fetched.opened ?? Opened(changes: [])
        let changes = opened.changes.filter { wasAsked($0.collection, $0.filedKey) }
        let aside = opened.aside.filter { entry in
            RecordCollection(rawValue: entry.collection).map { wasAsked($0, entry.filedKey) } ?? false
        }
        return AskedAnswer(
            changes: changes, aside: aside, leftOut: changes.count + aside.count < page.changes.count,
            answered: wanted, cut: page.more,
            epoch: state.epoch,
            cursor: state.pullCursor)
    }
}
