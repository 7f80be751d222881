import HTTP
import JSON
import Net
import SyncCore
import Synchronization
import SystemServices

/// The server's side of the wire as a script: the conversation a sync is
/// expected to have, each step the request it waits for (method and path)
/// and the answer it gives. No socket, no store: the driver's decisions are
/// read off the requests it makes. A request the script does not expect is
/// answered `internal` (500, which the client does not retry) and kept, so
/// a failing test shows where the driver went another way.
final class ScriptedServer: HTTPSending, @unchecked Sendable {
    /// One request as the driver sent it.
    struct Request: Sendable {
        let method: String
        let target: String
        let body: [UInt8]
        var path: String { String(target.prefix { $0 != "?" }) }
        /// The push inside, when the body is one.
        var push: PushRequest? {
            body.withUnsafeBufferPointer { try? PushRequest(reading: $0) }
        }
        /// The relay inside, when the body is one.
        var relay: RelayRequest? {
            path == "/v1/relay" ? body.withUnsafeBufferPointer { try? RelayRequest(reading: $0) } : nil
        }
        /// A value of the target's query.
        func query(_ name: String) -> String? {
            let query = target.drop { $0 != "?" }.dropFirst()
            return query.split(separator: "&").first { $0.hasPrefix("\(name)=") }.map {
                String($0.dropFirst(name.count + 1))
            }
        }
        /// `METHOD /path`, with the change numbers of a push (`POST /v1/push
        /// 1-3`), the records of a relay (`POST /v1/relay 2`) or the cursor
        /// of a pull (`GET /v1/pull since=10`).
        var line: String {
            if let push { return "\(method) \(path) \(push.from)-\(push.to)" }
            if let relay { return "\(method) \(path) \(relay.records.count)" }
            if path == "/v1/pull", let since = query("since") { return "\(method) \(path) since=\(since)" }
            return "\(method) \(path)"
        }
    }

    /// An answer: its status and JSON body.
    struct Reply: Sendable {
        var status: Int
        var body: [UInt8]
        var headers: HTTPHeaders = [:]

        static func json(_ value: JSONValue, status: Int = 200) -> Reply {
            var body: [UInt8] = []
            value.write(into: &body)
            return Reply(status: status, body: body)
        }

        static func refusal(_ error: WireError, status: Int = 409) -> Reply { json(error.json, status: status) }
    }

    /// A step: the request expected, and how it is answered.
    struct Step: Sendable {
        let method: String
        let path: String
        let answer: @Sendable (Request, ScriptedServer) -> Reply
    }

    let account = "acct-scripted"
    private let currentEpoch = Mutex("e-scripted")
    /// The account's timeline: a restored or reset server starts another.
    var epoch: String {
        get { currentEpoch.withLock { $0 } }
        set { currentEpoch.withLock { $0 = newValue } }
    }
    private let state = Mutex<(steps: [Step], heard: [Request], unexpected: [String])>(([], [], []))
    /// The chain through each change the script's honest pushes took, by device.
    private let chains = Mutex<[String: [Int64: String]]>([:])

    /// The chain through `sequence` of `device` as taken, "" when not taken.
    func chain(_ device: String, through sequence: Int64) -> String {
        chains.withLock { $0[device]?[sequence] ?? "" }
    }

    /// Takes a push as an honest server does: every change, the chain through each kept.
    func take(_ push: PushRequest) -> PushResponse {
        let base = push.base ?? chain(push.device, through: push.from - 1)
        let chain = ChangeRecord.chain(push.changes, after: base)
        chains.withLock { chains in
            for (change, digest) in zip(push.changes, chain) {
                chains[push.device, default: [:]][change.sequence] = digest
            }
        }
        return PushResponse(
            acknowledged: push.to, applied: push.changes.count, clock: clock, epoch: epoch, lost: [],
            acknowledgedDigest: chain.last ?? base, account: account)
    }

    init(_ steps: [Step] = []) {
        state.withLock { $0.steps = steps }
    }

    /// Adds steps after those left.
    func then(_ steps: [Step]) {
        state.withLock { $0.steps += steps }
    }

    /// Every request, as `Request/line`.
    var lines: [String] { state.withLock { $0.heard.map(\.line) } }
    var heard: [Request] { state.withLock { $0.heard } }
    /// Requests that came when the script expected another, or none.
    var unexpected: [String] { state.withLock { $0.unexpected } }
    /// Steps the driver never reached.
    var stepsLeft: Int { state.withLock { $0.steps.count } }

    func send(
        method: String, target: String, headers: HTTPHeaders, body: [UInt8], expectContinue: Bool,
        whileWaiting: (() -> Void)?, wakeup: Int32?, readTimeoutMilliseconds: Int?
    ) throws(NetError) -> HTTPResponseParser.ParsedResponse {
        let request = Request(method: method, target: target, body: body)
        whileWaiting?()
        let step: Step? = state.withLock { state in
            state.heard.append(request)
            guard let next = state.steps.first, next.method == method, next.path == request.path else {
                let wanted = state.steps.first.map { "\($0.method) \($0.path)" } ?? "nothing"
                state.unexpected.append("\(request.line) (the script expected \(wanted))")
                return nil
            }
            state.steps.removeFirst()
            return next
        }
        let reply =
            step?.answer(request, self)
            ?? .refusal(WireError(code: .internal, message: "not in the script"), status: 500)
        var headers = reply.headers
        headers.add(Wire.timeHeader, String(Self.serverMillis))
        headers.add("Content-Type", "application/json")
        return HTTPResponseParser.ParsedResponse(status: reply.status, headers: headers, body: reply.body)
    }

    /// The server's wall clock: this machine's (the tests do not skew it).
    static var serverMillis: Int64 { Int64(Clock.wallMillis()) }

    /// A stamp of the server's clock.
    var clock: HLCTimestamp { HLCTimestamp(wallMillis: Self.serverMillis, counter: 0, device: "server") }
}

/// The steps tests compose their scripts of.
extension ScriptedServer.Step {
    /// A push answered as an honest server answers it: every change taken,
    /// the chain through the last one as the server computed it.
    static let push = push { push, server in .json(server.take(push).json) }

    /// A push refused with `code`; `acknowledged` says how far the server
    /// holds this device, with the chain its honest pushes took there, or `digest`.
    static func refuse(
        _ code: WireError.Code, status: Int = 409, acknowledged: Int64? = nil, digest: String? = nil
    ) -> Self {
        push { push, server in
            let held = acknowledged.map { digest ?? server.chain(push.device, through: $0) }
            return .refusal(
                WireError(code: code, message: "scripted", acknowledged: acknowledged, digest: held), status: status)
        }
    }

    /// A push answered with `answer`, given the push.
    static func push(_ answer: @escaping @Sendable (PushRequest, ScriptedServer) -> ScriptedServer.Reply) -> Self {
        Self(method: "POST", path: "/v1/push") { request, server in
            guard let push = request.push else {
                return .refusal(WireError(code: .badRequest, message: "not a push"), status: 400)
            }
            return answer(push, server)
        }
    }

    /// A relay answered as an honest server answers it: every record taken.
    static let relay = Self(method: "POST", path: "/v1/relay") { request, server in
        guard let relay = request.relay else {
            return .refusal(WireError(code: .badRequest, message: "not a relay"), status: 400)
        }
        let response = PushResponse(
            acknowledged: 0, applied: relay.records.count, clock: server.clock, epoch: server.epoch, lost: [],
            account: server.account)
        return .json(response.json)
    }

    /// A pull page of `changes`, the last one when `more` is false; on a
    /// new timeline of the account when `epoch` says one (a restored or reset server).
    static func pull(_ changes: [ChangeRecord] = [], next: Int64 = 0, more: Bool = false, epoch: String? = nil) -> Self
    {
        Self(method: "GET", path: "/v1/pull") { _, server in
            if let epoch { server.epoch = epoch }
            let page = PullResponse(
                changes: changes, next: next, more: more, epoch: server.epoch, clock: server.clock,
                account: server.account)
            return ScriptedServer.Reply(status: 200, body: page.body)
        }
    }

    /// Any request to `path`, answered with `reply`.
    static func answer(_ method: String, _ path: String, _ reply: ScriptedServer.Reply) -> Self {
        Self(method: method, path: path) { _, _ in reply }
    }
}
