import Desktop
import Foundation
import Model
import Replica
import SystemServices

// Selector benchmark (prints numbers; not a test). Run through Benchmarks/selector.sh,
// which builds in release with --static-swift-stdlib and passes the binaries.
//
//   brsync-bench [--brsync PATH] [--sqlite3 PATH] [--runs N] [--keep]
//
// 1. In-process: normalise a URL and decide it against 100, 10,000 and 100,000 rules.
// 2. Whole process: `brsync resolve --json URL` against a 10,000-rule replica, next to
//    `sqlite3 REPLICA "select count(*) ..."` timed the same way in the same run.

var arguments = CommandLine.arguments.dropFirst()
// `brsync-bench modifier-probe URL`: started as a link handler (for
// Benchmarks/modifier.sh). Reads the modifier keys held at once, as `brsync
// open` does first thing with hold-to-ask set, and appends "started-µs read-µs
// SHIFT URL" (wall clock; SHIFT 1 when Shift was held, else 0) to
// $MODIFIER_PROBE_LOG.
if arguments.first == "modifier-probe" {
    func microseconds() -> Int64 {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return Int64(now.tv_sec) * 1_000_000 + Int64(now.tv_nsec) / 1_000
    }
    let started = microseconds()
    let environment = ProcessInfo.processInfo.environment
    let line: String
    do {
        let held = try HeldKeys.held(environment: environment)
        line = "\(started) \(microseconds()) \(held.contains(.shift) ? 1 : 0) \(arguments.dropFirst().first ?? "-")\n"
    } catch {
        line = "\(started) \(microseconds()) error \(error)\n"
    }
    guard let log = environment["MODIFIER_PROBE_LOG"], let handle = FileHandle(forWritingAtPath: log) else { exit(2) }
    handle.seekToEndOfFile()
    handle.write(Data(line.utf8))
    exit(0)
}
// `brsync-bench make-replica HOME N`: a replica with N rules (for Benchmarks/sync.sh).
if arguments.first == "make-replica" {
    let values = Array(arguments.dropFirst())
    guard values.count == 2, let count = Int(values[1]) else {
        FileHandle.standardError.write(Data("usage: brsync-bench make-replica HOME N\n".utf8))
        exit(2)
    }
    do {
        let replica = try Replica.initialize(home: values[0], deviceName: "bench-laptop").replica
        try replica.transaction {
            for id in ["firefox", "chrome"] {
                try replica.addBrowser(id: id, name: nil, format: nil, scheme: nil, exec: "\(id) %u")
            }
            // A person's rules are made in no alphabetical order: each
            // pattern starts with a pseudo-random name (a fixed seed, so every
            // run makes the same replica). Patterns made in key order
            // ("site0.example", "site1.example", ...) hid how a replica and a
            // store write records whose keys come in no order.
            var state: UInt64 = 0x9E37_79B9_7F4A_7C15
            let letters = Array("abcdefghijklmnopqrstuvwxyz".utf8)
            for index in 0..<count {
                var name: [UInt8] = []
                for _ in 0..<8 {
                    state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
                    name.append(letters[Int(state >> 33) % letters.count])
                }
                let pattern = "\(String(decoding: name, as: UTF8.self))\(index).example"
                try replica.addRule(
                    pattern: pattern, browser: index % 2 == 0 ? "firefox" : "chrome", priority: index % 7)
            }
        }
    } catch {
        FileHandle.standardError.write(Data("\(error)\n".utf8))
        exit(1)
    }
    exit(0)
}
var brsyncPath: String?
var sqlitePath = "/usr/bin/sqlite3"
var runs = 300
var keep = false
while let argument = arguments.popFirst() {
    switch argument {
    case "--brsync": brsyncPath = arguments.popFirst()
    case "--sqlite3": sqlitePath = arguments.popFirst() ?? sqlitePath
    case "--runs": runs = arguments.popFirst().flatMap(Int.init) ?? runs
    case "--keep": keep = true
    default:
        FileHandle.standardError.write(Data("unknown argument \(argument)\n".utf8))
        exit(2)
    }
}

let words = ["mail", "docs", "app", "api", "cdn", "shop", "news", "blog", "dev", "cloud", "meet", "zoom", "git", "lab"]
let tlds = ["com", "org", "net", "io", "co.uk", "de", "dev"]

/// A realistic mix: mostly plain domains, some wildcard subdomains, some paths, a few wildcards in the middle.
func makePatterns(_ count: Int) -> [String] {
    (0..<count).map { index in
        let domain = "\(words[index % words.count])\(index).\(tlds[index % tlds.count])"
        switch index % 10 {
        case 0...5: return domain
        case 6, 7: return "*.\(domain)"
        case 8: return "\(domain)/\(words[(index / 3) % words.count])/*"
        default: return "\(words[index % words.count])*.\(domain)"
        }
    }
}

func makeURLs(_ ruleCount: Int, _ count: Int) -> [String] {
    var random = SystemRandomNumberGenerator()
    return (0..<count).map { index in
        let target = Int.random(in: 0..<(ruleCount * 2), using: &random) // half hit a rule, half miss
        let domain = "\(words[target % words.count])\(target).\(tlds[target % tlds.count])"
        let host = index % 3 == 0 ? "www.\(domain)" : index % 3 == 1 ? "a.\(domain)" : domain
        return "https://\(host)/\(words[(target / 3) % words.count])/page\(index)?q=\(index)"
    }
}

func nanoseconds(_ body: () -> Void) -> Double {
    let start = DispatchTime.now().uptimeNanoseconds
    body()
    return Double(DispatchTime.now().uptimeNanoseconds - start)
}

func median(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    return sorted.isEmpty ? 0 : sorted[sorted.count / 2]
}

print("== In-process resolution (normalise the URL, then decide) ==")
for ruleCount in [100, 10_000, 100_000] {
    let rules = makePatterns(ruleCount).enumerated().map { index, pattern in
        UrlRule(pattern: pattern, browser: "b\(index % 5)", priority: index % 7, createdAtMillis: Int64(index))
    }
    var index = RuleIndex(rules: [])
    let build = nanoseconds { index = RuleIndex(rules: rules) }
    let urls = makeURLs(ruleCount, 20_000)
    var decided = 0
    // Warm up, then take the best of five rounds (the machine is shared and noisy).
    var rounds: [Double] = []
    for _ in 0..<6 {
        decided = 0
        let time = nanoseconds {
            for text in urls {
                guard let url = try? NormalizedURL(text) else { continue }
                if index.decide(url) != nil { decided += 1 }
            }
        }
        rounds.append(time / Double(urls.count))
    }
    let best = rounds.dropFirst().min() ?? 0
    let parsed = urls.compactMap { try? NormalizedURL($0) }
    let normaliseOnly =
        (0..<5).map { _ in nanoseconds { for text in urls { _ = try? NormalizedURL(text) } } / Double(urls.count) }
        .min() ?? 0
    let decideOnly =
        (0..<5).map { _ in nanoseconds { for url in parsed { _ = index.decide(url) } } / Double(urls.count) }.min() ?? 0
    print(String(format: "  (normalise %.2f µs, decide %.2f µs)", normaliseOnly / 1000, decideOnly / 1000))
    print(
        String(
            format: "rules %7d: %6.2f µs per URL (best of 5 rounds of %d URLs, %d decided); index built in %.1f ms",
            ruleCount, best / 1000, urls.count, decided, build / 1_000_000))
}

guard let brsyncPath else {
    print("(whole-process benchmark skipped: pass --brsync PATH)")
    exit(0)
}

print("\n== Whole process: brsync resolve --json URL, 10,000 rules ==")
let home = FileManager.default.temporaryDirectory.path + "/brsync-bench-\(getpid())"
defer {
    if keep { print("replica kept in \(home)") } else { try? FileManager.default.removeItem(atPath: home) }
}
do {
    let replica = try Replica.initialize(home: home, deviceName: "bench").replica
    try replica.transaction {
        for id in ["b0", "b1", "b2", "b3", "b4"] {
            // /bin/true stands in for a browser: `brsync open` measures up to the spawn.
            try replica.addBrowser(id: id, name: nil, format: nil, scheme: nil, exec: "/bin/true %u")
        }
        for (index, pattern) in makePatterns(10_000).enumerated() {
            try replica.addRule(pattern: pattern, browser: "b\(index % 5)", priority: index % 7)
        }
    }
    try replica.database.execute("PRAGMA wal_checkpoint(TRUNCATE)")
} catch {
    print("could not build the replica: \(error)")
    exit(1)
}
let replicaFile = "\(home)/\(Replica.fileName)"

/// Runs a program to its end with output discarded, in exactly `environment`
/// (nothing inherited); returns wall time in ns and its exit status.
func spawn(_ path: String, _ args: [String], environment: [String: String]) -> (Double, Int32) {
    let start = DispatchTime.now().uptimeNanoseconds
    guard
        let child = try? ChildProcess(
            [path] + args, environment: ChildProcess.Environment(set: environment, unset: ["*"]))
    else { return (0, -1) }
    let ended = child.wait()
    return (Double(DispatchTime.now().uptimeNanoseconds - start), ended.code)
}

let environment = ["BRSYNC_HOME": home, "PATH": "/usr/bin:/bin"]
let hit = "https://www.mail0.com/docs/page?q=1"
let (_, hitStatus) = spawn(brsyncPath, ["resolve", "--json", hit], environment: environment)
guard hitStatus == 0 else {
    print("brsync resolve failed with status \(hitStatus)")
    exit(1)
}
var brsyncTimes: [Double] = []
var sqliteTimes: [Double] = []
let count = "select count(*) from records where collection = 'rules'"
for _ in 0..<20 { // warm the page cache for both
    _ = spawn(brsyncPath, ["resolve", "--json", hit], environment: environment)
    _ = spawn(sqlitePath, [replicaFile, count], environment: environment)
}
for _ in 0..<runs { // interleaved, so both see the same machine load
    brsyncTimes.append(spawn(brsyncPath, ["resolve", "--json", hit], environment: environment).0)
    sqliteTimes.append(spawn(sqlitePath, [replicaFile, count], environment: environment).0)
}
let brsyncMedian = median(brsyncTimes) / 1_000_000
let sqliteMedian = median(sqliteTimes) / 1_000_000
print(
    String(
        format: "brsync resolve --json: median %.2f ms, min %.2f ms (%d runs)", brsyncMedian,
        (brsyncTimes.min() ?? 0) / 1_000_000, runs))
print(
    String(
        format: "sqlite3 count(*):      median %.2f ms, min %.2f ms (%d runs)", sqliteMedian,
        (sqliteTimes.min() ?? 0) / 1_000_000, runs))
print(String(format: "ratio brsync / sqlite3: %.2fx (target <= 1.0x)", brsyncMedian / sqliteMedian))

print("\n== brsync open URL (resolve, then spawn the browser: /bin/true), 10,000 rules ==")
var openTimes: [Double] = []
var resolveTimes: [Double] = []
for _ in 0..<runs {
    let (open, openStatus) = spawn(brsyncPath, ["open", hit], environment: environment)
    guard openStatus == 0 else {
        print("brsync open failed with status \(openStatus)")
        exit(1)
    }
    openTimes.append(open)
    resolveTimes.append(spawn(brsyncPath, ["resolve", "--json", hit], environment: environment).0)
}
let openMedian = median(openTimes) / 1_000_000
let resolveMedian = median(resolveTimes) / 1_000_000
print(String(format: "brsync open:    median %.2f ms (%d runs)", openMedian, runs))
print(String(format: "brsync resolve: median %.2f ms (same run)", resolveMedian))
print(String(format: "the launch adds %.2f ms (target <= 2 ms)", openMedian - resolveMedian))

print("\n== Finding the app a link came from (walking parents in /proc) ==")
// As a click comes: an app ("mailapp") ran xdg-open, which runs brsync; the
// walk starts at xdg-open. And the worst case here: this process's own
// parents, every one of them read, up to where the walk gives up.
let scratch = NSTemporaryDirectory() + "brsync-bench-source-\(getpid())"
try? FileManager.default.createDirectory(atPath: scratch, withIntermediateDirectories: true)
let opener = "\(scratch)/xdg-open"
let app = "\(scratch)/mailapp"
try? "#!/bin/sh\necho $$ > '\(scratch)/pid'\nsleep 30\n".write(toFile: opener, atomically: true, encoding: .utf8)
try? "#!/bin/sh\n'\(opener)'\ntrue\n".write(toFile: app, atomically: true, encoding: .utf8)
chmod(opener, 0o755)
chmod(app, 0o755)
let appProcess = Process()
appProcess.executableURL = URL(fileURLWithPath: app)
try? appProcess.run()
var openerPID: Int32 = 0
for _ in 0..<300 where openerPID == 0 {
    openerPID =
        (try? String(contentsOfFile: "\(scratch)/pid", encoding: .utf8)).flatMap {
            Int32($0.trimmingCharacters(in: .whitespacesAndNewlines))
        } ?? 0
    usleep(10_000)
}
func timeFind(from pid: Int32) -> (Double, Double, String) {
    var times: [Double] = []
    var found = ""
    for _ in 0..<1_000 {
        let start = DispatchTime.now().uptimeNanoseconds
        let result = SourceApp.find(from: pid)
        times.append(Double(DispatchTime.now().uptimeNanoseconds - start))
        found = (try? result.get().id) ?? "\(result)"
    }
    return (median(times) / 1_000, (times.max() ?? 0) / 1_000, found)
}
let click = timeFind(from: openerPID)
print(
    String(
        format:
            "a click (mailapp -> xdg-open -> brsync): median %.1f µs, max %.1f µs, found %@ (1,000 runs; target < 1 ms)",
        click.0, click.1, click.2))
let worst = timeFind(from: getppid())
print(
    String(
        format: "this benchmark's own parents, all the way up: median %.1f µs, max %.1f µs (%@)", worst.0, worst.1,
        worst.2))
kill(openerPID, SIGTERM)
appProcess.terminate()
try? FileManager.default.removeItem(atPath: scratch)
