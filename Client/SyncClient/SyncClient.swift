import Glibc
import HTTP
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
        /// Records per pull page. Default 1,000.
        public var pullLimit = 1000
        /// Attempts for one request on connection errors, 429 and 503. Default 5.
        public var attempts = 5
        /// First backoff; doubled each retry, with jitter, at most 5 s. Default 250 ms.
        public var backoffMilliseconds = 250
        public var connectTimeoutMilliseconds = 10_000
        public var readTimeoutMilliseconds = 30_000
        public init() {}
    }

    /// Progress of a long transfer: (what, done, total or nil).
    public typealias Progress = (String, Int, Int?) -> Void

    public struct Summary: Sendable, Equatable {
        public var pushed = 0
        public var pulled = 0
        public var applied = 0
        public var requests = 0
        public var bytesSent = 0
        public var bytesReceived = 0
        public var fullResync = false
        /// Time spent merging pulled pages into the replica (each page one transaction).
        public var applyMilliseconds: Int64 = 0
    }

    let replica: Replica
    let remote: RemoteURL
    let token: String
    let options: Options
    let http: HTTPClient
    var summary = Summary()
    let progress: Progress?

    public init(replica: Replica, remote: RemoteURL, token: String, caFile: String?, options: Options = Options(), progress: Progress? = nil) throws(SyncError) {
        self.replica = replica
        self.remote = remote
        self.token = token
        self.options = options
        self.progress = progress
        let tls: TLSContext
        do { tls = try TLSContext.client(caFile: caFile) } catch { throw .usage("\(error)") }
        var configuration = HTTPClient.Configuration(address: SocketAddress(host: remote.host, port: remote.port), serverName: remote.host, tls: tls)
        configuration.connectTimeoutMilliseconds = options.connectTimeoutMilliseconds
        configuration.readTimeoutMilliseconds = options.readTimeoutMilliseconds
        http = HTTPClient(configuration)
    }

    /// Push, then pull until nothing is left.
    public func sync() throws -> Summary {
        try push()
        try pull()
        try replica.recordSync()
        return summary
    }

    /// Sends every unpushed change, in batches; a retry after a lost answer is safe.
    @discardableResult
    public func push() throws -> Summary {
        var state = try replica.syncState()
        let total = try replica.unpushedCount()
        var done = 0
        while true {
            let changes = try replica.unpushedChanges(after: state.pushedThrough, limit: options.pushBatch)
            guard let first = changes.first, let last = changes.last else { break }
            let request = PushRequest(device: replica.deviceID, from: first.sequence, to: last.sequence, changes: changes)
            let answer = try send(method: "POST", target: "/v1/push", body: Array(request.json.jsonText.utf8))
            let response: PushResponse
            do { response = try PushResponse(json: answer) } catch { throw SyncError.badAnswer(error.message) }
            try replica.observeServerClock(response.clock)
            if try handleEpoch(response.epoch) {
                state = try replica.syncState()
                continue
            }
            for lost in response.lost {
                try replica.recordConflict(collection: lost.collection, key: lost.key, field: lost.field, lost: lost.lost, winner: lost.winner)
            }
            try replica.markPushed(through: response.acknowledged)
            state.pushedThrough = response.acknowledged
            done += changes.count
            summary.pushed += changes.count
            progress?("pushed", done, total)
        }
        return summary
    }

    /// Pulls every page after the cursor; each page and its cursor are applied
    /// in one transaction, so a client killed mid-pull resumes where it stopped.
    @discardableResult
    public func pull() throws -> Summary {
        while try pullPage() {}
        return summary
    }

    private var pulledSoFar = 0

    /// Pulls and applies one page; returns whether more are waiting. (A client
    /// stopped between pages resumes from the stored cursor.)
    public func pullPage() throws -> Bool {
        while true {
            let state = try replica.syncState()
            let answer = try send(method: "GET", target: "/v1/pull?since=\(state.pullCursor)&limit=\(options.pullLimit)")
            let page: PullResponse
            do { page = try PullResponse(json: answer) } catch { throw SyncError.badAnswer(error.message) }
            try replica.observeServerClock(page.clock)
            if try handleEpoch(page.epoch) {
                // Everything local goes up again before pulling from zero.
                try push()
                continue
            }
            let started = Replica.systemNow()
            summary.applied += try replica.applyPulled(page.changes, cursor: page.next, epoch: page.epoch)
            summary.applyMilliseconds += Replica.systemNow() - started
            summary.pulled += page.changes.count
            pulledSoFar += page.changes.count
            if !page.changes.isEmpty { progress?("pulled", pulledSoFar, nil) }
            return page.more
        }
    }

    /// A new server epoch (the server was restored or reset): start over.
    private func handleEpoch(_ epoch: String) throws -> Bool {
        let known = try replica.syncState().epoch
        guard let known, known != epoch else {
            if known == nil { try replica.startNewEpochIfFirst(epoch) }
            return false
        }
        try replica.startNewEpoch(epoch)
        summary.fullResync = true
        return true
    }

    /// One request with retries: connection errors, 429 and 503 are retried
    /// with exponential backoff and jitter (honouring Retry-After); other 4xx
    /// are not.
    func send(method: String, target: String, body: [UInt8] = []) throws -> JSONValue {
        var headers: HTTPHeaders = ["Authorization": "Bearer \(token)", "Accept": "application/json"]
        if !body.isEmpty { headers.add("Content-Type", "application/json") }
        var delay = options.backoffMilliseconds
        var lastProblem = ""
        for attempt in 1...max(1, options.attempts) {
            if attempt > 1 {
                let jitter = Int.random(in: 0...max(1, delay / 2))
                usleep(useconds_t(min(5_000, delay + jitter) * 1000))
                delay = min(5_000, delay * 2)
            }
            let response: HTTPResponseParser.ParsedResponse
            do {
                response = try http.send(method: method, target: target, headers: headers, body: body)
            } catch .tls(let message) {
                throw SyncError.unreachable("\(remote) is not trusted: \(message)")
            } catch .badAddress(let message) where message.contains("not HTTP") {
                throw SyncError.badAnswer("\(remote) did not answer HTTP (is it a brsyncd server?)")
            } catch {
                lastProblem = "\(error)"
                continue
            }
            summary.requests += 1
            summary.bytesSent += body.count
            summary.bytesReceived += response.body.count
            let json = try? response.body.withUnsafeBufferPointer { try JSONValue.parse(utf8: $0) }
            if response.status == 200 {
                guard let json else { throw SyncError.badAnswer("the answer to \(method) \(target) is not JSON") }
                return json
            }
            let wire = json.flatMap(WireError.init(json:))
            if response.status == 429 || response.status == 503 {
                lastProblem = "the server is busy (\(response.status))"
                if let retryAfter = response.headers["Retry-After"].flatMap(Int.init), retryAfter > 0 {
                    delay = min(30_000, retryAfter * 1000)
                }
                continue
            }
            guard let wire else { throw SyncError.badAnswer("HTTP \(response.status) without a brsync error body") }
            throw SyncError.refused(code: wire.code, message: wire.message)
        }
        throw SyncError.unreachable("\(remote): \(lastProblem) (after \(options.attempts) attempts)")
    }
}
