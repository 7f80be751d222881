import HTTP
import JSON
import Logging
import Model
import Net
import ServerStore
import SyncCore
import SystemServices

/// The HTTP API: routes, authentication, and the mapping of errors to answers.
///
/// | route | auth | answer |
/// |---|---|---|
/// | `POST /v1/push` | bearer | ``PushResponse`` |
/// | `POST /v1/relay` | bearer | ``PushResponse`` (applied, rejected) |
/// | `GET /v1/pull?since=C&limit=N&epoch=E[&device=D&pushed=S&digest=X][&full=1][&key=K&signer=PK]` | bearer | ``PullResponse`` |
/// | `POST /v1/account/encrypt` ``EncryptRequest`` | bearer, signed | ``EncryptResponse`` |
/// | `POST /v1/account/timeline` ``TimelineRequest`` | bearer, signed | ``TimelineResponse`` |
/// | `GET /v1/watch?since=C[&epoch=E][&wait=S]` | bearer | `{"changed":…,"cursor":…,"epoch":…}`, when the account moves past C or after S seconds |
/// | `GET /v1/health` | none | `{"status":"ok","epoch":…}` |
///
/// Clients send `Brsync-Protocol: 3` (``Wire/protocolHeader``); without it a
/// request is protocol 1, which an end-to-end encrypted account refuses.
/// Writes to an encrypted account (push, relay, key changes) are signed
/// (``WriteSignature``, ``WriteAuthority``); a token alone only reads.
/// | `GET /metrics` | none | Prometheus text |
public final class SyncAPI: Sendable {
    public let store: SyncStore
    public let configuration: ServerConfiguration
    public let metrics: ServerMetrics
    let logger: Logger
    /// Requests being read and answered on threads now (watches give way past 3/4 of the cap).
    let activeRequests: @Sendable () -> Int
    /// Requests in progress per bearer token.
    let gate: RequestGate

    public init(
        store: SyncStore, configuration: ServerConfiguration, metrics: ServerMetrics, logger: Logger,
        activeRequests: @escaping @Sendable () -> Int = { 0 }
    ) {
        self.activeRequests = activeRequests
        self.store = store
        self.configuration = configuration
        self.metrics = metrics
        self.logger = logger
        gate = RequestGate(limit: configuration.maxRequestsPerToken)
    }

    /// Answers one request; never throws: every error becomes its JSON answer.
    public func handle(_ request: HTTPRequest, _ context: HTTPServer.RequestContext) -> HTTPResponse {
        var response = answer(request, context)
        // The server's wall clock on every answer (errors too: a client
        // refused for its clock learns the right time).
        response.headers.add(Wire.timeHeader, String(store.currentMillis()))
        Self.advertiseCoding(&response)
        return response
    }

    private func answer(_ request: HTTPRequest, _ context: HTTPServer.RequestContext) -> HTTPResponse {
        // One credential's requests in progress are bounded before any work,
        // and a request counts until its answer has been written: a client
        // that never reads holds its slot, not a new page each time.
        guard let credential = request.headers["Authorization"] else { return work(request, context) }
        guard gate.enter(credential) else {
            logger.info(
                "\(request.method) \(request.path) from \(context.peer): 503 this token's requests in progress are at the limit"
            )
            return Self.answer(
                ServerError.unavailable("this device has \(gate.limit) requests in progress already; retry"))
        }
        var response = work(request, context)
        let gate = gate
        let large = response.body.count > Self.largeAnswerBytes || request.body.count > Self.largeAnswerBytes
        response.whenWritten = HTTPResponse.WhenWritten {
            gate.leave(credential)
            // A large answer's (or push's) memory goes back to the system once it has left.
            if large { Memory.giveBack() }
        }
        return response
    }

    /// An answer (or a request's body) larger than this (1 MiB) is followed by ``Memory/giveBack()``.
    static let largeAnswerBytes = 1 << 20

    private func work(_ request: HTTPRequest, _ context: HTTPServer.RequestContext) -> HTTPResponse {
        do {
            return try route(request)
        } catch let error as ServerError {
            if error.httpStatus >= 500, error.code != .quotaExceeded {
                logger.error("\(request.method) \(request.path) from \(context.peer): \(error)")
            } else {
                logger.info("\(request.method) \(request.path) from \(context.peer): \(error.httpStatus) \(error.code)")
            }
            return Self.answer(error)
        } catch {
            logger.error("\(request.method) \(request.path) from \(context.peer): \(error)")
            return Self.answer(ServerError.storeUnusable("\(error)"))
        }
    }

    /// Decides on a request's head, before its body is read: an unknown path,
    /// a wrong method or a missing, unknown or revoked token is answered
    /// without reading a byte of the body (the connection then closes).
    public func admit(_ head: HTTPRequest, _ context: HTTPServer.RequestContext) -> HTTPResponse? {
        do {
            guard let route = Route(path: head.path) else {
                throw ServerError.notFound("no such endpoint: \(head.path)")
            }
            guard route.takesBody else { throw ServerError.badRequest("\(head.path) takes no body") }
            try route.check(method: head.method)
            switch route {
            case .push, .relay, .encrypt, .timeline:
                if try bearerToken(head).hasPrefix(Tokens.joinPrefix) { throw Self.joinSecretOnlyReads }
                let device = try authenticate(head)
                _ = try Self.clientProtocol(head)
                // Records readable for an encrypted account, or sealed with a
                // key it left, are refused before they are sent (the client
                // waits for `100 Continue`). First: a machine without the key
                // that compresses (it took the account to be readable) is
                // told the account is encrypted, not only that it compressed.
                if route == .push || route == .relay, let claim = try Self.sealedWith(head) {
                    try SyncEngine.checkSealing(claim, of: device)
                }
                try Self.checkCoding(head, route: route, device: device)
                return nil
            case .join:
                try Self.checkCoding(head, route: route, device: nil)
                // A secret the server never issued is refused on the headers;
                // one it did is checked with the body (a retry after the
                // exchange must be told it is done). The body is small: the
                // event loop reads it, so a slow one holds no thread.
                let secret = try bearerToken(head)
                guard secret.hasPrefix(Tokens.joinPrefix) else {
                    throw ServerError.unauthorized(
                        "/v1/join takes a join code's secret ('\(Tokens.joinPrefix)…') as its bearer token")
                }
                guard let length = head.headers["Content-Length"].flatMap(Int.init), length <= Self.maxJoinBodyBytes
                else {
                    throw ServerError.badRequest(
                        "a join request is a JSON body of at most \(Self.maxJoinBodyBytes) bytes, with Content-Length")
                }
                guard try store.joinSecretIssued(secret) else {
                    throw ServerError.unauthorized("the token is not valid")
                }
                return nil
            case .pull, .watch, .health:
                return nil // no body: refused above
            }
        } catch let error as ServerError {
            logger.info(
                "\(head.method) \(head.path) from \(context.peer): refused before the body: \(error.httpStatus) \(error.code)"
            )
            var response = Self.answer(error)
            response.headers.add(Wire.timeHeader, String(store.currentMillis()))
            Self.advertiseCoding(&response)
            return response
        } catch {
            return Self.answer(ServerError.storeUnusable("\(error)"))
        }
    }

    static func answer(_ error: ServerError) -> HTTPResponse {
        var response = HTTPResponse.json(error.httpStatus, error.wire.json.jsonText)
        if error.httpStatus == 401 { response.headers.add("WWW-Authenticate", "Bearer realm=\"brsyncd\"") }
        if error.httpStatus == 503 { response.headers.add("Retry-After", "1") }
        if case .timelineLimited(let seconds) = error { response.headers.add("Retry-After", String(seconds)) }
        if case .methodNotAllowed(_, let allow) = error { response.headers.add("Allow", allow.joined(separator: ", ")) }
        return response
    }

    private func route(_ request: HTTPRequest) throws -> HTTPResponse {
        guard let route = Route(path: request.path) else {
            throw ServerError.notFound("no such endpoint: \(request.path)")
        }
        try route.check(method: request.method)
        switch route {
        case .push: return try push(request)
        case .relay: return try relay(request)
        case .pull: return try pull(request)
        case .encrypt: return try encrypt(request)
        case .timeline: return try confirmTimeline(request)
        case .watch: return try watch(request)
        case .join: return try join(request)
        case .health:
            let body = JSONValue.object([
                "status": .string("ok"), "epoch": .string(store.epoch), "version": .string(BrsyncVersion.current),
            ])
            return HTTPResponse.json(200, body.jsonText)
        }
    }

    /// The device named by the request's bearer token.
    func authenticate(_ request: HTTPRequest) throws -> Store.Device {
        try store.authenticate(token: try bearerToken(request))
    }

    /// The token of `Authorization: Bearer TOKEN`.
    func bearerToken(_ request: HTTPRequest) throws -> String {
        guard let header = request.headers["Authorization"] else {
            throw ServerError.unauthorized("this endpoint needs 'Authorization: Bearer TOKEN'")
        }
        // One credential per request: with two, which one counts would be a guess.
        guard request.headers.count("Authorization") == 1 else {
            throw ServerError.unauthorized("send one Authorization header, not several")
        }
        // The scheme, one space, and the token (as `split(separator: " ",
        // maxSplits: 1)` cuts it, without the array).
        let text = header.drop { $0 == " " }
        guard let space = text.firstIndex(of: " "), text[..<space].equalsIgnoringASCIICase("bearer"),
            case let token = text[text.index(after: space)...], !token.isEmpty
        else { throw ServerError.unauthorized("the Authorization header must be 'Bearer TOKEN'") }
        return String(token)
    }

    /// The protocol the client speaks: `Brsync-Protocol`, 1 without it.
    static func clientProtocol(_ request: HTTPRequest) throws -> Int {
        guard let text = request.headers[Wire.protocolHeader] else { return 1 }
        guard text.utf8.count <= 4, let version = Int(text), version >= 1 else {
            throw ServerError.badRequest("\(Wire.protocolHeader) must be a protocol number (1 or more)")
        }
        return version
    }

    /// What a push or relay says its records are sealed with
    /// (``Wire/sealedWithHeader``); nil from a client that does not say.
    static func sealedWith(_ request: HTTPRequest) throws(ServerError) -> Wire.SealedWith? {
        guard let text = request.headers[Wire.sealedWithHeader] else { return nil }
        guard request.headers.values(Wire.sealedWithHeader).count == 1, let claim = Wire.SealedWith(header: text) else {
            throw .badRequest("\(Wire.sealedWithHeader) is 'none' or an account key's id (16 hex digits), given once")
        }
        return claim
    }

    /// The key a push or relay's body names must be the one its head said
    /// (the head was checked before the body came).
    static func checkSealedWith(_ request: HTTPRequest, body keyID: String?) throws(ServerError) {
        guard let claim = try sealedWith(request), claim.keyID != keyID else { return }
        throw .badRequest(
            "the body's key (\(keyID ?? "none")) is not the one \(Wire.sealedWithHeader) names (\(claim))")
    }

    /// The device, authenticated, and refused when its account is encrypted
    /// and the client speaks protocol 1 (it could not read what it pulls,
    /// nor seal what it pushes).
    private func authenticateSpeaking(_ request: HTTPRequest) throws -> Store.Device {
        let device = try authenticate(request)
        try SyncEngine.checkProtocol(try Self.clientProtocol(request), of: device)
        return device
    }

    /// Makes the account end-to-end encrypted with the key `key`, or
    /// rotates it from `replaces`, if the account holds no record after
    /// `seen` (see ``SyncStore/encryptAccount(of:keyID:replacing:seen:)``).
    /// Only a client of protocol 2 can ask; asking again changes nothing.
    /// The answer names the account's key, so a client can tell its key
    /// from another machine's.
    private func encrypt(_ request: HTTPRequest) throws -> HTTPResponse {
        let device = try authenticate(request)
        let authority = try writeAuthority(request)
        let asked = try read(request, EncryptRequest.init(reading:))
        // The account the asking replica's key belongs to, when it knows it.
        if let account = asked.account, account != device.accountUID { throw ServerError.otherAccount }
        let answer = try store.encryptAccount(of: device, asked, authority: authority)
        if answer.changed {
            logger.notice(
                "account \(device.accountID): \(asked.replacing == nil ? "made end-to-end encrypted" : "account key rotated") by device '\(device.name)'"
            )
        }
        return HTTPResponse.json(200, answer.json.jsonText)
    }

    /// A key holder's signed confirmation that its account was rolled back
    /// (``SyncStore/confirmTimeline(of:_:authority:)``).
    private func confirmTimeline(_ request: HTTPRequest) throws -> HTTPResponse {
        let device = try authenticate(request)
        let authority = try writeAuthority(request)
        let asked = try read(request, TimelineRequest.init(reading:))
        let answer = try store.confirmTimeline(of: device, asked, authority: authority)
        if answer.changed {
            logger.notice(
                "account \(device.accountID): device '\(device.name)' confirmed a rollback, signed with the account key: a new timeline starts"
            )
        }
        return HTTPResponse.json(200, answer.json.jsonText)
    }

    /// A pull's signature, when it came signed (a key holder's brsync signs
    /// its pulls): only then does the protocol it says raise its device's
    /// (``SyncStore/countedProtocol(_:of:proof:verify:)``).
    private func pullProof(_ request: HTTPRequest) throws -> WriteAuthority? {
        request.headers[WriteSignature.header] == nil ? nil : try writeAuthority(request)
    }

    /// ``pullProof(_:)`` for an event loop: nil when a thread must answer
    /// (a signature header that does not read is refused there), `.some(nil)`
    /// for an unsigned pull.
    private func quickProof(_ request: HTTPRequest) -> WriteAuthority?? {
        guard request.headers[WriteSignature.header] != nil else { return .some(nil) }
        guard let proof = try? pullProof(request) else { return nil }
        return .some(proof)
    }

    /// What a write request brings to prove it comes from a key holder.
    private func writeAuthority(_ request: HTTPRequest) throws -> WriteAuthority {
        try WriteAuthority(
            clientProtocol: try Self.clientProtocol(request), signatureHeader: request.headers[WriteSignature.header],
            token: try bearerToken(request), method: request.method, path: String(request.path), body: request.body)
    }

    static let maxJoinBodyBytes = 1024

    static var joinSecretOnlyReads: ServerError {
        .unauthorized(
            "a join code's secret only reads until 'brsync join' exchanges it for the device's own token (POST /v1/join)"
        )
    }

    /// Exchanges a join code's secret (the bearer token) for the joining
    /// machine's own token (see ``SyncStore/join(secret:token:)``).
    private func join(_ request: HTTPRequest) throws -> HTTPResponse {
        let secret = try bearerToken(request)
        let asked = try read(request, JoinRequest.init(reading:))
        let device = try store.join(secret: secret, token: asked.token)
        logger.notice("account \(device.accountID): device '\(device.name)' joined with its join code")
        return HTTPResponse.json(200, JoinResponse(account: device.accountUID, device: device.name).json.jsonText)
    }

    /// A request's body read as a message: a 400 that says what is wrong otherwise.
    private func read<Message>(
        _ request: HTTPRequest, _ read: (UnsafeBufferPointer<UInt8>) throws(Wire.ReadError) -> Message
    ) throws(ServerError) -> Message {
        let result = request.body.withUnsafeBufferPointer { bytes in
            Result { () throws(Wire.ReadError) in try read(bytes) }
        }
        switch result {
        case .success(let message): return message
        case .failure(.notJSON(let error)): throw ServerError.badRequest("the body is not JSON: \(error)")
        case .failure(.invalid(let problem)): throw ServerError.badRequest(problem.message)
        }
    }

    private func relay(_ request: HTTPRequest) throws -> HTTPResponse {
        let device = try authenticateSpeaking(request)
        let request = try decoded(request)
        let relay = try read(request) { bytes throws(Wire.ReadError) in
            try RelayRequest(reading: bytes, secondThread: SyncEngine.secondThread)
        }
        try Self.checkSealedWith(request, body: relay.keyID)
        let result = try store.relay(
            relay, from: device, authority: try writeAuthority(request),
            maxClockOffsetMilliseconds: configuration.maxRelayClockOffsetMilliseconds)
        metrics.pushed(applied: result.applied)
        return HTTPResponse.json(200, result.response.json.jsonText)
    }

    private func push(_ request: HTTPRequest) throws -> HTTPResponse {
        let device = try authenticateSpeaking(request)
        let request = try decoded(request)
        let push = try read(request) { bytes throws(Wire.ReadError) in
            try PushRequest(reading: bytes, secondThread: SyncEngine.secondThread)
        }
        try Self.checkSealedWith(request, body: push.keyID)
        let started = Deadline.now()
        let response = try store.push(
            push, from: device, authority: try writeAuthority(request),
            maxClockOffsetMilliseconds: configuration.maxClockOffsetMilliseconds)
        let applyMilliseconds = Deadline.now().milliseconds - started.milliseconds
        metrics.pushed(applied: response.applied)
        var answer = HTTPResponse.json(200, response.json.jsonText)
        // How long the merge and commit took (RFC: W3C Server Timing).
        answer.headers.add("Server-Timing", "apply;dur=\(applyMilliseconds)")
        return answer
    }

    private func pull(_ request: HTTPRequest) throws -> HTTPResponse {
        let token = try bearerToken(request)
        let clientProtocol: Int
        let proof: WriteAuthority?
        do {
            clientProtocol = try Self.clientProtocol(request)
            proof = try pullProof(request)
        } catch {
            _ = try store.authenticate(token: token)
            throw error
        }
        let query: PullQuery
        do throws(PullQuery.Problem) {
            let items: [String: String]
            do { items = try request.queryItems() } catch { throw PullQuery.Problem(message: error.message) }
            query = try PullQuery(items, configuration: configuration)
        } catch {
            // Strangers learn nothing, not even about parameters: the token is checked before a refusal.
            _ = try store.authenticate(token: token)
            throw ServerError.badRequest(error.message)
        }
        if !query.asked.isEmpty {
            let body = try store.pullAskedText(
                token: token, asked: query.asked, clientProtocol: clientProtocol, clientKeyID: query.keyID,
                clientSigningKey: query.signingKey, maxBytes: configuration.maxPageBytes)
            metrics.pulled()
            return try encoded(
                HTTPResponse(status: 200, headers: ["Content-Type": "application/json"], body: body), for: request,
                token: token)
        }
        let body = try store.pullText(
            token: token, since: query.since, limit: query.limit, clientDevice: query.replica, origin: query.origin,
            reconciling: query.full, clientProtocol: clientProtocol, clientKeyID: query.keyID,
            clientSigningKey: query.signingKey, chainOf: query.chainOf, maxBytes: configuration.maxPageBytes,
            proof: proof)
        metrics.pulled()
        return try encoded(
            HTTPResponse(status: 200, headers: ["Content-Type": "application/json"], body: body), for: request,
            token: token)
    }

    /// Answers from memory, on the event loop that read the request
    /// (``HTTPServer/Quick``): a pull with nothing new that the store
    /// remembers (``SyncStore/pullFromMemory(token:since:limit:clientDevice:origin:clientProtocol:clientKeyID:clientSigningKey:)``),
    /// a watch whose device it remembers (it then waits on the loop), and
    /// `/v1/health`. Nil for everything else, and for anything to refuse: a
    /// thread answers those, as ``handle(_:_:)``.
    public func quick(_ request: HTTPRequest, _ context: HTTPServer.RequestContext) -> HTTPResponse? {
        var response: HTTPResponse
        guard let route = Route(path: request.path), route.methods.contains(request.method) else { return nil }
        switch route {
        case .pull:
            guard let token = try? bearerToken(request), let clientProtocol = try? Self.clientProtocol(request),
                let items = try? request.queryItems(),
                let query = try? PullQuery(items, configuration: configuration), !query.full,
                query.asked.isEmpty, query.chainOf == nil, let proof = quickProof(request),
                let body = store.pullFromMemory(
                    token: token, since: query.since, limit: query.limit, clientDevice: query.replica,
                    origin: query.origin, clientProtocol: clientProtocol, clientKeyID: query.keyID,
                    clientSigningKey: query.signingKey, proof: proof)
            else { return nil }
            metrics.pulled()
            // As a thread's answer says (``encoded(_:for:token:)``): chosen by Accept-Encoding.
            response = HTTPResponse(
                status: 200, headers: ["Content-Type": "application/json", "Vary": "Accept-Encoding"], body: body)
        case .watch:
            guard let watching = quickWatch(request) else { return nil }
            response = watching
        case .health:
            response = (try? self.route(request)) ?? Self.answer(ServerError.storeUnusable("the health answer failed"))
        case .push, .relay, .encrypt, .timeline, .join:
            return nil
        }
        response.headers.add(Wire.timeHeader, String(store.currentMillis()))
        Self.advertiseCoding(&response)
        return response
    }
}

/// A pull's parameters, as its query gives them
/// (`since`, `limit`, `key`, `signer`, `device` with `pushed` and `digest`,
/// `epoch`, `full`, `keys`).
struct PullQuery {
    var since: Int64 = 0
    var limit: Int
    var keyID: String?
    var signingKey: String?
    var replica: PullRequest.Pusher?
    var epoch: String?
    /// The account the cursor belongs to (``PullRequest/account``).
    var account: String?
    var full: Bool
    /// Records asked for again (``PullRequest/asked``): answered by key, not from the cursor.
    var asked: [PullRequest.Asked]
    /// The device id whose stream the answer echoes (``PullRequest/chainOf``).
    var chainOf: String?
    /// Where the cursor comes from.
    var origin: CursorOrigin { CursorOrigin(epoch: epoch, account: account) }

    struct Problem: Error {
        let message: String
    }

    /// The query as ``PullRequest`` reads it, with this server's default page size.
    init(_ query: [String: String], configuration: ServerConfiguration) throws(Problem) {
        let request: PullRequest
        do { request = try PullRequest(query: query, maxLimit: configuration.maxPullLimit) } catch {
            throw Problem(message: error.message)
        }
        since = request.since
        limit = request.limit ?? configuration.defaultPullLimit
        keyID = request.keyID
        signingKey = request.signer
        replica = request.pusher
        epoch = request.epoch
        account = request.account
        full = request.full
        asked = request.asked
        chainOf = request.chainOf
    }
}
