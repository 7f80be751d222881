import Cryptography
import Glibc
import HTTP
import JSON
import Model
import Net
import Replica
import SyncCore

/// Pushes this replica's changes to the server and pulls everyone else's,
/// over the project's own TLS layer (the server verified against the system CA
/// store or a pinned CA file, its host name checked).
public final class SyncClient {
    public struct Options: Sendable {
        /// Changes per push request. Default 1,000.
        public var pushBatch = 1000
        /// Most bytes of JSON per push or relay request (the server refuses
        /// bodies over 8 MiB by default). Default 4 MiB.
        public var pushBatchBytes = 4 * 1024 * 1024
        /// Records per pull page. Default 1,000.
        public var pullLimit = 1000
        /// At most this many changes in a push's first batch and records in a
        /// pull's first page (no more than ``pushBatch`` and ``pullLimit``):
        /// the server starts on a small one while the client reads the next,
        /// instead of waiting for a whole batch to be read, or the first
        /// records to apply for a whole page to be made. Default 250.
        public var firstBatch = 250
        /// Attempts for one request on connection errors, 429 and 503. Default 5.
        public var attempts = 5
        /// First backoff; doubled each retry, with jitter, at most 5 s. Default 250 ms.
        public var backoffMilliseconds = 250
        public var connectTimeoutMilliseconds = 10_000
        public var readTimeoutMilliseconds = 30_000
        /// Whether a pull ends with the ledger checks (Deploy/SECURITY.md, "A
        /// device's own writes, counted"). Default on; off only shows what a
        /// lying server gets away with without them (the tests do).
        public var checksLedgers = true
        /// Whether another home's ledger records under this device's id are
        /// taken into its own (Deploy/SECURITY.md, "Two live homes under one
        /// id"). Default on; off only shows the false alarm they end (the tests do).
        public var takesInOtherHomes = true
        /// Asked before each request: true stops the sync there
        /// (``SyncError/cancelled``), nothing in flight, what came before
        /// kept. A window's Stop sets it; nil never stops.
        public var stopRequested: (@Sendable () -> Bool)?
        /// How long a sync waits for another sync of the same replica (a
        /// timer's, a watch's, one by hand) before it gives up
        /// (``SyncError/replicaBusy(_:)``), saying meanwhile which process
        /// it waits for. Default 5 minutes.
        public var lockWaitMilliseconds = 300_000
        /// The protocol the client says it speaks (`Brsync-Protocol`).
        /// Default ``Wire/protocolVersion``; ``Wire/sealedFormatProtocol``
        /// reads and writes sealed format 2 (the tests turn it on before
        /// this build says it by default).
        public var protocolVersion = Wire.protocolVersion
        public init() {}
    }

    /// Progress of a long transfer: (what, done, total or nil); a `done`
    /// below 0 is a notice with no count (a sync waiting for another).
    public typealias Progress = (String, Int, Int?) -> Void

    public struct Summary: Sendable, Equatable {
        public var pushed = 0
        public var pulled = 0
        public var applied = 0
        public var requests = 0
        public var bytesSent = 0
        public var bytesReceived = 0
        public var fullResync = false
        /// The server's answers named another account than the one this
        /// replica synced with (its token was set to another account's): it
        /// started over there as a new machine (``fullResync`` too).
        public var accountChanged = false
        /// Records relayed to the server after it was restored.
        public var relayed = 0
        /// Changes the server did not apply, and pulled records set aside, each with why.
        public var problems: [String] = []
        /// The replica took a new device id (it was a copy of another, or it
        /// started syncing with an account key).
        public var newDeviceID: String?
        /// Unpushed changes re-stamped because this machine's clock was fast.
        public var restamped = 0
        /// Records dropped because the server had deleted and purged them
        /// (each kept in the replica's `removed` list, restorable).
        public var removed: [RemovedRecord] = []
        /// Records set aside rather than applied (each kept in the replica's
        /// `removed` list with why, restorable): written with a key the
        /// account had moved on from, on a server restored from before.
        public var setAside: [RemovedRecord] = []
        /// Values that lost to concurrent edits, newly kept for `brsync log --conflicts`.
        public var conflicts = 0
        /// Profiles pulled whose arguments wait for this machine's approval
        /// (`brsync browsers approve`): by id, with why. They are kept and
        /// never launched with those arguments until then.
        public var awaitingApproval: [String: String] = [:]
        /// This replica took an id of its own because its file was copied,
        /// or the server holds other changes under its old id: said apart
        /// from a key's first sync, which gives a new id too (and whose id
        /// ``newDeviceID`` is then).
        public var forked = false
        /// This replica started syncing with an account key: every record
        /// it holds went up sealed (``relayed`` counts them).
        public var encryptionStarted = false
        /// This replica synced with a key that is no longer here: it starts
        /// afresh on the server, readable (``relayed`` counts what went up).
        public var encryptionEnded = false
        /// The server was restored from before a rotation, and this machine
        /// rotated it forward to its key (every record goes up again).
        public var movedForward = false

        /// What the ledger checks of this sync read, when they ran.
        public var ledgerCheck: LedgerCheckRead?
        /// A record held under this device's id that its own ledger did not
        /// write (another home writes under it), and where the server holds
        /// the id's stream. Noted only: nothing acts on it yet.
        public var writtenElsewhere: WrittenElsewhere?

        public struct WrittenElsewhere: Sendable, Equatable {
            public var reason: String
            public var standing: ChainEcho.Standing
        }

        public init() {}
        /// Time spent merging pulled pages into the replica (each page one transaction).
        public var applyMilliseconds: Int64 = 0

        /// What `other` did too, as one summary of both (a key change's syncs
        /// before and after it, told as one).
        public mutating func add(_ other: Summary) {
            pushed += other.pushed
            pulled += other.pulled
            applied += other.applied
            requests += other.requests
            bytesSent += other.bytesSent
            bytesReceived += other.bytesReceived
            fullResync = fullResync || other.fullResync
            accountChanged = accountChanged || other.accountChanged
            relayed += other.relayed
            problems += other.problems
            newDeviceID = other.newDeviceID ?? newDeviceID
            restamped += other.restamped
            removed += other.removed
            setAside += other.setAside
            conflicts += other.conflicts
            awaitingApproval.merge(other.awaitingApproval) { _, later in later }
            ledgerCheck = other.ledgerCheck ?? ledgerCheck
            writtenElsewhere = other.writtenElsewhere ?? writtenElsewhere
            encryptionStarted = encryptionStarted || other.encryptionStarted
            encryptionEnded = encryptionEnded || other.encryptionEnded
            movedForward = movedForward || other.movedForward
            forked = forked || other.forked
            applyMilliseconds += other.applyMilliseconds
        }

        /// Counts what a pulled page did here.
        mutating func take(_ applied: Replica.AppliedPage) {
            self.applied += applied.changed
            conflicts += applied.conflicts
            for held in applied.awaitingApproval { awaitingApproval[held.id] = held.reason }
        }
    }

    let replica: any SyncReplica
    let remote: RemoteURL
    let token: String
    let options: Options
    /// The connection and its retries; used by one thread at a time (see ``Transport``).
    let transport: Transport
    var summary = Summary()
    /// Epochs and accounts this sync started over on (``countTimelineChange(_:)``).
    var timelineChanges = 0
    let progress: Progress?
    /// The account key's cipher, when the account is end-to-end encrypted:
    /// changes are sealed before they leave and opened when they
    /// arrive; the replica stays readable.
    let cipher: RecordCipher?
    let keyID: String?
    let accountKey: AccountKey?
    /// The account key's signing key: every write to the encrypted account
    /// is signed with it (``WriteSignature``).
    let signingKey: Crypto.SigningKey?
    /// Its public key in base64url.
    let signingPublicKey: String?
    /// Keys this machine held before its current one (rotated away): a
    /// server sealed with one of them was restored from before a rotation.
    /// Never used to seal.
    let olderKeys: [AccountKey]

    /// - Parameter olderKeys: keys this machine held before `accountKey`
    ///   (see ``AccountKeyFile/readOlder(home:)``).
    public convenience init(
        replica: any SyncReplica, remote: RemoteURL, token: String, caFile: String?, accountKey: AccountKey? = nil,
        olderKeys: [AccountKey] = [], options: Options = Options(), progress: Progress? = nil
    ) throws(SyncError) {
        let tls: TLSContext
        do { tls = try TLSContext.client(caFile: caFile) } catch { throw .usage("\(error)") }
        var configuration = HTTPClient.Configuration(
            address: SocketAddress(host: remote.host, port: remote.port), serverName: remote.host, tls: tls)
        configuration.connectTimeoutMilliseconds = options.connectTimeoutMilliseconds
        configuration.readTimeoutMilliseconds = options.readTimeoutMilliseconds
        self.init(
            replica: replica, http: HTTPClient(configuration), remote: remote, token: token, accountKey: accountKey,
            olderKeys: olderKeys, options: options, progress: progress)
    }

    /// A client whose requests go through `http`: a connection to `remote`,
    /// or a table of answers (the driver's tests, with no server).
    init(
        replica: any SyncReplica, http: any HTTPSending, remote: RemoteURL, token: String, accountKey: AccountKey?,
        olderKeys: [AccountKey], options: Options, progress: Progress?
    ) {
        self.replica = replica
        cipher = accountKey.map(RecordCipher.init)
        keyID = accountKey?.id
        self.accountKey = accountKey
        signingKey = accountKey?.signingKey()
        signingPublicKey = signingKey.map { Crypto.base64URL($0.publicKey) }
        self.olderKeys = olderKeys.filter { $0.id != accountKey?.id }
        self.remote = remote
        self.token = token
        self.options = options
        self.progress = progress
        lock = SyncLock(
            home: replica.home,
            waiting: SyncLock.Waiting(
                limitMilliseconds: options.lockWaitMilliseconds, stopRequested: options.stopRequested,
                told: progress.map { progress in
                    { holder, limit in
                        progress(
                            "waiting for another sync of this replica (\(holder)) to end, up to \(limit) s", -1, nil)
                    }
                }))
        transport = Transport(
            http: http, token: token, remote: remote.description, attempts: options.attempts,
            backoffMilliseconds: options.backoffMilliseconds, stopRequested: options.stopRequested, retrying: progress,
            protocolVersion: options.protocolVersion, pullSigner: signingKey)
        transport.coding.encrypted = cipher != nil
    }

    /// Push, then pull until nothing is left. A refused push does not stop
    /// the pull (this machine still gets everyone else's rules); the refusal is
    /// thrown after it, and kept for `brsync status`. A push refused because
    /// the account uses another key runs the sync once more after the pull
    /// (``retryingAfterMovingForward(_:)``): the pull may have moved a
    /// restored server forward, and this device's writes since (the record
    /// that says so) go up with its ledger then.
    public func sync() throws -> Summary {
        try locked {
            do { return try retryingAfterMovingForward { try run(.sync) } } catch { throw try stopped(by: error) }
        }
    }

    /// A copied or restored replica file takes a new device id before syncing.
    func checkCopied() throws {
        if let id = try replica.takeNewDeviceIDIfCopied() {
            summary.newDeviceID = id
            summary.forked = true
        }
    }

    let lock: SyncLock
    /// The part of the run under way: where a problem it stops with is kept (``stopped(by:)``).
    var partUnderWay = SyncPart.sync
    /// Records pulled so far by this client (for progress).
    var pulledSoFar = 0
    /// Whether this client asked the server to register its signing key.
    var askedToRegister = false

    /// Runs `body` holding the sync lock; the clock offset learned from the
    /// answers meanwhile is written before it returns (see
    /// ``Replica/observeServerTime(_:ageMilliseconds:)``).
    func locked<T>(_ body: () throws -> T) throws -> T {
        // Another client (a sync while a watch runs) may have written this
        // device's ledger since this one last held the lock: read again.
        if !lock.isHeld {
            currentLedgerBook = nil
            ledgerChainConfirmed = false
            ledgerPulledHead = false
            relayedInPush = nil
            relaysHeldBack = false
            relayingBetweenBatches = false
            ownLedgerNotTaken = nil
            ownLedgerTaken = false
            serverHead = nil
        }
        return try lock.withLock {
            defer { try? replica.persistServerTime() }
            return try body()
        }
    }

    /// The server's refusal behind the last ``SyncError/refused(code:message:)``.
    var lastRefusal: WireError?
    /// This device's ledger book as this client last kept it (``ledgerBook()``).
    var currentLedgerBook: LedgerBook?
    /// Whether a push answer since this client took the sync lock showed the
    /// server's chain of this device to be this replica's (a new ledger
    /// request waits for it).
    var ledgerChainConfirmed = false
    /// Whether a pull reached the server's head since this client took the sync lock.
    var ledgerPulledHead = false
    /// Whether the server refused a stamp of this client's for its clock
    /// (`clock_skew`): ledger records are then stamped no further ahead than
    /// it takes (``SyncReplica/stampCeiling(ahead:)``).
    var clockRefused = false
    /// This sync's ledger outcome: the server's last words when it did not
    /// take this device's ledger, and whether it confirmed a ledger request
    /// (``noteOwnLedger()``).
    var ownLedgerNotTaken: String?
    var ownLedgerTaken = false
    /// This device's head as the server held it when asked in this sync
    /// (``serverHeadStamp()``): nil when not asked yet.
    var serverHead: Ledger.Stamp??
    /// Whether a push is sending batches (its answers fold this device's writes into the book it holds).
    var pushingBatches = false
    /// This device's writes that relays inside a push carried (records the
    /// server asked for whole, everything after a restore found mid-push):
    /// folded into the book with the next batch's answer, or at the end of
    /// the push (``finishLedger()``), whichever comes first; only into the
    /// book of the device id that wrote them (a fork in between drops them).
    var relayedInPush: (device: String, writes: [LedgerBook.Write])?
    /// Whether a relay inside this push held back a record the server asked
    /// for, holding an edit the push had not delivered yet (sent at its end).
    var relaysHeldBack = false
    /// The answer to a push batch, settled and not committed yet: committed
    /// while the next batch is in flight, and before anything else keeps
    /// this device's book or its pushed mark (``commitAnswerWaiting()``).
    var answerWaiting: Kept?
    /// Whether a push relays between its batches (``betweenBatches(_:)``).
    var relayingBetweenBatches = false
    /// The retired key this client moved a restored server forward from, in
    /// this sync: said to the account once the records may leave (see
    /// ``Replica/recordMovedForward(from:)``).
    var movedForwardFrom: String?

    func fork() throws {
        summary.newDeviceID = try replica.forkDeviceID()
        summary.forked = true
    }
}
