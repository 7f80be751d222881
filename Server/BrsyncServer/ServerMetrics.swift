import HTTP
import Synchronization

/// Counters and a latency histogram, rendered as Prometheus text at `/metrics`.
public final class ServerMetrics: Sendable {
    static let buckets: [Double] = [1, 2.5, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 10_000]

    private struct State {
        var requests: [String: Int] = [:] // "route|status"
        var bucketCounts = [Int](repeating: 0, count: ServerMetrics.buckets.count)
        var latencyCount = 0
        var latencySum = 0.0
        var pushes = 0
        var pulls = 0
        var recordsApplied = 0
        var rejectedConnections = 0
    }

    private let state = Mutex(State())

    public init() {}

    /// The route label of a path: one of the API's routes, or `other`.
    static func route(_ path: Substring) -> String {
        switch path {
        case "/v1/push", "/v1/pull", "/v1/health", "/metrics": return String(path)
        default: return "other"
        }
    }

    public func requestFinished(path: Substring, status: Int, milliseconds: Double) {
        let route = Self.route(path)
        state.withLock { state in
            state.requests["\(route)|\(status)", default: 0] += 1
            state.latencyCount += 1
            state.latencySum += milliseconds
            for (index, bound) in Self.buckets.enumerated() where milliseconds <= bound { state.bucketCounts[index] += 1 }
        }
    }

    public func pushed(applied: Int) {
        state.withLock { $0.pushes += 1; $0.recordsApplied += applied }
    }

    public func pulled() {
        state.withLock { $0.pulls += 1 }
    }

    public func connectionRejected() {
        state.withLock { $0.rejectedConnections += 1 }
    }

    /// Prometheus text exposition format 0.0.4.
    public func render(openConnections: Int, records: Int, devices: Int, accounts: Int) -> String {
        let snapshot = state.withLock { $0 }
        var text = "# HELP brsyncd_requests_total HTTP requests by route and status.\n# TYPE brsyncd_requests_total counter\n"
        for key in snapshot.requests.keys.sorted() {
            let parts = key.split(separator: "|")
            text += "brsyncd_requests_total{route=\"\(parts[0])\",status=\"\(parts[1])\"} \(snapshot.requests[key] ?? 0)\n"
        }
        text += "# HELP brsyncd_request_duration_milliseconds Time to handle a request.\n# TYPE brsyncd_request_duration_milliseconds histogram\n"
        for (index, bound) in Self.buckets.enumerated() {
            text += "brsyncd_request_duration_milliseconds_bucket{le=\"\(bound)\"} \(snapshot.bucketCounts[index])\n"
        }
        text += "brsyncd_request_duration_milliseconds_bucket{le=\"+Inf\"} \(snapshot.latencyCount)\n"
        text += "brsyncd_request_duration_milliseconds_sum \(snapshot.latencySum)\n"
        text += "brsyncd_request_duration_milliseconds_count \(snapshot.latencyCount)\n"
        text += "# HELP brsyncd_open_connections Connections being served.\n# TYPE brsyncd_open_connections gauge\nbrsyncd_open_connections \(openConnections)\n"
        text += "# HELP brsyncd_rejected_connections_total Connections refused (cap, handshake, bad request).\n# TYPE brsyncd_rejected_connections_total counter\nbrsyncd_rejected_connections_total \(snapshot.rejectedConnections)\n"
        text += "# HELP brsyncd_records Records stored.\n# TYPE brsyncd_records gauge\nbrsyncd_records \(records)\n"
        text += "# HELP brsyncd_devices Devices registered.\n# TYPE brsyncd_devices gauge\nbrsyncd_devices \(devices)\n"
        text += "# HELP brsyncd_accounts Accounts.\n# TYPE brsyncd_accounts gauge\nbrsyncd_accounts \(accounts)\n"
        text += "# HELP brsyncd_pushes_total Pushes accepted.\n# TYPE brsyncd_pushes_total counter\nbrsyncd_pushes_total \(snapshot.pushes)\n"
        text += "# HELP brsyncd_pulls_total Pulls answered.\n# TYPE brsyncd_pulls_total counter\nbrsyncd_pulls_total \(snapshot.pulls)\n"
        text += "# HELP brsyncd_records_applied_total Pushed record versions merged into the store.\n# TYPE brsyncd_records_applied_total counter\nbrsyncd_records_applied_total \(snapshot.recordsApplied)\n"
        return text
    }
}
