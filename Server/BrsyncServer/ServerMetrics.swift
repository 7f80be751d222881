import HTTP
import Synchronization

/// Counters and a latency histogram, rendered as Prometheus text at `/metrics`.
/// Every counter is an atomic: request threads never wait on each other here.
public final class ServerMetrics: Sendable {
    /// The labels of `brsyncd_requests_total`: the API's counted routes, `/metrics`, and `other`.
    static let routes = Route.allCases.filter(\.counted).map(\.path) + ["/metrics", "other"]
    static let statuses = [200, 400, 401, 403, 404, 405, 408, 409, 413, 414, 422, 429, 431, 500, 503, 505]
    static let buckets: [Double] = [1, 2.5, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 10_000]

    /// requests[route][status], the last status slot counting any other status.
    private let requests: [[Counter]]
    private let otherStatuses: [Counter]
    private let bucketCounts: [Counter]
    private let latencyCount = Atomic<Int>(0)
    private let latencySumMicroseconds = Atomic<Int>(0)
    private let pushes = Atomic<Int>(0)
    private let pulls = Atomic<Int>(0)
    private let recordsApplied = Atomic<Int>(0)
    private let rejectedConnections = Atomic<Int>(0)

    public init() {
        requests = Self.routes.map { _ in Self.statuses.map { _ in Counter() } }
        otherStatuses = Self.routes.map { _ in Counter() }
        bucketCounts = Self.buckets.map { _ in Counter() }
    }

    /// The index of a path's route label (one of the API's routes, or `other`).
    static func routeIndex(_ path: Substring) -> Int {
        routes.firstIndex { $0 == path } ?? routes.count - 1
    }

    public func requestFinished(path: Substring, status: Int, milliseconds: Double) {
        let route = Self.routeIndex(path)
        if let index = Self.statuses.firstIndex(of: status) {
            requests[route][index].value.add(1, ordering: .relaxed)
        } else {
            otherStatuses[route].value.add(1, ordering: .relaxed)
        }
        latencyCount.add(1, ordering: .relaxed)
        latencySumMicroseconds.add(Int(milliseconds * 1000), ordering: .relaxed)
        for (index, bound) in Self.buckets.enumerated() where milliseconds <= bound {
            bucketCounts[index].value.add(1, ordering: .relaxed)
        }
    }

    public func pushed(applied: Int) {
        pushes.add(1, ordering: .relaxed)
        recordsApplied.add(applied, ordering: .relaxed)
    }

    public func pulled() { pulls.add(1, ordering: .relaxed) }

    public func connectionRejected() { rejectedConnections.add(1, ordering: .relaxed) }

    /// Prometheus text exposition format 0.0.4.
    public func render(openConnections: Int, records: Int, devices: Int, accounts: Int, watches: Int = 0) -> String {
        var text =
            "# HELP brsyncd_requests_total HTTP requests by route and status.\n# TYPE brsyncd_requests_total counter\n"
        for (routeIndex, route) in Self.routes.enumerated() {
            for (statusIndex, status) in Self.statuses.enumerated() {
                let count = requests[routeIndex][statusIndex].value.load(ordering: .relaxed)
                if count > 0 { text += "brsyncd_requests_total{route=\"\(route)\",status=\"\(status)\"} \(count)\n" }
            }
            let other = otherStatuses[routeIndex].value.load(ordering: .relaxed)
            if other > 0 { text += "brsyncd_requests_total{route=\"\(route)\",status=\"other\"} \(other)\n" }
        }
        text +=
            "# HELP brsyncd_request_duration_milliseconds Time to handle a request.\n# TYPE brsyncd_request_duration_milliseconds histogram\n"
        for (index, bound) in Self.buckets.enumerated() {
            text +=
                "brsyncd_request_duration_milliseconds_bucket{le=\"\(bound)\"} \(bucketCounts[index].value.load(ordering: .relaxed))\n"
        }
        let count = latencyCount.load(ordering: .relaxed)
        text += "brsyncd_request_duration_milliseconds_bucket{le=\"+Inf\"} \(count)\n"
        text +=
            "brsyncd_request_duration_milliseconds_sum \(Double(latencySumMicroseconds.load(ordering: .relaxed)) / 1000)\n"
        text += "brsyncd_request_duration_milliseconds_count \(count)\n"
        func gauge(_ name: String, _ help: String, _ type: String, _ value: Int) {
            text += "# HELP \(name) \(help)\n# TYPE \(name) \(type)\n\(name) \(value)\n"
        }
        gauge("brsyncd_open_connections", "Connections being served.", "gauge", openConnections)
        gauge("brsyncd_watches", "Watches (GET /v1/watch) waiting for their account to change.", "gauge", watches)
        gauge(
            "brsyncd_rejected_connections_total", "Connections refused (cap, handshake, bad request).", "counter",
            rejectedConnections.load(ordering: .relaxed))
        gauge("brsyncd_records", "Records stored.", "gauge", records)
        gauge("brsyncd_devices", "Devices registered.", "gauge", devices)
        gauge("brsyncd_accounts", "Accounts.", "gauge", accounts)
        gauge("brsyncd_pushes_total", "Pushes accepted.", "counter", pushes.load(ordering: .relaxed))
        gauge("brsyncd_pulls_total", "Pulls answered.", "counter", pulls.load(ordering: .relaxed))
        gauge(
            "brsyncd_records_applied_total", "Pushed record versions merged into the store.", "counter",
            recordsApplied.load(ordering: .relaxed))
        return text
    }
}

/// An atomic counter that can live in an array (`Atomic` itself cannot be copied).
final class Counter: Sendable {
    let value = Atomic<Int>(0)
}
