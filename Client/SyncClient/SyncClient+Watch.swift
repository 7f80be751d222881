import HTTP
import JSON
import Net
import SyncCore

extension SyncClient {
    /// What a watch (``watch(wakeup:waitSeconds:)``) came to.
    public enum WatchAnswer: Sendable, Equatable {
        /// The account holds changes this replica has not pulled (or its
        /// timeline changed): time to sync.
        case changed
        /// Its wait ended with no change: watch again.
        case unchanged
        /// Ended from outside (an edit here, a network change).
        case interrupted
        /// The server has no watch (a brsyncd older than 0.1): sync on a timer.
        case unsupported
    }

    /// Whether this replica has work for the server that no change there
    /// announces: unpushed edits, records to send again (a key change, a
    /// restore), a reconcile under way, or an account key it has not
    /// started syncing with. A watch syncs first when it has.
    public func hasWorkToSend() throws -> Bool {
        if try replica.unpushedCount() > 0 || replica.isReconciling() { return true }
        let encryption = try replica.encryptionState()
        return encryption.relayPending || encryption.keyID != keyID
    }

    /// The longest a watch waits for the server's answer: its 55 s and a margin.
    static let watchReadMilliseconds = 70_000

    /// Waits, in one long poll (`GET /v1/watch`), until the account moves
    /// past what this replica pulled, or the server's wait ends, or
    /// `wakeup` becomes readable. One attempt, no retries: the caller
    /// decides when to try again.
    /// - Parameter waitSeconds: the server's wait (1 to 55; its default, about 55, when nil).
    /// - Throws: ``SyncError/unreachable(_:)`` when the server cannot be
    ///   reached or the connection breaks; ``SyncError/refused(code:message:)``
    ///   with the server's reason (a revoked token).
    public func watch(wakeup: Int32?, waitSeconds: Int? = nil) throws -> WatchAnswer {
        let state = try replica.syncState()
        var target = "/v1/watch?since=\(state.pullCursor)"
        if let epoch = state.epoch, SessionRules.isPlainEpoch(epoch) { target += "&epoch=\(epoch)" }
        // The account's key changing (a rotation elsewhere, encryption on or off) is a change too.
        if let keyID { target += "&key=\(keyID)" }
        if let waitSeconds { target += "&wait=\(waitSeconds)" }
        let headers: HTTPHeaders = [
            "Authorization": "Bearer \(token)", "Accept": "application/json",
            Wire.protocolHeader: String(options.protocolVersion),
        ]
        let response: HTTPResponseParser.ParsedResponse
        do {
            response = try transport.http.send(
                method: "GET", target: target, headers: headers, body: [], expectContinue: false, whileWaiting: nil,
                wakeup: wakeup,
                readTimeoutMilliseconds: Self.watchReadMilliseconds)
        } catch .interrupted {
            return .interrupted
        } catch .tls(let message) {
            throw SyncError.unreachable("\(remote) is not trusted: \(message)")
        } catch {
            throw SyncError.unreachable("\(remote): \(error)")
        }
        if let time = response.headers[Wire.timeHeader].flatMap(Int64.init), time > 0 {
            try replica.observeServerTime(time, ageMilliseconds: 0)
        }
        let json = try? response.body.withUnsafeBufferPointer { try JSONValue.parse(utf8: $0) }
        switch response.status {
        case 200:
            guard case .object(let answer)? = json, case .bool(let changed)? = answer["changed"] else {
                throw SyncError.badAnswer("the answer to GET /v1/watch is not a watch's answer")
            }
            return changed ? .changed : .unchanged
        case 404:
            return .unsupported
        case 429, 503:
            throw SyncError.busy("\(remote) answered HTTP \(response.status) to a watch")
        default:
            guard let wire = json.flatMap(WireError.init(json:)) else {
                throw SyncError.badAnswer("HTTP \(response.status) without a brsync error body")
            }
            throw SyncError.refused(code: wire.code, message: wire.message)
        }
    }
}
