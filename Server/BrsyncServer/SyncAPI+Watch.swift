import HTTP
import JSON
import Net
import SyncCore
import Synchronization

/// `GET /v1/watch?since=C[&epoch=E][&key=K][&wait=S]`: a long poll. Answered
/// as soon as the account holds changes past cursor C (or its timeline is
/// no longer E, or its key is not K: none without it), else after S seconds (1 to 55; 55 by default, minus up to 5 at random
/// so a crowd of watches started together does not end together) with
/// `"changed": false`. The answer: `{"changed": BOOL, "cursor": LATEST,
/// "epoch": E}`. While it waits the request holds no thread and no slot of
/// its token (``WatchHub``, ``LaterAnswer``).
extension SyncAPI {
    /// The longest wait, below the 60 s at which common proxies give up on a quiet answer.
    static let maxWatchSeconds = 55

    func watch(_ request: HTTPRequest) throws -> HTTPResponse {
        // Watches give way to pushes and pulls: past three quarters of the
        // requests in progress (a herd of machines watching again after a
        // restart), a new watch is told to come back in 1 to 5 s, spread.
        if activeRequests() > configuration.limits.maxActiveRequests * 3 / 4 {
            var busy = Self.answer(ServerError.unavailable("the server is busy; watch again in a few seconds"))
            busy.headers.set("Retry-After", String(Int.random(in: 1...5)))
            return busy
        }
        let token = try bearerToken(request)
        let device = try store.authenticate(token: token)
        let query = request.queryItems
        guard let sinceText = query["since"], let since = Int64(sinceText), since >= 0 else {
            throw ServerError.badRequest("since must be a cursor (a number 0 or more): the one the last pull ended at")
        }
        let epoch = query["epoch"]
        if let epoch, epoch.isEmpty || epoch.utf8.count > 64 { throw ServerError.badRequest("epoch must be the one the last pull answered") }
        let key = query["key"]
        if let key, !Wire.isKeyID(key) { throw ServerError.badRequest("key must be an account key's id (16 hex digits)") }
        var waitMilliseconds = (Self.maxWatchSeconds * 1000) - Int.random(in: 0...5000)
        if let text = query["wait"] {
            guard let seconds = Int(text), (1...Self.maxWatchSeconds).contains(seconds) else {
                throw ServerError.badRequest("wait must be a number of seconds from 1 to \(Self.maxWatchSeconds)")
            }
            waitMilliseconds = seconds * 1000
        }
        // Registered before the account is read: a change committed in
        // between fires it, and is not missed.
        let hub = store.watches
        let holder = WatchHolder()
        let later = LaterAnswer(waitMilliseconds: waitMilliseconds, make: { [self] in
            var response = watchAnswer(token: token, since: since, epoch: epoch, key: key).response
            response.headers.add(Wire.timeHeader, String(store.currentMillis()))
            return response
        }, ended: { hub.remove(account: device.accountID, id: holder.id) })
        holder.id = hub.add(account: device.accountID, device: device.id, later: later)
        let now = watchAnswer(token: token, since: since, epoch: epoch, key: key)
        if now.changed {
            later.end()
            return now.response
        }
        var response = HTTPResponse(status: 200)
        response.later = later
        return response
    }

    /// What the account holds now, against the watch's cursor, timeline and key.
    private func watchAnswer(token: String, since: Int64, epoch: String?, key: String?) -> (changed: Bool, response: HTTPResponse) {
        do {
            let device = try store.authenticate(token: token)
            let latest = device.accountNextSequence - 1
            let current = Store.epoch(store: store.epoch, account: device.accountEpoch)
            // A cursor past the latest: the store was rolled back; the pull says what to do.
            let accountKey = device.accountEncrypted ? device.accountKeyID : ""
            let changed = latest != since || (epoch != nil && epoch != current) || (key ?? "") != accountKey
            let body = JSONValue.object(["changed": .bool(changed), "cursor": .int(latest), "epoch": .string(current)])
            return (changed, HTTPResponse.json(200, body.jsonText))
        } catch let error as ServerError {
            return (true, Self.answer(error))
        } catch {
            return (true, Self.answer(ServerError.storeUnusable("\(error)")))
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
