import BrsyncServer
import Foundation
import HTTP
import JSON
import Net
import Storage
import TestSupport
import Testing

/// A real `brsyncd` process over TLS on 127.0.0.1 with a fresh CA
/// (``BrsyncdProcess``), and replicas in temporary homes driven by the real
/// `brsync` binary. (In-process clients and servers: SyncEndToEndTests' `SyncWorld`.)
final class CLIWorld: @unchecked Sendable {
    // Built in init; the server process is stopped in deinit.
    let directory: TemporaryDirectory
    /// The SQLite store's file (a PostgreSQL world has none).
    let db: String
    /// `--db PATH` or `--store URL`, and the environment brsyncd needs with it.
    let storeArguments: [String]
    let storeEnvironment: [String: String]
    var server: BrsyncdProcess?
    var port: UInt16 = 0
    let brsync = ProcessRunner.binary("brsync")
    let brsyncd = ProcessRunner.binary("brsyncd")

    init(_ store: StoreKind = .sqlite) throws {
        directory = try TemporaryDirectory(prefix: "brsync-sync")
        _ = try TestCertificates(in: directory)
        // The chain the server presents holds its CA, as `brsyncd dev` writes it (for `brsync join`).
        let chain =
            try String(contentsOfFile: directory.file("server.pem"), encoding: .utf8)
            + String(contentsOfFile: directory.file("ca.pem"), encoding: .utf8)
        try chain.write(toFile: directory.file("server-chain.pem"), atomically: true, encoding: .utf8)
        db = directory.file("store.sqlite")
        (storeArguments, storeEnvironment) = try store.brsyncdStore(in: directory)
        #expect(
            try ProcessRunner.run(brsyncd, ["account", "add", "alice"] + storeArguments, environment: storeEnvironment)
                .status == 0)
        try start()
    }

    deinit {
        server?.stop()
        directory.remove()
    }

    func start(port requested: UInt16 = 0) throws {
        let running = try BrsyncdProcess(
            storeArguments, certificates: directory, certificate: "server-chain.pem", port: requested,
            environment: storeEnvironment, binary: brsyncd)
        port = running.port
        server = running
    }

    func stop() {
        server?.stop()
        server = nil
    }

    var url: String { "https://127.0.0.1:\(port)" }

    /// `brsyncd device add alice DEVICE` with a join code: its output.
    func joinOutput(_ device: String, qr: Bool = false) throws -> String {
        let result = try ProcessRunner.run(
            brsyncd,
            ["device", "add", "alice", device, "--url", url, "--ca", directory.file("ca.pem")]
                + (qr ? ["--qr"] : []) + storeArguments, environment: storeEnvironment)
        #expect(result.status == 0, "\(result)")
        return result.stdout
    }

    func token(_ device: String) throws -> String {
        let result = try ProcessRunner.run(
            brsyncd, ["device", "add", "alice", device] + storeArguments, environment: storeEnvironment)
        #expect(result.status == 0, "\(result)")
        return String(result.stdout.split(separator: "\n").last ?? "")
    }

    /// A replica named `name` with its own device token, pointed at the server.
    func replica(_ name: String) throws -> String {
        let home = directory.file(name)
        try mustRun(home, ["init", "--device-name", name])
        try mustRun(home, ["remote", "set", url, "--token", try token(name), "--ca", directory.file("ca.pem")])
        return home
    }

    /// Encrypts the account end to end on `first` (`key init`) and adds the
    /// key to each of `others` (`key add`, the recovery code on standard input).
    /// - Returns: the recovery code.
    @discardableResult
    func encryptAccount(on first: String, sharingWith others: [String]) throws -> String {
        let code = try #require(EncryptionTests.recoveryCode(try run(first, ["key", "init"]).stdout))
        for home in others {
            let added = try ProcessRunner.run(
                brsync, ["key", "add"], environment: ["BRSYNC_HOME": home], stdin: code + "\n")
            #expect(added.status == 0, "\(added)")
        }
        return code
    }

    @discardableResult
    func run(_ home: String, _ arguments: [String]) throws -> ProcessResult {
        try ProcessRunner.run(brsync, arguments, environment: ["BRSYNC_HOME": home])
    }

    /// Firefox (launched as `exec`) and a rule opening `pattern` in it, made on `home`.
    func firefoxRule(_ home: String, _ pattern: String, exec: String = "true %u") throws {
        try mustRun(home, ["browsers", "add", "firefox", "--exec", exec])
        try mustRun(home, ["rules", "add", pattern, "firefox"])
    }

    func mustRun(_ home: String, _ arguments: [String]) throws {
        let result = try run(home, arguments)
        #expect(result.status == 0, "brsync \(arguments.joined(separator: " ")): \(result)")
    }

    func snapshot(_ home: String) throws -> [String] {
        let database = try Database(path: home + "/replica.sqlite", mode: .readOnly)
        return try database.query("SELECT collection || '/' || key || ' ' || fields FROM records ORDER BY 1") {
            $0.string(0) ?? ""
        }
            // What the replica learns of the server's time and why a sync failed is
            // bookkeeping for `status`, not data.
            + database.query(
                "SELECT key || '=' || value FROM meta WHERE key NOT IN ('clock_offset', 'sync_problem', 'sync_problem_at', 'sync_problem_code', 'push_problem', 'push_problem_at', 'push_problem_code', 'pull_problem', 'pull_problem_at', 'pull_problem_code', 'instance') ORDER BY 1"
            ) { $0.string(0) ?? "" }
            + database.query("SELECT COUNT(*) FROM changes") { "changes \($0.int(0) ?? 0)" }
    }
}

@Suite(.serialized) struct SyncTests {
    /// A rule added on A is synced; the server stops; B resolves by it offline.
    @Test(arguments: StoreKind.allCases) func aRuleMadeOnOneMachineResolvesOnAnotherOffline(_ store: StoreKind) throws {
        let world = try CLIWorld(store)
        let laptop = try world.replica("laptop")
        let desktop = try world.replica("desktop")
        try world.firefoxRule(laptop, "zoom.us", exec: "firefox %u")
        try world.mustRun(laptop, ["browsers", "default", "firefox"])
        let pushed = try world.run(laptop, ["sync", "--json"])
        #expect(pushed.status == 0 && pushed.stdout.contains(#""pushed":3"#), "\(pushed)")
        let pulled = try world.run(desktop, ["sync", "--json"])
        #expect(pulled.status == 0 && pulled.stdout.contains(#""pulled":4"#), "\(pulled)") // and the laptop's name
        world.stop()
        // Launch commands are this machine's own: the desktop sets its own.
        try world.mustRun(desktop, ["browsers", "add", "firefox", "--exec", "/usr/bin/firefox %u"])
        let resolved = try world.run(desktop, ["resolve", "--json", "https://us02web.zoom.us/j/1"])
        #expect(resolved.status == 0 && resolved.stdout.contains(#""rule":"zoom.us""#), "\(resolved)")
        // An edit made offline waits; with the server gone, sync says so and changes nothing.
        try world.mustRun(desktop, ["rules", "add", "offline.example", "firefox"])
        let before = try world.snapshot(desktop)
        let offline = try world.run(desktop, ["sync"])
        #expect(offline.status == 4 && offline.stderr.contains("cannot reach the server"), "\(offline)")
        // A script asking for JSON reads one document whatever happened.
        let offlineJSON = try world.run(desktop, ["sync", "--json"])
        let failure = try JSONValue.parse(offlineJSON.stdout)
        #expect(
            offlineJSON.status == 4 && failure.objectMember("error") == .string("unreachable")
                && failure.objectMember("exit") == .int(4),
            "\(offlineJSON)")
        #expect(
            failure.objectMember("message")?.stringValue?.contains("cannot reach the server") == true, "\(offlineJSON)")
        #expect(try world.snapshot(desktop) == before)
        let status = try world.run(desktop, ["status", "--json"])
        #expect(status.stdout.contains(#""unpushed":1"#), "the offline edit waits to be pushed: \(status.stdout)")
    }

    /// A profile travels: the other machine builds its launch command from
    /// its own base browser, and may still set one of its own.
    @Test(arguments: StoreKind.allCases) func aProfileTravelsAndEachMachineBuildsItsCommand(_ store: StoreKind) throws {
        let world = try CLIWorld(store)
        let laptop = try world.replica("laptop")
        let desktop = try world.replica("desktop")
        try world.mustRun(laptop, ["browsers", "add", "firefox", "--exec", "firefox %u"])
        let made = try world.run(
            laptop, ["browsers", "add", "work", "--from", "firefox", "--args", "-P \"Work stuff\""])
        #expect(made.status == 0 && made.stdout.contains("a profile of firefox"), "\(made)")
        try world.mustRun(laptop, ["rules", "add", "github.com", "work"])
        let here = try world.run(laptop, ["resolve", "--json", "https://github.com/"])
        #expect(
            here.stdout.contains(#""argv":["firefox","-P","Work stuff","https:\/\/github.com\/"]"#)
                || here.stdout.contains(#""argv":["firefox","-P","Work stuff","https://github.com/"]"#),
            "\(here.stdout)")
        try world.mustRun(laptop, ["sync"])
        try world.mustRun(desktop, ["sync"])
        // No firefox here yet: the rule is skipped, and the list says why.
        #expect(try world.run(desktop, ["resolve", "https://github.com/"]).status == 3)
        #expect(
            try world.run(desktop, ["browsers", "list"]).stdout.contains(
                "profile of firefox, which has no launch command here"))
        try world.mustRun(desktop, ["browsers", "add", "firefox", "--exec", "/usr/lib/firefox-esr/firefox-esr %u"])
        let there = try world.run(desktop, ["resolve", "--json", "https://github.com/"])
        #expect(there.stdout.contains(#"["/usr/lib/firefox-esr/firefox-esr","-P","Work stuff","#), "\(there.stdout)")
        #expect(there.stdout.contains(#""rule":"github.com""#))
        // A command of its own here wins, and stays this machine's.
        try world.mustRun(desktop, ["browsers", "add", "work", "--exec", "firefox-work %u"])
        #expect(
            try world.run(desktop, ["resolve", "--json", "https://github.com/"]).stdout.contains(
                #""argv":["firefox-work","#))
        try world.mustRun(desktop, ["sync"])
        try world.mustRun(laptop, ["sync"])
        #expect(
            try world.run(laptop, ["resolve", "--json", "https://github.com/"]).stdout.contains(
                #""argv":["firefox","-P","Work stuff","#))
        // Bad input changes nothing.
        let before = try world.snapshot(laptop)
        for bad in [
            ["browsers", "add", "w2", "--from", "work", "--args", "-P x"],
            ["browsers", "add", "w3", "--from", "firefox", "--args", "\"open"],
            ["browsers", "add", "w4", "--from", "nosuch", "--args", "-P x"],
            ["browsers", "add", "firefox", "--from", "firefox", "--args", "-x"],
        ] {
            let result = try world.run(laptop, bad)
            #expect(result.status == 2, "\(bad): \(result)")
        }
        #expect(try world.snapshot(laptop) == before)
    }

    /// A rule deleted on one machine and edited later on another that had
    /// not seen the deletion: both syncs say a conflict was kept, and both
    /// logs say in words what happened. The log shows a list as JSON.
    @Test func aDeletionUndoneByAnEditIsToldOnBothMachines() throws {
        let world = try CLIWorld(.sqlite)
        let laptop = try world.replica("laptop")
        let desktop = try world.replica("desktop")
        for home in [laptop, desktop] {
            try world.mustRun(home, ["browsers", "add", "firefox", "--exec", "firefox %u"])
        }
        try world.mustRun(laptop, ["browsers", "add", "work", "--from", "firefox", "--args", "-P work"])
        try world.mustRun(laptop, ["rules", "add", "github.com", "firefox"])
        try world.mustRun(laptop, ["sync"])
        try world.mustRun(desktop, ["sync"])
        try world.mustRun(laptop, ["rules", "rm", "github.com"])
        try world.mustRun(laptop, ["sync"])
        usleep(20_000)
        try world.mustRun(desktop, ["rules", "add", "github.com", "firefox", "--priority", "5"])
        for home in [desktop, laptop] {
            let synced = try world.run(home, ["sync"])
            #expect(synced.stdout.contains("1 value(s) lost to concurrent edits"), "\(home): \(synced)")
            let conflicts = try world.run(home, ["log", "--conflicts"]).stdout
            #expect(
                conflicts.contains("rules/github.com its deletion (laptop")
                    && conflicts.contains("was undone by an edit made without it (desktop"),
                "\(home): \(conflicts)")
        }
        let log = try world.run(desktop, ["log"]).stdout
        #expect(log.contains(#"profileArgs=["-P","work"]"#) && !log.contains("JSONValue"), "\(log)")
    }

    /// Concurrent edits: the later edit wins everywhere; the loser is kept and can be restored.
    @Test(arguments: StoreKind.allCases) func concurrentEditsConvergeAndTheLoserCanBeRestored(_ store: StoreKind) throws
    {
        let world = try CLIWorld(store)
        let laptop = try world.replica("laptop")
        let desktop = try world.replica("desktop")
        for home in [laptop, desktop] {
            try world.mustRun(home, ["browsers", "add", "firefox", "--exec", "firefox %u"])
            try world.mustRun(home, ["browsers", "add", "chrome", "--exec", "chrome %u"])
        }
        try world.mustRun(laptop, ["rules", "add", "github.com", "firefox", "--priority", "1"])
        usleep(20_000)
        try world.mustRun(desktop, ["rules", "add", "github.com", "chrome", "--priority", "1"])
        try world.mustRun(laptop, ["sync"])
        // The sync that made the conflict says so.
        let conflicted = try world.run(desktop, ["sync"])
        let listedConflicts = try world.run(desktop, ["log", "--conflicts"]).stdout
        #expect(
            conflicted.stdout.contains("1 value(s) lost to concurrent edits ('brsync log --conflicts'"),
            "\(conflicted) \(listedConflicts)")
        try world.mustRun(laptop, ["sync"])
        for home in [laptop, desktop] {
            let resolved = try world.run(home, ["resolve", "--json", "https://github.com/x"])
            #expect(resolved.stdout.contains(#""browser":"chrome""#), "\(home): \(resolved)")
        }
        // The desktop's push overwrote the laptop's concurrent edit: it keeps the loser.
        let conflicts = try world.run(desktop, ["log", "--conflicts"])
        #expect(
            conflicts.stdout.contains(#"rules/github.com browser: "firefox""#)
                && conflicts.stdout.contains(#"lost to "chrome""#), "\(conflicts)")
        #expect(
            !conflicts.stdout.contains(" deleted: false"),
            "a value that lost to the same value is no conflict: \(conflicts)")
        let line = try #require(
            conflicts.stdout.split(separator: "\n").first { $0.contains("rules/github.com browser:") })
        let id = try #require(line.split(separator: " ").first.map { String($0.dropFirst()) })
        try world.mustRun(desktop, ["restore", id])
        // It is marked restored, and restoring it again is refused.
        #expect(try world.run(desktop, ["log", "--conflicts"]).stdout.contains("[restored "))
        let json = try world.run(desktop, ["log", "--conflicts", "--json"])
        #expect(json.stdout.hasPrefix("[") && json.stdout.contains(#""restoredAt":"20"#), "\(json.stdout)")
        let again = try world.run(desktop, ["restore", id])
        #expect(again.status == 2 && again.stderr.contains("restored already"), "\(again)")
        let log = try world.run(desktop, ["log", "--json", "--limit", "3"])
        #expect(
            log.status == 0 && log.stdout.hasPrefix("[{") && log.stdout.contains(#""thisDevice":true"#), "\(log.stdout)"
        )
        for home in [desktop, laptop] { try world.mustRun(home, ["sync"]) }
        for home in [laptop, desktop] {
            #expect(
                try world.run(home, ["resolve", "--json", "https://github.com/x"]).stdout.contains(
                    #""browser":"firefox""#))
        }
    }

    @Test func aRestoredServerMeansAFullResyncThatKeepsLocalEdits() throws {
        let world = try CLIWorld()
        let laptop = try world.replica("laptop")
        try world.mustRun(laptop, ["browsers", "add", "firefox", "--exec", "firefox %u"])
        try world.mustRun(laptop, ["sync"])
        let backup = world.directory.file("backup.sqlite")
        #expect(try ProcessRunner.run(world.brsyncd, ["backup", backup, "--db", world.db]).status == 0)
        try world.mustRun(laptop, ["rules", "add", "a.example", "firefox"])
        try world.mustRun(laptop, ["sync"])
        // The operator restores yesterday's backup.
        world.stop()
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: world.db + suffix) }
        try FileManager.default.copyItem(atPath: backup, toPath: world.db)
        try world.start()
        try world.mustRun(
            laptop,
            [
                "remote", "set", world.url, "--token",
                try String(contentsOfFile: laptop + "/token", encoding: .utf8).trimmingCharacters(
                    in: .whitespacesAndNewlines), "--ca", world.directory.file("ca.pem"),
            ])
        try world.mustRun(laptop, ["rules", "add", "b.example", "firefox"])
        let resync = try world.run(laptop, ["sync", "--json"])
        #expect(resync.status == 0, "\(resync)")
        // A new machine sees everything the laptop ever had.
        let desktop = try world.replica("desktop")
        try world.mustRun(desktop, ["sync"])
        let rules = try world.run(desktop, ["rules", "list"]).stdout
        #expect(rules.contains("a.example") && rules.contains("b.example"), "\(rules)")
    }

    /// Ctrl-C during a sync (here: waiting on a server that took the
    /// connection and never answers) says in one line that nothing is lost,
    /// exits as interrupted, and the next sync sends everything.
    @Test func anInterruptedSyncSaysNothingIsLost() throws {
        let world = try CLIWorld()
        let laptop = try world.replica("laptop")
        try world.firefoxRule(laptop, "a.example", exec: "firefox %u")
        // A listener that never accepts: the kernel completes the connection, nobody answers.
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(listener) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(listener, $0, length) == 0 && listen(listener, 4) == 0
                    && getsockname(listener, $0, &length) == 0
            }
        }
        #expect(bound)
        let silent = "https://127.0.0.1:\(UInt16(bigEndian: address.sin_port))"
        let token = laptop + "/token"
        try world.mustRun(
            laptop, ["remote", "set", silent, "--token-file", token, "--ca", world.directory.file("ca.pem")])
        // Ctrl-C, and a `kill` (systemd stopping the timer's sync) alike; a
        // script that asked for JSON reads one document (stdout and stderr are one text here).
        for (number, said, arguments) in [(SIGINT, "interrupted", ["sync"]), (SIGTERM, "stopped", ["sync", "--json"])] {
            let sync = try BackgroundProcess(world.brsync, arguments, environment: ["BRSYNC_HOME": laptop])
            // Interrupted once it is waiting for the server (its connection is queued on the listener).
            var waiting = pollfd(fd: listener, events: Int16(POLLIN), revents: 0)
            #expect(poll(&waiting, 1, 20_000) == 1, "the sync connected")
            sync.signal(number)
            let status = sync.wait(timeout: 20)
            #expect(
                status == 128 + number
                    && sync.text.contains(
                        "brsync: \(said); nothing is lost: the next sync goes on from where this one stopped"),
                "\(String(describing: status)) \(sync.text)")
            let document = sync.text.split(separator: "\n").first { $0.hasPrefix("{") }.map(String.init) ?? ""
            #expect(
                arguments.contains("--json") == (try? JSONValue.parse(document))?.objectMember("exit").map {
                    $0 == .int(Int64(128 + number))
                } ?? false,
                "\(sync.text)")
            // The connection it left queued is taken off, for the next to be seen.
            close(accept(listener, nil, nil))
        }
        try world.mustRun(
            laptop, ["remote", "set", world.url, "--token-file", token, "--ca", world.directory.file("ca.pem")])
        let next = try world.run(laptop, ["sync", "--json"])
        #expect(next.status == 0 && next.stdout.contains(#""pushed":2"#), "\(next)")
    }

    /// A mistyped token given to `remote set` does not cost the one that
    /// worked: it is kept, and the refused sync says where and how to put it back.
    @Test func aMistypedTokenKeepsTheOneThatWorked() throws {
        let world = try CLIWorld(.sqlite)
        let laptop = try world.replica("laptop")
        try world.mustRun(laptop, ["sync"])
        let working = try String(contentsOfFile: laptop + "/token", encoding: .utf8).trimmingCharacters(
            in: .whitespacesAndNewlines)
        let mistyped = try world.run(laptop, ["remote", "set", world.url, "--token", "brs_notAValidTokenAtAll1234"])
        #expect(
            mistyped.status == 0
                && mistyped.stdout.contains("the last token that synced is kept in \(laptop)/token.previous"),
            "\(mistyped)")
        // A second mistyped token does not push out the one that worked.
        try world.mustRun(laptop, ["remote", "set", world.url, "--token", "brs_anotherWrongTokenAtAll99"])
        let wrong = try world.run(laptop, ["sync"])
        #expect(wrong.status == 5 && wrong.stderr.contains("unauthorized"), "\(wrong)")
        #expect(
            wrong.stderr.contains("kept in \(laptop)/token.previous")
                && wrong.stderr.contains("brsync remote set \(world.url) --token-file \(laptop)/token.previous"),
            "\(wrong)")
        #expect(try String(contentsOfFile: laptop + "/token.previous", encoding: .utf8).contains(working))
        // Put back as the message says, from the file (never on a command line).
        try world.mustRun(laptop, ["remote", "set", world.url, "--token-file", laptop + "/token.previous"])
        #expect(try world.run(laptop, ["sync"]).status == 0)
        let neither = try world.run(laptop, ["remote", "set", world.url])
        #expect(neither.status == 2 && neither.stderr.contains("--token-file"), "\(neither)")
    }

    @Test(arguments: StoreKind.allCases) func refusalsAreExit5WithTheServersMessage(_ store: StoreKind) throws {
        let world = try CLIWorld(store)
        let laptop = try world.replica("laptop")
        try world.mustRun(laptop, ["browsers", "add", "firefox"])
        let before = try world.snapshot(laptop)
        try world.mustRun(
            laptop,
            [
                "remote", "set", world.url, "--token", "brs_notAValidTokenAtAll1234", "--ca",
                world.directory.file("ca.pem"),
            ])
        let wrong = try world.run(laptop, ["sync"])
        #expect(wrong.status == 5 && wrong.stderr.contains("unauthorized"), "\(wrong)")
        let token = try world.token("laptop2")
        try world.mustRun(
            laptop, ["remote", "set", world.url, "--token", token, "--ca", world.directory.file("ca.pem")])
        #expect(
            try ProcessRunner.run(
                world.brsyncd, ["device", "revoke", "alice", "laptop2"] + world.storeArguments,
                environment: world.storeEnvironment
            ).status == 0)
        let revoked = try world.run(laptop, ["push"])
        #expect(revoked.status == 5 && revoked.stderr.contains("revoked"), "\(revoked)")
        #expect(
            try world.snapshot(laptop).filter { !$0.hasPrefix("remote") } == before.filter { !$0.hasPrefix("remote") })
    }

    /// Unreachable or untrusted servers are exit 4 (the timer's "offline");
    /// a server whose answers are not the protocol is exit 6.
    @Test func unverifiableOrWrongServersAreExit4Or6AndChangeNothing() throws {
        let world = try CLIWorld()
        let laptop = try world.replica("laptop")
        try world.mustRun(laptop, ["browsers", "add", "firefox"])
        let token = try String(contentsOfFile: laptop + "/token", encoding: .utf8).trimmingCharacters(
            in: .whitespacesAndNewlines)
        func point(at url: String, ca: String? = nil) throws {
            try world.mustRun(
                laptop, ["remote", "set", url, "--token", token, "--ca", ca ?? world.directory.file("ca.pem")])
        }
        let before = try world.snapshot(laptop).filter { !$0.hasPrefix("remote") }

        // A certificate for another name.
        try point(at: "https://localhost:\(world.port)".replacingOccurrences(of: "localhost", with: "127.0.0.2"))
        let wrongHost = try world.run(laptop, ["sync"])
        #expect(wrongHost.status == 4, "\(wrongHost)")

        // An unknown CA.
        let other = try CertificateAuthority(name: "stranger")
        let otherFile = world.directory.file("other-ca.pem")
        try other.certificatePEM.write(toFile: otherFile, atomically: true, encoding: .utf8)
        try point(at: world.url, ca: otherFile)
        let unknownCA = try world.run(laptop, ["sync"])
        #expect(unknownCA.status == 4 && unknownCA.stderr.contains("not trusted"), "\(unknownCA)")

        // Plain HTTP on the port.
        let plain = try HTTPServer(
            addresses: [SocketAddress(host: "127.0.0.1", port: 0)], tls: nil, limits: HTTPLimits()
        ) { _, _ in
            HTTPResponse.json(200, "{}")
        }
        let plainPort = try plain.start()[0]
        defer { plain.shutdown(graceMilliseconds: 500) }
        try point(at: "https://127.0.0.1:\(plainPort)")
        let plaintext = try world.run(laptop, ["sync"])
        #expect(plaintext.status == 4, "\(plaintext)")

        // A TLS server that answers garbage, or JSON cut short.
        let authorityFile = world.directory.file("ca.pem")
        let context = try TLSContext.server(
            certificateChainFile: world.directory.file("server.pem"), privateKeyFile: world.directory.file("server.key")
        )
        for (body, message) in [
            ("<html>hello</html>", "not JSON"), (#"{"acknowledged": 1, "appl"#, "not JSON"),
            (#"{"some":"json"}"#, "not a push response"),
        ] {
            let fake = try HTTPServer(
                addresses: [SocketAddress(host: "127.0.0.1", port: 0)], tls: context, limits: HTTPLimits()
            ) { _, _ in
                HTTPResponse(status: 200, headers: ["Content-Type": "application/json"], body: Array(body.utf8))
            }
            let fakePort = try fake.start()[0]
            defer { fake.shutdown(graceMilliseconds: 500) }
            try point(at: "https://127.0.0.1:\(fakePort)", ca: authorityFile)
            try world.mustRun(laptop, ["rules", "add", "x\(fakePort).example", "firefox"])
            let snapshot = try world.snapshot(laptop)
            let garbage = try world.run(laptop, ["push"])
            #expect(garbage.status == 6 && garbage.stderr.contains(message), "\(body): \(garbage)")
            #expect(try world.snapshot(laptop) == snapshot, "a bad answer changes nothing")
        }
        _ = before
    }

    @Test func remoteSettingsAreCheckedAndTheTokenStaysPrivate() throws {
        let world = try CLIWorld()
        let laptop = try world.replica("laptop")
        var info = stat()
        stat(laptop + "/token", &info)
        #expect(info.st_mode & 0o777 == 0o600, "only the user can read the token")
        let show = try world.run(laptop, ["remote", "show"])
        let token = try String(contentsOfFile: laptop + "/token", encoding: .utf8).trimmingCharacters(
            in: .whitespacesAndNewlines)
        #expect(show.status == 0 && show.stdout.contains(world.url) && !show.stdout.contains(token))
        for (arguments, message) in [
            (["remote", "set", "http://127.0.0.1:1", "--token", token], "https://"),
            (["remote", "set", "https://host/path", "--token", token], "without a path"),
            (["remote", "set", world.url, "--token", "nope"], "brs_"),
            (["remote", "set", world.url, "--token", token, "--ca", "/nonexistent.pem"], "no such file"),
            (["remote", "set", world.url, "--token", token, "--ca", "/etc/hostname"], "holds no PEM certificate"),
        ] {
            let result = try world.run(laptop, arguments)
            #expect(result.status == 2 && result.stderr.contains(message), "\(arguments): \(result)")
        }
        // The CA is copied into the home: the file given can go.
        let given = world.directory.file("given-ca.pem")
        try FileManager.default.copyItem(atPath: world.directory.file("ca.pem"), toPath: given)
        try world.mustRun(laptop, ["remote", "set", world.url, "--token", token, "--ca", given])
        try FileManager.default.removeItem(atPath: given)
        #expect(try world.run(laptop, ["remote", "show"]).stdout.contains(laptop + "/ca.pem"))
        try world.mustRun(laptop, ["sync"])
        let removed = try world.run(laptop, ["remote", "rm"])
        #expect(removed.status == 0 && removed.stdout.contains("remote removed"), "\(removed)")
        #expect(!FileManager.default.fileExists(atPath: laptop + "/token"))
        let again = try world.run(laptop, ["remote", "rm"])
        #expect(again.status == 0 && again.stdout.contains("there was no remote"), "\(again)")
        let none = try world.run(laptop, ["sync"])
        #expect(none.status == 2 && none.stderr.contains("no remote"))
    }
}

extension JSONValue {
    /// The member `name` of an object, or nil.
    func objectMember(_ name: String) -> JSONValue? {
        if case .object(let members) = self { return members[name] }
        return nil
    }
}
