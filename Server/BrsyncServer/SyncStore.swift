import SyncCore

/// What the sync API, the server and `brsyncd`'s commands need of a store.
/// ``SQLiteStore`` (the embedded default) is one; ``PostgresStore``, for
/// deployments of several `brsyncd` processes, is the other. Both are
/// ``StoreDialect``s: the store core implements all of this once.
public protocol SyncStore: AnyObject, Sendable {
    /// The timeline's id (a new one after a detected rollback).
    var epoch: String { get }
    /// The server's wall clock in milliseconds.
    var currentMillis: @Sendable () -> Int64 { get }
    /// The watches waiting for this store's accounts to change (`GET /v1/watch`).
    var watches: WatchHub { get }
    /// Starts hearing of other processes' changes, for ``watches`` (a
    /// serving brsyncd on PostgreSQL: `LISTEN`; otherwise nothing to do).
    func startListening() throws

    func counts() throws -> (records: Int, devices: Int, accounts: Int)
    func authenticate(token: String) throws -> Store.Device
    /// ``authenticate(token:)`` for a watch, from memory while that holds (``Store/TokenCache``).
    func authenticateRemembered(token: String) throws -> Store.Device
    /// The device of `token` if this process remembers it for a watch
    /// (as ``authenticateRemembered(token:)``), reading nothing; nil when
    /// the store would have to be read (or the token refused).
    func rememberedWatcher(token: String) -> Store.Device?
    /// Whether `secret` is a join code's secret this server issued (used,
    /// expired or not): one it never issued is refused on the headers.
    func joinSecretIssued(_ secret: String) throws -> Bool
    /// - Parameter authority: what the request brings to write (see ``SyncEngine/authorize(_:account:)``).
    func push(
        _ request: PushRequest, from device: Store.Device, authority: WriteAuthority, maxClockOffsetMilliseconds: Int64
    ) throws -> PushResponse
    func relay(
        _ request: RelayRequest, from device: Store.Device, authority: WriteAuthority, maxClockOffsetMilliseconds: Int64
    ) throws
        -> (applied: Int, rejected: [RejectedChange], response: PushResponse)
    /// - Parameter maxBytes: the page's byte budget (see ``StoreTransaction/pullSnapshot(tokenHash:clientDevice:after:limit:maxBytes:)``).
    /// - Parameter chainOf: a device id whose stream the answer echoes
    ///   (``PullRequest/chainOf``): only the one the token's device last
    ///   pushed under; such a pull is never answered from memory.
    func pullText(
        token: String, since cursor: Int64, limit: Int, clientDevice: PullRequest.Pusher?, clientEpoch: String?,
        reconciling: Bool, clientProtocol: Int, clientKeyID: String?, clientSigningKey: String?, chainOf: String?,
        maxBytes: Int
    ) throws -> [UInt8]
    /// Records asked for again by hidden key (``PullRequest/asked``), as
    /// they are now, in a page that moves no cursor.
    func pullAskedText(
        token: String, asked: [PullRequest.Asked], clientProtocol: Int, clientKeyID: String?, clientSigningKey: String?,
        maxBytes: Int
    ) throws -> [UInt8]
    /// A no-change pull answered from memory alone (``Store/TokenCache``),
    /// reading and writing nothing, or nil when the store must be used (or
    /// the pull refused): an event loop answers with it without a thread.
    func pullFromMemory(
        token: String, since cursor: Int64, limit: Int, clientDevice: PullRequest.Pusher?, clientEpoch: String?,
        clientProtocol: Int, clientKeyID: String?, clientSigningKey: String?
    ) -> [UInt8]?
    /// Makes the device's account end-to-end encrypted with the request's
    /// key, or, with `replaces`, rotates its key from that one, in one
    /// transaction: the key id and its signing key are set and the account's
    /// records and replica streams are deleted (no readable record, or
    /// record sealed with the old key, stays); every device with the key
    /// sends its records again, sealed. Who may ask, and what a retry gets:
    /// ``SyncEngine/keyChange(_:authority:account:accountUID:)``.
    /// The request's `seen` is the account sequence the asking device has
    /// pulled through; a change is refused while the account holds later
    /// records. Without it the check is skipped (a device that re-encrypts
    /// an account restored from before its switch cannot read it).
    /// - Returns: whether the account's records were deleted, the key it uses
    ///   now and its signing key (nil while none is registered).
    /// - Throws: ``ServerError/keyRotated`` for a rotation from a key the
    ///   account no longer uses; ``ServerError/accountMoved(seen:latest:)``
    ///   when records arrived after `seen`; the refusals of a signature.
    func encryptAccount(
        of device: Store.Device, _ request: EncryptRequest, authority: WriteAuthority
    ) throws -> EncryptResponse
    /// A key holder's signed confirmation of a rollback: a new timeline for the account (``TimelineRequest``).
    func confirmTimeline(
        of device: Store.Device, _ request: TimelineRequest, authority: WriteAuthority
    ) throws -> TimelineResponse
    /// Who may start a readable account's timeline, and how often.
    var timelineGate: TimelineGate { get }
    /// Makes an account not encrypted again, for its operator (a lost key,
    /// or a signing key registered by someone without the key): its records
    /// are deleted, and every machine that holds a key stops with a message
    /// until it encrypts the account again (`brsync key init`) or forgets
    /// its key. Its key is retired (never taken again: `key init` makes a
    /// new one), as are the keys it was rotated away from.
    /// - Returns: whether the account was encrypted.
    @discardableResult
    func resetEncryption(account: String) throws -> Bool
    @discardableResult
    func purgeTombstones(retentionMilliseconds: Int64) throws -> Int
    func close()

    // Administration (brsyncd's commands).
    func addAccount(_ name: String) throws
    func accounts() throws -> [Store.Account]
    /// Changes an account's limits (nil leaves one as it is; each at least 1).
    /// - Returns: the limits now.
    @discardableResult
    func setLimits(account: String, records: Int64?, bytes: Int64?, devices: Int64?) throws -> Store.Limits
    func removeAccount(_ name: String) throws
    func addDevice(account: String, name: String) throws -> String
    func devices(account: String) throws -> [Store.Device]
    func reissueToken(account: String, device name: String) throws -> String
    /// A join code's enrollment secret for the named device: added when it
    /// does not exist (with no token anyone knows), or, when it does, its
    /// token replaced by the secret (the old one stops working; a revoked
    /// device is reinstated). The secret reads until `join` exchanges it,
    /// once, at most `validMilliseconds` from now; a newer code of the device
    /// replaces it.
    /// - Parameter adding: whether the device must be new (`device add`) or must exist (`device token`).
    /// - Returns: the secret, and whether the account was end-to-end encrypted then (the join code says so).
    func enroll(account: String, device name: String, adding: Bool, validMilliseconds: Int64) throws -> Store.JoinSecret
    /// Exchanges a join code's secret for `token`, made by the joining
    /// machine: the device's token from now on, and the secret no longer
    /// works. Asked again with the same token (an answer lost on the way),
    /// it answers the same.
    /// - Throws: ``ServerError/unauthorized(_:)`` for a secret that is not
    ///   valid, expired or used (for another token); ``ServerError/badRequest(_:)``
    ///   for a token not of a device token's form.
    @discardableResult
    func join(secret: String, token: String) throws -> Store.Device
    func revokeDevice(account: String, name: String) throws
    /// Every record of an account as stored, tombstones included, in change
    /// order (the server's side of a comparison; the tests' oracle reads it).
    func records(account: String) throws -> [ChangeRecord]
}

extension SyncStore {
    /// The server's wall clock as a stamp (sent with every answer, so clients
    /// learn the offset of their own clock). It is the wall clock, never a
    /// logical clock that pushed stamps move: no device, of this account or
    /// another, can move the time every client learns.
    public func clockStamp() -> HLCTimestamp {
        HLCTimestamp(wallMillis: currentMillis(), counter: 0, device: Store.serverDevice)
    }
}
