import ServerStore

/// Every endpoint of the sync API, once: its path, the methods it takes,
/// whether a request body comes with it, and whether `/metrics` counts it
/// under its own label. ``SyncAPI`` admits, routes and answers from memory
/// by it; ``ServerMetrics`` labels requests by it.
enum Route: CaseIterable, Sendable {
    // The first four are counted under their own label, in this order.
    case push, pull, watch, health
    case relay, encrypt, timeline, join

    var path: String {
        switch self {
        case .push: return "/v1/push"
        case .pull: return "/v1/pull"
        case .watch: return "/v1/watch"
        case .health: return "/v1/health"
        case .relay: return "/v1/relay"
        case .encrypt: return "/v1/account/encrypt"
        case .timeline: return "/v1/account/timeline"
        case .join: return "/v1/join"
        }
    }

    /// The route at `path`, or nil (an unknown endpoint).
    init?(path: some StringProtocol) {
        guard let route = Self.allCases.first(where: { $0.path == path }) else { return nil }
        self = route
    }

    /// The methods it takes; the first is the one a refusal names.
    var methods: [String] {
        switch self {
        case .pull, .watch: return ["GET"]
        case .health: return ["GET", "HEAD"]
        case .push, .relay, .encrypt, .timeline, .join: return ["POST"]
        }
    }

    /// Whether a request brings a body (its head is admitted before the body is read).
    var takesBody: Bool { methods == ["POST"] }

    /// Whether `/metrics` counts it under its own label (the rest: `other`).
    var counted: Bool { [.push, .pull, .watch, .health].contains(self) }

    /// Refuses a method this route does not take.
    func check(method: String) throws(ServerError) {
        guard methods.contains(method) else {
            throw ServerError.methodNotAllowed("use \(methods[0]) for \(path)", allow: methods)
        }
    }
}
