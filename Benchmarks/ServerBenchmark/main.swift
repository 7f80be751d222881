import BrsyncServer
import Foundation
import HTTP
import JSON
import Model
import Net
import ServerStore
import SyncCore
import Synchronization
import SystemServices

// Server benchmark helper (prints numbers; not a test), driven by Benchmarks/server.sh:
//   brsyncd-bench setup DIR                 certificates, a store with one account and device
//   brsyncd-bench push DIR PORT N           one push of N records: records/s applied
//   brsyncd-bench idle DIR PORT N PID [A]   N idle keep-alive TLS connections (from A loopback
//                                           addresses, 127.0.0.2 on; default 1): the server's RSS
//   brsyncd-bench flood DIR PORT N A        N TCP connections that never send a byte, from A loopback
//                                           addresses: how long a new TLS client waits for an answer
//   brsyncd-bench read N                    the wire readers on a push and a page of N records, next to
//                                           parsing the same text into a JSON tree (the baseline)
//   brsyncd-bench setup-watchers DIR N      N more accounts of one device each (tokens in DIR/watch-tokens)
//                                           and a device 'desktop' of the account (DIR/token-desktop)
//   brsyncd-bench watchers DIR PORT N [A]   holds N watches (GET /v1/watch), one per account of
//                                           DIR/watch-tokens, each again when answered (from A loopback
//                                           addresses); runs until killed

let arguments = Array(CommandLine.arguments.dropFirst())
func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("brsyncd-bench: \(message)\n".utf8))
    exit(2)
}
guard let mode = arguments.first, arguments.count >= 2 else {
    fail(
        "usage: setup DIR | push DIR PORT N | idle DIR PORT N PID | flood DIR PORT N ADDRESSES | read N | setup-watchers DIR N | watchers DIR PORT N"
    )
}
let directory = arguments[1]

/// A client of the server on `port`; with `source`, from that loopback address.
func client(port: UInt16, source: String? = nil) throws -> HTTPClient {
    var configuration = HTTPClient.Configuration(
        address: SocketAddress(host: "127.0.0.1", port: port), serverName: "localhost",
        tls: try TLSContext.client(caFile: "\(directory)/ca.pem"))
    configuration.sourceAddress = source
    return HTTPClient(configuration)
}

/// The loopback address of connection `index` of many, spread over `addresses` (one: the system's choice).
func source(_ index: Int, of addresses: Int) -> String? {
    addresses > 1 ? "127.0.0.\(2 + index % addresses)" : nil
}

func token() throws -> String {
    try String(contentsOfFile: "\(directory)/token", encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
}

/// N rules as one device's changes, the fields a rule has.
func benchmarkChanges(_ count: Int) -> [ChangeRecord] {
    var clock = HybridLogicalClock(device: "bench-laptop")
    let now = Int64(Date().timeIntervalSince1970 * 1000)
    return (1...count).map { index -> ChangeRecord in
        let stamp = clock.tick(wallMillis: now)
        let fields: [String: JSONValue] = [
            "pattern": .string("site\(index).example"), "browser": .string(["firefox", "chrome"][index % 2]),
            "priority": .int(Int64(index)), "createdAt": .int(now), "origin": .string("bench-laptop"),
            "deleted": .bool(false),
        ]
        return ChangeRecord(
            sequence: Int64(index), collection: .rules, key: "site\(index).example",
            state: RecordState(
                fields: fields.mapValues { StampedValue($0, stamp: stamp) },
                versions: VersionVector(["bench-laptop": 1])))
    }
}

/// The median of `rounds` timings of `body`, in seconds.
func medianSeconds(_ rounds: Int, _ body: () throws -> Void) rethrows -> Double {
    var times: [Double] = []
    for _ in 0..<rounds {
        let start = Deadline.now().milliseconds
        try body()
        times.append(Double(Deadline.now().milliseconds - start) / 1000)
    }
    return times.sorted()[rounds / 2]
}

do {
    switch mode {
    case "read":
        guard let count = Int(arguments[1]), count > 0 else { fail("read N") }
        let changes = benchmarkChanges(count)
        let push = PushRequest(device: "bench-laptop", from: 1, to: Int64(count), changes: changes).body()
        let page = PullResponse(
            changes: changes, next: Int64(count), more: false, epoch: "e",
            clock: HLCTimestamp(wallMillis: 1, counter: 0, device: "server"), account: "a"
        ).body
        let stored = changes.map {
            (RecordState.encodeFields($0.state.fields), RecordState.encodeVersions($0.state.versions))
        }
        let rounds = 15
        let megabytes = Double(push.count) / 1_048_576
        let tree = try medianSeconds(rounds) { _ = try push.withUnsafeBufferPointer { try JSONValue.parse(utf8: $0) } }
        let pushRead = try medianSeconds(rounds) {
            _ = try push.withUnsafeBufferPointer { bytes throws(Wire.ReadError) in try PushRequest(reading: bytes) }
        }
        // As brsyncd reads a push: 1,000 changes at most, the second half on a spare thread.
        var batches: [[UInt8]] = []
        for first in stride(from: 0, to: count, by: 1000) {
            let last = min(count, first + 1000)
            let batch = PushRequest(
                device: "bench-laptop", from: Int64(first + 1), to: Int64(last), changes: Array(changes[first..<last]))
            batches.append(batch.body())
        }
        let secondThread = SecondThread(start: SpareThreads.start)
        func readBatches(_ secondThread: SecondThread?) throws {
            for batch in batches {
                _ = try batch.withUnsafeBufferPointer { bytes throws(Wire.ReadError) in
                    try PushRequest(reading: bytes, secondThread: secondThread)
                }
            }
        }
        let batchesRead = try medianSeconds(rounds) { try readBatches(nil) }
        let batchesInHalves = try medianSeconds(rounds) { try readBatches(secondThread) }
        let pageRead = try medianSeconds(rounds) {
            _ = try page.withUnsafeBufferPointer { bytes throws(Wire.ReadError) in try PullResponse(reading: bytes) }
        }
        let storedRead = try medianSeconds(rounds) {
            for (fields, versions) in stored { _ = try RecordState(fieldsJSON: fields, versionsJSON: versions) }
        }
        func line(_ what: String, _ seconds: Double) -> String {
            "\(what): \(String(format: "%.1f", seconds * 1000)) ms, \(Int(Double(count) / seconds)) records/s, \(String(format: "%.0f", megabytes / seconds)) MB/s"
        }
        print("read: \(count) records, push body \(push.count) bytes, median of \(rounds)")
        print(line("JSON tree parse of the push (baseline)", tree))
        print(line("PushRequest(reading:)", pushRead) + String(format: " (%.2fx the tree parse)", pushRead / tree))
        print(line("PushRequest(reading:), batches of 1,000", batchesRead))
        print(
            line("PushRequest(reading:), batches of 1,000 in two halves at once", batchesInHalves)
                + String(format: " (%.2fx in order)", batchesInHalves / batchesRead))
        print(line("PullResponse(reading:)", pageRead))
        print(line("RecordState(fieldsJSON:versionsJSON:), each record", storedRead))

    case "setup":
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let authority = try CertificateAuthority(name: "brsyncd benchmark CA")
        let issued = try authority.issue(hosts: ["localhost", "127.0.0.1"])
        try authority.certificatePEM.write(toFile: "\(directory)/ca.pem", atomically: true, encoding: .utf8)
        try issued.certificatePEM.write(toFile: "\(directory)/server.pem", atomically: true, encoding: .utf8)
        try issued.privateKeyPEM.write(toFile: "\(directory)/server.key", atomically: true, encoding: .utf8)
        let store = try SyncStore(sqlite: "\(directory)/store.sqlite")
        try store.addAccount("bench")
        try store.addDevice(account: "bench", name: "laptop").write(
            toFile: "\(directory)/token", atomically: true, encoding: .utf8)
        store.close()

    case "push":
        guard arguments.count == 4, let port = UInt16(arguments[2]), let count = Int(arguments[3]) else {
            fail("push DIR PORT N")
        }
        let http = try client(port: port)
        let changes = benchmarkChanges(count)
        let body = PushRequest(device: "bench-laptop", from: 1, to: Int64(count), changes: changes).body()
        let headers: HTTPHeaders = ["Authorization": "Bearer \(try token())", "Content-Type": "application/json"]
        _ = try http.send(method: "GET", target: "/v1/health") // connect and handshake outside the timing
        let start = Date()
        let response = try http.send(method: "POST", target: "/v1/push", headers: headers, body: body)
        let seconds = Date().timeIntervalSince(start)
        guard response.status == 200 else {
            fail("push answered \(response.status): \(String(decoding: response.body, as: UTF8.self))")
        }
        let pushed = try PushResponse(json: try JSONValue.parse(String(decoding: response.body, as: UTF8.self)))
        print(
            String(
                format: "push: %d records (%d KiB body), whole request %.3f s: %.0f records/s (target >= 50,000)",
                pushed.applied, body.count / 1024, seconds, Double(pushed.applied) / seconds))
        if let timing = response.headers["Server-Timing"],
            let milliseconds = Double(timing.split(separator: "=").last ?? "")
        {
            print(
                String(
                    format: "push: merge and commit on the server %.3f s: %.0f records/s", milliseconds / 1000,
                    Double(pushed.applied) / (milliseconds / 1000)))
        }
        let pull = try http.send(method: "GET", target: "/v1/pull?since=\(count)", headers: headers)
        try Data(pull.body).write(to: URL(fileURLWithPath: "\(directory)/nochange.json"))
        print("no-change pull: /v1/pull?since=\(count) answers \(pull.body.count) bytes")

    case "idle":
        guard (5...6).contains(arguments.count), let port = UInt16(arguments[2]), let count = Int(arguments[3]),
            let pid = Int32(arguments[4]),
            let addresses = arguments.count == 6 ? Int(arguments[5]) : 1, (1...250).contains(addresses)
        else {
            fail("idle DIR PORT N PID [ADDRESSES]")
        }
        func rss() -> Int {
            let status = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
            let line = status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") } ?? ""
            return Int(line.split(separator: " ").dropFirst().first ?? "0") ?? 0
        }
        let before = rss()
        var clients: [HTTPClient] = []
        let tls = try TLSContext.client(caFile: "\(directory)/ca.pem")
        for index in 0..<count {
            var configuration = HTTPClient.Configuration(
                address: SocketAddress(host: "127.0.0.1", port: port), serverName: "localhost", tls: tls)
            configuration.sourceAddress = source(index, of: addresses)
            let http = HTTPClient(configuration)
            guard try http.send(method: "GET", target: "/v1/health").status == 200 else { fail("health failed") }
            clients.append(http)
        }
        Thread.sleep(forTimeInterval: 0.5)
        let after = rss()
        print(
            String(
                format:
                    "idle: %d keep-alive TLS connections open from %d address(es); brsyncd RSS %.1f MB (%.1f MB before: %.1f KB each)",
                clients.count, addresses, Double(after) / 1024, Double(before) / 1024,
                Double(after - before) / Double(clients.count)))
        for http in clients { http.close() }
        // Once they have gone: the server gives the heap back after a burst (within a second).
        Thread.sleep(forTimeInterval: 1.5)
        print(String(format: "idle: 1.5 s after they closed, brsyncd RSS %.1f MB", Double(rss()) / 1024))

    case "flood":
        guard arguments.count == 5, let port = UInt16(arguments[2]), let count = Int(arguments[3]),
            let addresses = Int(arguments[4]),
            (1...250).contains(addresses)
        else {
            fail("flood DIR PORT N ADDRESSES (1 to 250)")
        }
        // Plain TCP connections that never start a handshake, each from
        // 127.0.0.(2 + i mod ADDRESSES): what the per-address cap cannot stop.
        var descriptors: [Int32] = []
        for index in 0..<count {
            let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            guard descriptor >= 0 else { fail("socket: \(SystemError.text()) after \(index) (raise ulimit -n)") }
            var source = sockaddr_in()
            source.sin_family = sa_family_t(AF_INET)
            source.sin_addr.s_addr = inet_addr("127.0.0.\(2 + index % addresses)")
            var target = sockaddr_in()
            target.sin_family = sa_family_t(AF_INET)
            target.sin_port = port.bigEndian
            target.sin_addr.s_addr = inet_addr("127.0.0.1")
            let bound = withUnsafePointer(to: &source) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
            let connected = withUnsafePointer(to: &target) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
            guard bound == 0, connected == 0 else { fail("connect \(index): \(SystemError.text())") }
            descriptors.append(descriptor)
        }
        Thread.sleep(forTimeInterval: 0.5)
        var waits: [Double] = []
        for _ in 0..<7 {
            let started = Date()
            let status = try client(port: port).send(method: "GET", target: "/v1/health").status
            waits.append(Date().timeIntervalSince(started) * 1000)
            guard status == 200 else { fail("a new client got \(status) during the flood") }
        }
        waits.sort()
        print(
            String(
                format:
                    "flood: %d silent TCP connections from %d addresses; a new TLS client is answered in %.1f ms (median of 7, worst %.1f ms; target < 1 s)",
                descriptors.count, addresses, waits[3], waits[6]))
        for descriptor in descriptors { close(descriptor) }

    case "setup-watchers":
        guard arguments.count == 3, let count = Int(arguments[2]), count > 0 else { fail("setup-watchers DIR N") }
        let store = try SyncStore(sqlite: "\(directory)/store.sqlite")
        try store.addDevice(account: "bench", name: "desktop").write(
            toFile: "\(directory)/token-desktop", atomically: true, encoding: .utf8)
        var tokens: [String] = []
        for index in 0..<count {
            try store.addAccount("watcher\(index)")
            tokens.append(try store.addDevice(account: "watcher\(index)", name: "machine"))
        }
        try tokens.joined(separator: "\n").write(toFile: "\(directory)/watch-tokens", atomically: true, encoding: .utf8)
        store.close()

    case "watchers":
        guard (4...5).contains(arguments.count), let port = UInt16(arguments[2]), let count = Int(arguments[3]),
            let addresses = arguments.count == 5 ? Int(arguments[4]) : 1, (1...250).contains(addresses)
        else { fail("watchers DIR PORT N [ADDRESSES]") }
        let tokens = try String(contentsOfFile: "\(directory)/watch-tokens", encoding: .utf8).split(separator: "\n")
            .map(String.init)
        guard tokens.count >= count else { fail("DIR/watch-tokens holds \(tokens.count) tokens, fewer than \(count)") }
        let caFile = "\(directory)/ca.pem"
        let started = Atomic<Int>(0)
        let tls = try TLSContext.client(caFile: caFile)
        for (index, token) in tokens.prefix(count).enumerated() {
            let from = source(index, of: addresses)
            try startThread(stackSize: 128 * 1024) { [token] in
                var configuration = HTTPClient.Configuration(
                    address: SocketAddress(host: "127.0.0.1", port: port), serverName: "localhost", tls: tls)
                configuration.readTimeoutMilliseconds = 70_000
                configuration.sourceAddress = from
                let http = HTTPClient(configuration)
                var first = true
                while true {
                    if first { started.add(1, ordering: .relaxed); first = false }
                    // As `brsync watch` does: refused or cut off, back in 1 to 5 s, spread.
                    let answer = try? http.send(
                        method: "GET", target: "/v1/watch?since=0", headers: ["Authorization": "Bearer \(token)"])
                    if answer == nil || answer?.status != 200 {
                        usleep(useconds_t(Int.random(in: 1_000_000...5_000_000)))
                    }
                }
            }
        }
        while started.load(ordering: .relaxed) < count { usleep(10_000) }
        Thread.sleep(forTimeInterval: 1)
        FileHandle.standardOutput.write(Data("watchers: holding \(count) watches\n".utf8))
        while true { Thread.sleep(forTimeInterval: 3600) }

    default:
        fail("unknown mode \(mode)")
    }
} catch {
    fail("\(error)")
}
