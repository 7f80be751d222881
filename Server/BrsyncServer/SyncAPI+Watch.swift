import HTTP
import JSON
import Net
import ServerStore
import SyncCore
import Synchronization
import SystemServices

/// `GET /v1/watch?since=C[&epoch=E][&key=K][&wait=S]`: a long poll. Answered
/// as soon as the account holds changes past cursor C (or its timeline is
/// no longer E, or its key is not K: none without it), else after S seconds (1 to 55; 55 by default, minus up to 5 at random
/// so a crowd of watches started together does not end together) with
/// `"changed": false`. The answer: `{"changed": BOOL, "cursor": LATEST,
/// "epoch": E}`. While it waits the request holds no thread and no slot of
/// its token (``WatchHub``, ``DeferredResponse``).
extension SyncAPI {
    /// The longest wait, below the 60 s at which common proxies give up on a quiet answer.
    static let maxWatchSeconds = 55

    func watch(_ request: HTTPRequest) throws -> HTTPResponse {
        // Not from memory only: there is always an answer.
        try watch(request, fromMemoryOnly: false)!
    }

    /// A watch that arrives while its device is remembered
    /// (``SyncStore/rememberedWatcher(token:)``: it watched or pulled in the
    /// last minute or so, nothing heard of its account since) starts waiting
    /// on the event loop that read it, without a thread (``HTTPServer/Quick``);
    /// nil for any other, and for anything to refuse: a thread answers it.
    func quickWatch(_ request: HTTPRequest) -> HTTPResponse? {
        (try? watch(request, fromMemoryOnly: true)) ?? nil
    }

    /// - Parameter fromMemoryOnly: read nothing from the store: nil when it would have to be.
    private func watch(_ request: HTTPRequest, fromMemoryOnly: Bool) throws -> HTTPResponse? {
        // Watches give way to pushes and pulls: past three quarters of the
        // requests in progress (a herd of machines watching again after a
        // restart), a new watch is told to come back in 1 to 5 s, spread.
        // (One that starts waiting on the loop takes no thread.)
        if !fromMemoryOnly, activeRequests() > configuration.limits.maxActiveRequests * 3 / 4 {
            var busy = Self.answer(ServerError.unavailable("the server is busy; watch again in a few seconds"))
            busy.headers.set("Retry-After", String(Int.random(in: 1...5)))
            return busy
        }
        let token = try bearerToken(request)
        let hub = store.watches
        // Taken before the account is read: tells whether a change may have
        // come between the read and the watch being registered.
        let generation = hub.generation
        let remembered =
            fromMemoryOnly ? store.rememberedWatcher(token: token) : try store.authenticateRemembered(token: token)
        guard let device = remembered else { return nil }
        let query: [String: String]
        do { query = try request.queryItems() } catch { throw ServerError.badRequest(error.message) }
        guard let sinceText = query["since"], let since = Int64(sinceText), since >= 0 else {
            throw ServerError.badRequest("since must be a cursor (a number 0 or more): the one the last pull ended at")
        }
        let epoch = query["epoch"]
        if let epoch, epoch.isEmpty || epoch.utf8.count > 64 {
            throw ServerError.badRequest("epoch must be the one the last pull answered")
        }
        let key = query["key"]
        if let key, !Wire.isKeyID(key) {
            throw ServerError.badRequest("key must be an account key's id (16 hex digits)")
        }
        var waitMilliseconds = (Self.maxWatchSeconds * 1000) - Int.random(in: 0...5000)
        if let text = query["wait"] {
            guard let seconds = Int(text), (1...Self.maxWatchSeconds).contains(seconds) else {
                throw ServerError.badRequest("wait must be a number of seconds from 1 to \(Self.maxWatchSeconds)")
            }
            waitMilliseconds = seconds * 1000
        }
        // Registered, then compared with the account as read on arrival,
        // unless a change was heard of since that read (then read again): a
        // change committed after the watch is registered fires it, and one
        // before is in the read, so none is missed.
        let holder = WatchHolder()
        let timeline = Locked("")
        let later = DeferredResponse(
            waitMilliseconds: waitMilliseconds,
            make: { [self] woken in
                // Every change to the account, this process's or (through
                // NOTIFY) another's, wakes the watch, and a lost notification
                // wakes them all: a wait that ran out saw none, and is answered
                // from memory. A change no notification told of (a database
                // without NOTIFY, another process writing the file) is found by
                // the client's next watch, which reads the account as it arrives.
                var response =
                    woken
                    ? watchAnswer(token: token, since: since, epoch: epoch, key: key).response
                    : Self.unchanged(cursor: since, epoch: timeline.withLock { $0 })
                response.headers.add(Wire.timeHeader, String(store.currentMillis()))
                return response
            }, ended: { hub.remove(account: device.accountID, id: holder.id) })
        holder.id = hub.add(account: device.accountID, device: device.id) { later.fire() }
        let heard = hub.changed(account: device.accountID, since: generation)
        if heard && fromMemoryOnly {
            later.end()
            return nil
        }
        let now =
            heard
            ? watchAnswer(token: token, since: since, epoch: epoch, key: key)
            : Self.watchAnswer(device, since: since, epoch: epoch, key: key, storeEpoch: store.epoch)
        if now.changed {
            later.end()
            return now.response
        }
        timeline.withLock { $0 = now.epoch }
        var response = HTTPResponse(status: 200)
        response.later = later
        return response
    }

    /// What `device`'s account held when it was read, against the watch's cursor, timeline and key.
    private static func watchAnswer(
        _ device: Store.Device, since: Int64, epoch: String?, key: String?,
        storeEpoch: String
    ) -> (changed: Bool, epoch: String, response: HTTPResponse) {
        let latest = device.accountNextSequence - 1
        let current = Store.epoch(store: storeEpoch, account: device.accountEpoch)
        // A cursor past the latest: the store was rolled back; the pull says what to do.
        let accountKey = device.accountEncrypted ? device.accountKeyID : ""
        let changed = latest != since || (epoch != nil && epoch != current) || (key ?? "") != accountKey
        let body = JSONValue.object(["changed": .bool(changed), "cursor": .int(latest), "epoch": .string(current)])
        return (changed, current, HTTPResponse.json(200, body.jsonText))
    }

    /// "No change": the watch's cursor and the account's timeline.
    private static func unchanged(cursor: Int64, epoch: String) -> HTTPResponse {
        HTTPResponse.json(
            200, JSONValue.object(["changed": .bool(false), "cursor": .int(cursor), "epoch": .string(epoch)]).jsonText)
    }

    /// What the account holds now, against the watch's cursor, timeline and key.
    private func watchAnswer(
        token: String, since: Int64, epoch: String?, key: String?
    ) -> (changed: Bool, epoch: String, response: HTTPResponse) {
        do {
            return Self.watchAnswer(
                try store.authenticate(token: token), since: since, epoch: epoch, key: key, storeEpoch: store.epoch)
        } catch let error as ServerError {
            return (true, "", Self.answer(error))
        } catch {
            return (true, "", Self.answer(ServerError.storeUnusable("\(error)")))
        }
    }
}

/// The watch's id in the hub, known once it is added; read by its `ended`.
private final class WatchHolder: Sendable {
    private let value = Atomic<UInt64>(0)
    var id: UInt64 {
        get { value.load(ordering: .acquiring) }
        set { value.store(newValue, ordering: .releasing) }
    }
}
