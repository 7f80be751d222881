import ContentCoding
import Cryptography
import Glibc
import HTTP
import JSON
import Model
import Net
import SyncCore

/// One request's connection work, with its retries: connection errors, 429
/// and 503 are retried with exponential backoff and jitter (up to 5 s), or
/// after the wait the server asks for (`Retry-After`, up to 30 s); other
/// answers are not. It touches neither the replica nor the
/// summary, so a pull can fetch its next page on a thread of its own while
/// the client's thread applies the page before; what happened comes back as
/// an ``Exchange`` the client takes in on its own thread.
///
/// The HTTP client inside is not thread-safe: it is used by one thread at a
/// time, handed to a page fetch and taken back only after waiting for it
/// (``SyncClient/pull()``).
struct Transport: @unchecked Sendable {
    let http: any HTTPSending
    let token: String
    /// The server as the user named it, for messages.
    let remote: String
    let attempts: Int
    let backoffMilliseconds: Int
    /// The hex SHA-256 of the token, which every ``WriteSignature`` covers.
    let tokenHash: String
    /// Asked between attempts, every 100 ms of a wait: true ends the
    /// exchange as ``SyncError/cancelled`` (a window's Stop).
    let stopRequested: (@Sendable () -> Bool)?
    /// Told of each attempt after the first: why, its number, how many.
    let retrying: SyncClient.Progress?
    /// The protocol every request says (``SyncClient/Options/protocolVersion``).
    let protocolVersion: Int
    /// What this client learned of the server's content codings.
    let coding = Coding()
    /// The account's signing key, when this machine holds the account key:
    /// its pulls are signed too, so the protocol they say counts toward the
    /// account's sealed format (a token alone cannot raise it: Deploy/SECURITY.md).
    let pullSigner: Crypto.SigningKey?

    /// Whether the server takes gzip request bodies: it said so
    /// (`Accept-Encoding: gzip` on an answer, RFC 7694) since this client
    /// began. Used by one thread at a time, as ``http`` is.
    final class Coding: @unchecked Sendable {
        var serverTakesGzip = false
        /// This machine holds the account's key: nothing is asked or sent
        /// compressed, and a compressed answer is refused (a proxy that
        /// compresses on its own would show the sizes compression finds).
        var encrypted = false
        /// A body compressed ahead (``Transport/compressAhead(_:)``), with
        /// what it compresses: taken by the next request if it is that body.
        var compressedAhead: (body: [UInt8], compressed: [UInt8])?
    }

    /// The most bytes a compressed answer may inflate to: what the parser
    /// takes of a body as it is.
    static let maxAnswerBytes = 64 * 1024 * 1024

    init(
        http: any HTTPSending, token: String, remote: String, attempts: Int, backoffMilliseconds: Int,
        stopRequested: (@Sendable () -> Bool)? = nil, retrying: SyncClient.Progress? = nil,
        protocolVersion: Int = Wire.protocolVersion, pullSigner: Crypto.SigningKey? = nil
    ) {
        self.pullSigner = pullSigner
        self.protocolVersion = protocolVersion
        self.http = http
        self.token = token
        self.remote = remote
        self.attempts = attempts
        self.backoffMilliseconds = backoffMilliseconds
        self.stopRequested = stopRequested
        self.retrying = retrying
        tokenHash = Crypto.hex(Crypto.sha256(Array(token.utf8)))
    }

    /// Sends a request and gives what came of it.
    /// - Parameters:
    ///   - signedBy: the signing key of a write to an encrypted account
    ///     (``WriteSignature``; made once, sent with every attempt).
    ///   - sealedWith: for records (a push or relay), what they are sealed
    ///     with: said in ``Wire/sealedWithHeader``, and the body is sent only
    ///     once the server has checked it against the account
    ///     (`Expect: 100-continue`), so a refusal keeps the records here.
    ///   - whileWaiting: work done once, after the request is written and
    ///     before its answer is read (see ``HTTPClient/send(method:target:headers:body:expectContinue:whileWaiting:wakeup:readTimeoutMilliseconds:)``).
    func exchange(
        method: String, target: String, body: [UInt8] = [], signedBy signer: Crypto.SigningKey? = nil,
        sealedWith: Wire.SealedWith? = nil, whileWaiting: (() -> Void)? = nil
    ) -> Exchange {
        var result = Exchange()
        var waiting = whileWaiting
        let (headers, body) = prepare(
            method: method, target: target, body: body, signedBy: signer, sealedWith: sealedWith)
        var retry = Retry(delay: backoffMilliseconds)
        for attempt in 1...max(1, attempts) {
            if attempt > 1 {
                retrying?(retry.retryingText, attempt, attempts)
                guard pause(milliseconds: retry.nextWait()) else {
                    result.error = .cancelled
                    return result
                }
            }
            let work = waiting
            waiting = nil
            let request = (method: method, target: target, headers: headers, body: body)
            if tryOnce(request, expectContinue: sealedWith != nil, whileWaiting: work, into: &result, retry: &retry) {
                return result
            }
        }
        result.error = retry.exhausted(remote: remote, attempts: attempts)
        return result
    }

    /// Why an exchange tries again, and how long it waits first.
    private struct Retry {
        /// The backoff's next wait, doubled after each (up to 5 s).
        var delay: Int
        /// What went wrong with the last attempt, in words.
        var problem = ""
        /// The last answer, when it said the server is busy (429 or 503).
        var busy: (status: Int, refusal: WireError?)?
        /// The wait the busy server asked for (`Retry-After`), in milliseconds.
        var asked: Int?

        /// What the `retrying` report says before the attempt's number.
        var retryingText: String {
            busy == nil ? "the server did not answer (\(problem)); attempt" : "\(problem); attempt"
        }

        /// The last attempt failed without an answer.
        mutating func failed(_ problem: String) {
            self.problem = problem
            busy = nil
        }

        /// The server answered that it is busy.
        mutating func busy(_ status: Int, _ refusal: WireError?, retryAfterSeconds: Int?) {
            busy = (status, refusal)
            problem = "the server is busy (\(status)\(refusal.map { " \($0.code): \($0.message)" } ?? ""))"
            if let retryAfterSeconds, retryAfterSeconds > 0 { asked = min(30, retryAfterSeconds) * 1000 }
        }

        /// The wait before the next attempt: the server's own (up to 30 s),
        /// spread a little so a herd it sent away does not come back at
        /// once; else the backoff's, up to 5 s.
        mutating func nextWait() -> Int {
            let wait =
                asked.map { $0 + Int.random(in: 0...max(1, $0 / 10)) }
                ?? min(5_000, delay + Int.random(in: 0...max(1, delay / 2)))
            delay = min(5_000, delay * 2)
            asked = nil
            return wait
        }

        /// What an exchange that ran out of attempts ends with.
        func exhausted(remote: String, attempts: Int) -> SyncError {
            guard let busy else { return .unreachable("\(remote): \(problem) (after \(attempts) attempts)") }
            let said = busy.refusal.map { "\($0.code): \($0.message)" } ?? "HTTP \(busy.status)"
            return .busy("\(remote) answered \(said) (after \(attempts) attempts)")
        }
    }

    /// One attempt of an exchange, its outcome put in `result`.
    /// - Returns: whether the exchange ends with it (an answer, or a failure
    ///   that trying again cannot mend); false to try again (`retry` says why).
    private func tryOnce(
        _ request: (method: String, target: String, headers: HTTPHeaders, body: [UInt8]), expectContinue: Bool,
        whileWaiting: (() -> Void)?, into result: inout Exchange, retry: inout Retry
    ) -> Bool {
        var response: HTTPResponseParser.ParsedResponse
        do {
            response = try http.send(
                method: request.method, target: request.target, headers: request.headers, body: request.body,
                expectContinue: expectContinue, whileWaiting: whileWaiting, wakeup: nil, readTimeoutMilliseconds: nil)
        } catch .tls(let message) {
            result.error = .unreachable("\(remote) is not trusted: \(message)")
            return true
        } catch .badAddress(let message) where message.contains("not HTTP") {
            // The parser's reason after the client's prefix: "not an HTTP response", "a response larger than 64 MiB…".
            let reason = message.split(separator: ": ", maxSplits: 1).last.map(String.init) ?? message
            result.error = .badAnswer(
                reason.hasPrefix("not an HTTP")
                    ? "\(remote) did not answer HTTP (is it a brsyncd server?)"
                    : "\(remote) answered with \(reason) (is it a brsyncd server?)")
            return true
        } catch {
            retry.failed("\(error)")
            return false
        }
        result.requests += 1
        result.bytesSent += request.body.count
        result.bytesReceived += response.body.count
        if response.headers.contains("Accept-Encoding", token: Gzip.name) { coding.serverTakesGzip = true }
        if let problem = decode(&response) {
            result.error = problem
            return true
        }
        // Every answer, errors too, carries the server's wall clock.
        if let time = response.headers[Wire.timeHeader].flatMap(Int64.init), time > 0 {
            result.serverTime = (time, Deadline.now().milliseconds)
        }
        if response.status == 200 {
            result.body = response.body
            return true
        }
        let json = try? response.body.withUnsafeBufferPointer { try JSONValue.parse(utf8: $0) }
        let wire = json.flatMap(WireError.init(json:))
        if response.status == 429 || response.status == 503 {
            retry.busy(response.status, wire, retryAfterSeconds: response.headers["Retry-After"].flatMap(Int.init))
            return false
        }
        guard let wire else {
            result.error = .badAnswer("HTTP \(response.status) without a brsync error body")
            return true
        }
        result.refusal = wire
        result.error = .refused(code: wire.code, message: wire.message)
        return true
    }

    /// The request's headers and body: the token and protocol version; the
    /// body compressed where that is safe; what records are sealed with;
    /// the write's signature.
    private func prepare(
        method: String, target: String, body: [UInt8], signedBy signer: Crypto.SigningKey?,
        sealedWith: Wire.SealedWith?
    ) -> (HTTPHeaders, [UInt8]) {
        var headers: HTTPHeaders = [
            "Authorization": "Bearer \(token)", "Accept": "application/json",
            Wire.protocolHeader: String(protocolVersion),
        ]
        if !coding.encrypted { headers.add("Accept-Encoding", Gzip.name) }
        if !body.isEmpty { headers.add("Content-Type", "application/json") }
        // A readable account's records go compressed once the server said
        // it takes gzip; an encrypted account's never (their sizes would
        // tell what compression found alike).
        var body = body
        let ahead = coding.compressedAhead.take()
        if !coding.encrypted, sealedWith == Wire.SealedWith.none, signer == nil, body.count >= Gzip.minimumBytes,
            coding.serverTakesGzip
        {
            body = ahead.flatMap { $0.body == body ? $0.compressed : nil } ?? Gzip.compress(body)
            headers.add("Content-Encoding", Gzip.name)
        }
        if let sealedWith { headers.add(Wire.sealedWithHeader, sealedWith.description) }
        if let signer {
            let path = target.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)[0]
            let message = WriteSignature.message(
                tokenHash: tokenHash, method: method, path: String(path), bodyDigest: Crypto.hex(Crypto.sha256(body)))
            let signature = WriteSignature(
                publicKey: Crypto.base64URL(signer.publicKey), signature: Crypto.base64URL(signer.sign(message)))
            headers.add(WriteSignature.header, signature.headerValue)
        }
        return (headers, body)
    }

    /// Compresses `body` now, for the next request to take when it sends
    /// that body compressed (a push's next batch, while one is in flight).
    func compressAhead(_ body: [UInt8]) {
        guard !coding.encrypted, body.count >= Gzip.minimumBytes, coding.serverTakesGzip else { return }
        coding.compressedAhead = (body, Gzip.compress(body))
    }

    /// Waits before a retry, in slices: a stop asked for meanwhile ends it at
    /// once (false).
    private func pause(milliseconds: Int) -> Bool {
        var left = milliseconds
        while left > 0 {
            if stopRequested?() == true { return false }
            let slice = min(left, 100)
            usleep(useconds_t(slice * 1000))
            left -= slice
        }
        return true
    }

    /// Undoes the answer's content coding (gzip, and only for a readable
    /// account); the problem when it cannot be or should not be there.
    private func decode(_ response: inout HTTPResponseParser.ParsedResponse) -> SyncError? {
        guard let content = response.headers["Content-Encoding"] else { return nil }
        guard !coding.encrypted else {
            return .badAnswer(
                "\(remote) compressed an end-to-end encrypted account's answer, which this machine never asks for "
                    + "(a proxy in front of brsyncd that compresses? Deploy/OPERATIONS.md)")
        }
        guard content.asciiLowercased() == Gzip.name else {
            return .badAnswer("\(remote) answered in a content coding it was not asked for ('\(content)')")
        }
        do {
            response.body = try Gzip.decompress(response.body, limit: Self.maxAnswerBytes)
        } catch {
            return .badAnswer("\(remote) answered with a damaged compressed body: \(error)")
        }
        return nil
    }

    /// A pull page; an answer that is not one is a bad answer, and records
    /// that are not valid are set aside (``PullResponse/unusable``).
    func fetchPage(_ target: String) -> (Exchange, PullResponse?) {
        var exchange = exchange(method: "GET", target: target, signedBy: pullSigner)
        guard exchange.error == nil else { return (exchange, nil) }
        let page = exchange.body.withUnsafeBufferPointer { bytes in
            Result { () throws(Wire.ReadError) in try PullResponse(reading: bytes) }
        }
        switch page {
        case .success(let page): return (exchange, page)
        case .failure(.notJSON): exchange.error = .badAnswer("the answer to GET \(target) is not JSON")
        case .failure(.invalid(let problem)): exchange.error = .badAnswer(problem.message)
        }
        return (exchange, nil)
    }
}

/// What one request did: its body or why it failed, and what the client
/// keeps of it (counts for the summary, the server's clock, its refusal).
struct Exchange: Sendable {
    var body: [UInt8] = []
    var error: SyncError?
    var refusal: WireError?
    /// The server's wall clock from the last answer, and when (monotonic
    /// milliseconds) it arrived.
    var serverTime: (server: Int64, received: Int64)?
    var requests = 0
    var bytesSent = 0
    var bytesReceived = 0

    /// What a request fetched ahead and not used still counts: its bytes and
    /// the server's clock, without its body or error.
    var countsOnly: Exchange {
        Exchange(serverTime: serverTime, requests: requests, bytesSent: bytesSent, bytesReceived: bytesReceived)
    }
}

extension SyncClient {
    /// One request with retries (see ``Transport``); the body of its JSON 200 answer.
    /// - Parameter signedBy: the key that signs it; a write (POST) is signed
    ///   by this client's account key by default.
    func send(
        method: String, target: String, body: [UInt8] = [], signedBy: Crypto.SigningKey? = nil,
        whileWaiting: (() -> Void)? = nil
    ) throws -> JSONValue {
        let answer = try sendForBody(
            method: method, target: target, body: body, signedBy: signedBy, whileWaiting: whileWaiting)
        return try Self.json(answer, "the answer to \(method) \(target)")
    }

    static func json(_ answer: [UInt8], _ what: @autoclosure () -> String) throws(SyncError) -> JSONValue {
        guard let json = try? answer.withUnsafeBufferPointer({ try JSONValue.parse(utf8: $0) }) else {
            throw .badAnswer("\(what()) is not JSON")
        }
        return json
    }

    /// A page of `GET target` (see ``Transport/fetchPage(_:)``).
    func fetchPage(_ target: String) throws -> PullResponse {
        try checkStopRequested()
        let (exchange, page) = transport.fetchPage(target)
        try takeIn(exchange)
        // An exchange without an error holds a page.
        guard let page else { throw SyncError.badAnswer("the answer to GET \(target) holds no page") }
        return page
    }

    /// Sends a request (retrying what may be retried) and gives the body of
    /// its 200 answer; any other answer throws.
    /// - Parameter whileWaiting: work done once, after the request is written
    ///   and before its answer is read.
    func sendForBody(
        method: String, target: String, body: [UInt8] = [], signedBy: Crypto.SigningKey? = nil,
        sealedWith: Wire.SealedWith? = nil, whileWaiting: (() -> Void)? = nil
    ) throws -> [UInt8] {
        try checkStopRequested()
        let signer = signedBy ?? (method == "POST" ? signingKey : nil)
        let exchange = transport.exchange(
            method: method, target: target, body: body, signedBy: signer, sealedWith: sealedWith,
            whileWaiting: whileWaiting)
        try takeIn(exchange)
        return exchange.body
    }

    /// Sends records (a push or a relay, `target`), sealed with this
    /// client's key or readable without one, and gives the JSON of the 200
    /// answer. The one way records leave this machine: they go only if no
    /// mark forbids it (``checkRecordsMayLeave()``), and only after the
    /// server, told on the request's head what they are sealed with, let the
    /// body come; a refusal there marks the replica.
    func sendRecords(to target: String, body: [UInt8], whileWaiting: (() -> Void)? = nil) throws -> JSONValue {
        try checkRecordsMayLeave()
        let answer = try sendForBody(
            method: "POST", target: target, body: body, sealedWith: Wire.SealedWith(keyID: keyID),
            whileWaiting: whileWaiting)
        return try Self.json(answer, "the answer to POST \(target)")
    }

    /// Stops the sync before its next request when asked to (``Options/stopRequested``).
    func checkStopRequested() throws(SyncError) {
        if options.stopRequested?() == true { throw .cancelled }
    }

    /// Takes what a request did into the summary and the replica (the
    /// server's clock, as it was when the answer arrived), on the client's
    /// thread; throws its error.
    func takeIn(_ exchange: Exchange) throws {
        summary.requests += exchange.requests
        summary.bytesSent += exchange.bytesSent
        summary.bytesReceived += exchange.bytesReceived
        if let time = exchange.serverTime {
            try replica.observeServerTime(
                time.server, ageMilliseconds: max(0, Deadline.now().milliseconds - time.received))
        }
        if let refusal = exchange.refusal {
            lastRefusal = refusal
            if refusal.code == .clockSkew { clockRefused = true }
            try noteMarks(refusal)
        }
        if let error = exchange.error { throw error }
    }
}
