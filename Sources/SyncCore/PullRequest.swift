/// `GET /v1/pull?…`: a page of the account's records after a cursor. Its
/// one writer (``target``, what a client sends) and one reader
/// (``init(query:maxLimit:)``, what the server takes), as every other
/// message of the protocol has (docs/protocol.md).
public struct PullRequest: Sendable, Equatable {
    /// The cursor: the page starts after this account sequence.
    public var since: Int64 = 0
    /// Most records in the page; nil: the server's default.
    public var limit: Int?
    /// Every record, tombstones of purged deletions' keys included (a
    /// reconcile, a move forward, a key check): not only those after a
    /// purge point.
    public var full = false
    /// The key the client seals with (an account key id).
    public var keyID: String?
    /// The client's signing public key: the answer names the account's only
    /// when it is another one.
    public var signer: String?
    /// The client proves it made its device's latest push (its number and
    /// chain digest), so the server leaves out what that push wrote.
    public var pusher: Pusher?
    /// The timeline the cursor belongs to.
    public var epoch: String?
    /// The account the cursor belongs to (``PullResponse/account`` of the
    /// answer that gave it): a cursor of another account starts no new
    /// timeline here (``CursorOrigin``).
    public var account: String?
    /// A device id whose stream the answer should say where the server
    /// holds it (``PullResponse/chain``): the asking replica's own. The
    /// server answers it only for the id the token's device last pushed
    /// under, and never from memory, so a machine asks only when it needs it.
    public var chainOf: String?
    /// Records asked for again by their hidden keys (records a pull set
    /// aside): the answer holds each one the account has, as it is now, and
    /// its cursor means nothing (the asking replica's stays where it is).
    /// At most ``maxAsked``; empty for an ordinary pull.
    public var asked: [Asked] = []

    /// A record asked for again: its collection and hidden key
    /// (``Wire/isHiddenKey(_:)``, URL-safe as it is), or a ledger record's
    /// readable key (``Ledger/Key``).
    public struct Asked: Sendable, Hashable {
        public var collection: RecordCollection
        public var key: String

        public init(collection: RecordCollection, key: String) {
            self.collection = collection
            self.key = key
        }
    }

    /// Where the cursor comes from (``epoch`` and ``account``).
    public var origin: CursorOrigin { CursorOrigin(epoch: epoch, account: account) }

    /// The most records one request asks for again (~5.6 KB of target, within
    /// the server's 8 KiB request line).
    public static let maxAsked = 100

    /// A device's latest push, as its chain proves it.
    public struct Pusher: Sendable, Equatable {
        public var device: String
        public var pushed: Int64
        public var digest: String

        public init(device: String, pushed: Int64, digest: String) {
            self.device = device
            self.pushed = pushed
            self.digest = digest
        }
    }

    public init(
        since: Int64 = 0, limit: Int? = nil, full: Bool = false, keyID: String? = nil, signer: String? = nil,
        pusher: Pusher? = nil, epoch: String? = nil, chainOf: String? = nil
    ) {
        self.since = since
        self.limit = limit
        self.full = full
        self.keyID = keyID
        self.signer = signer
        self.pusher = pusher
        self.epoch = epoch
        self.chainOf = chainOf
    }

    /// The request target a client sends (every value is a number, hex,
    /// base64url or an id: nothing needs escaping); records asked for by key
    /// (``asked``) carry only those, the key id and the signer.
    public var target: String {
        if !asked.isEmpty {
            // Asked by key: no cursor, page size or timeline (the answer moves none).
            var target = "/v1/pull?keys=" + asked.map { "\($0.collection.rawValue):\($0.key)" }.joined(separator: ",")
            if let keyID { target += "&key=\(keyID)" }
            if let signer { target += "&signer=\(signer)" }
            return target
        }
        var target = "/v1/pull?since=\(since)"
        if let limit { target += "&limit=\(limit)" }
        if full { target += "&full=1" }
        if let pusher { target += "&device=\(pusher.device)&pushed=\(pusher.pushed)&digest=\(pusher.digest)" }
        if let keyID { target += "&key=\(keyID)" }
        if let signer { target += "&signer=\(signer)" }
        if let epoch { target += "&epoch=\(epoch)" }
        if let account { target += "&account=\(account)" }
        if let chainOf { target += "&chain=\(chainOf)" }
        return target
    }

    /// Reads a request's query items (decoded), as the server takes them.
    /// - Parameter maxLimit: the most records a page may hold here.
    /// - Throws: ``Wire/Problem`` naming the item that is wrong.
    public init(query: [String: String], maxLimit: Int) throws(Wire.Problem) {
        if let text = query["since"] {
            guard let value = Int64(text), value >= 0 else {
                throw Wire.Problem("since must be a cursor (a number 0 or more)")
            }
            since = value
        }
        if let text = query["limit"] {
            guard let value = Int(text), value >= 1, value <= maxLimit else {
                throw Wire.Problem("limit must be a number from 1 to \(maxLimit)")
            }
            limit = value
        }
        if let text = query["key"] {
            guard Wire.isKeyID(text) else { throw Wire.Problem("key must be an account key's id (16 hex digits)") }
            keyID = text
        }
        if let text = query["signer"] {
            guard WriteSignature.isPublicKey(text) else {
                throw Wire.Problem("signer must be a signing public key (43 characters of base64url)")
            }
            signer = text
        }
        if let device = query["device"] {
            guard HLCTimestamp.isValidDevice(device), let pushed = query["pushed"].flatMap({ Int64($0) }), pushed >= 0,
                let digest = query["digest"], Wire.isDigest(digest)
            else {
                throw Wire.Problem(
                    "device needs pushed (a change number) and digest (16 hex digits), and must be a device id")
            }
            pusher = Pusher(device: device, pushed: pushed, digest: digest)
        }
        if let text = query["epoch"] {
            // A server's epochs are lowercase letters and digits; anything else is no timeline of any server.
            guard !text.isEmpty, text.utf8.count <= 64, SessionRules.isPlainEpoch(text) else {
                throw Wire.Problem("epoch must be the timeline an answer named (lowercase letters and digits)")
            }
            epoch = text
        }
        if let text = query["account"] {
            guard CursorOrigin.isAccountID(text) else {
                throw Wire.Problem("account must be the account id an answer named (lowercase letters and digits)")
            }
            account = text
        }
        if let device = query["chain"] {
            guard HLCTimestamp.isValidDevice(device), pusher.map({ $0.device == device }) ?? true else {
                throw Wire.Problem("chain must be a device id, the one device names when both are given")
            }
            chainOf = device
        }
        full = query["full"] == "1"
        if let text = query["keys"] {
            let items = text.split(separator: ",", omittingEmptySubsequences: false)
            guard items.count <= Self.maxAsked else {
                throw Wire.Problem("keys may name at most \(Self.maxAsked) records")
            }
            for item in items {
                let parts = item.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
                guard parts.count == 2, let collection = RecordCollection(rawValue: String(parts[0])),
                    collection == .ledger
                        ? Ledger.Key(String(parts[1])) != nil : Wire.isHiddenKey(String(parts[1]))
                else {
                    throw Wire.Problem(
                        "keys must be records as COLLECTION:HIDDEN_KEY, separated by commas (a hidden key is h1. and 43 base64url characters; a ledger record's key is DEVICE/SHARD, DEVICE/head, DEVICE/pending/SLOT or DEVICE/withdrawn/SLOT)"
                    )
                }
                asked.append(Asked(collection: collection, key: String(parts[1])))
            }
            // One request, one meaning: records by key, or a page after a cursor.
            guard
                ["since", "limit", "full", "device", "pushed", "digest", "epoch", "account", "chain"].allSatisfy({
                    query[$0] == nil
                })
            else {
                throw Wire.Problem(
                    "keys asks for records by key: it takes no since, limit, full, device, epoch, account or chain")
            }
        }
    }
}
