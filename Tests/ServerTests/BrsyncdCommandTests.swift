import Foundation
import HTTP
import Model
import Net
import Storage
import SyncCore
import TestSupport
import Testing

@testable import BrsyncServer
@testable import ServerStore

/// The real `brsyncd` binary, in a temporary folder.
@Suite struct BrsyncdCommandTests {
    let binary = ProcessRunner.binary("brsyncd")

    func run(_ arguments: [String], db: String? = nil) throws -> ProcessResult {
        try ProcessRunner.run(binary, arguments, environment: db.map { ["BRSYNCD_DB": $0] } ?? [:])
    }

    @Test func accountsAndDevices() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let db = directory.file("store.sqlite")
        #expect(try run(["account", "add", "alice"], db: db).status == 0)
        let added = try run(["device", "add", "alice", "laptop", "--db", db])
        #expect(added.status == 0)
        let token = try #require(added.stdout.split(separator: "\n").last.map(String.init))
        #expect(token.hasPrefix("brs_") && token.count == 47)
        let store = try SyncStore(sqlite: db)
        #expect(try store.authenticate(token: token).name == "laptop")
        let list = try run(["device", "list", "alice"], db: db)
        #expect(list.stdout.contains("laptop\tactive\treplica -\tlast seen never"))
        #expect(!list.stdout.contains(token), "tokens are never shown again")
        #expect(try run(["device", "revoke", "alice", "laptop"], db: db).status == 0)
        #expect(try run(["device", "list", "alice"], db: db).stdout.contains("revoked"))
        let accounts = try run(["account", "list"], db: db).stdout
        #expect(accounts.contains("alice\t1/64 device(s)\t0/100000 record(s)\t0 KiB/128.0 MiB\tid "))
        // The id a machine's messages name the account by.
        let uid = try #require(try store.accounts().first { $0.name == "alice" }?.uid)
        #expect(!uid.isEmpty && accounts.contains("\tid \(uid)"), "\(accounts)")
        #expect(try run(["account", "rm", "alice"], db: db).status == 0)
        #expect(try run(["account", "list"], db: db).stdout.contains("no accounts"))
        // The token hash is all the store holds.
        let raw = try Data(contentsOf: URL(fileURLWithPath: db))
        #expect(raw.range(of: Data(token.utf8)) == nil)
    }

    static let badCommands: [([String], String)] = [
        (["account", "add", "alice"], "exists already"),
        (["account", "add", " "], "1 to 64 characters"),
        (["account", "add", "a\u{202E}b"], "control or formatting characters"),
        (["device", "add", "alice", "zero\u{200B}width"], "control or formatting characters"),
        (["account", "rm", "nobody"], "no account named 'nobody'"),
        (["account", "recount", "nobody"], "no account named 'nobody'"),
        (["device", "add", "nobody", "x"], "no account named 'nobody'"),
        (["device", "add", "alice", "laptop"], "has a device named 'laptop' already"),
        (["device", "revoke", "alice", "ghost"], "no device named 'ghost'"),
        (["device", "list", "nobody"], "no account"),
        (["serve"], "--cert FILE and --key FILE are required"),
        (["serve", "--cert", "/nonexistent.pem", "--key", "/nonexistent.key"], "cannot read /nonexistent.pem"),
        (["serve", "--insecure-plaintext", "--listen", "nonsense"], "no port"),
        (["serve", "--insecure-plaintext", "--listen", "127.0.0.1:99999"], "not a port"),
        (["serve", "--insecure-plaintext", "--max-connections", "0"], "positive"),
        (["serve", "--insecure-plaintext", "--log-level", "loud"], "--log-level"),
        (["backup", "/nonexistent-dir/backup.sqlite"], "cannot create"),
        (["frobnicate"], "Unexpected argument"),
    ]

    @Test("bad input: exit 2, one line", arguments: badCommands)
    func badCommand(_ row: ([String], String)) throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let db = directory.file("store.sqlite")
        _ = try run(["account", "add", "alice"], db: db)
        _ = try run(["device", "add", "alice", "laptop"], db: db)
        let result = try run(row.0, db: db)
        #expect(result.status == 2, "\(row.0): \(result)")
        #expect(result.stderr.hasPrefix("brsyncd: error: ") && result.stderr.contains(row.1), "\(result.stderr)")
        if row.1 != "Unexpected argument" { // usage errors add the usage after the error line
            #expect(result.stderr.split(separator: "\n").count == 1, "\(result.stderr)")
        }
    }

    /// A store another process keeps locked past brsyncd's wait (a long
    /// `sqlite3` transaction): the command says so and changes nothing.
    @Test func aStoreLockedTooLongIsNamedSo() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let db = directory.file("store.sqlite")
        #expect(try run(["account", "add", "alice"], db: db).status == 0)
        let holder = try Database(path: db)
        try holder.execute("BEGIN IMMEDIATE")
        let locked = try run(["account", "add", "bob"], db: db)
        try holder.execute("ROLLBACK")
        #expect(
            locked.status == 2 && locked.stderr.contains("the store is locked by another process")
                && locked.stderr.contains("nothing was changed") && locked.stderr.split(separator: "\n").count == 1,
            "\(locked)")
        #expect(try run(["account", "list"], db: db).stdout.split(separator: "\n").count == 1, "bob was not added")
    }

    @Test func noStoreGiven() throws {
        let result = try run(["account", "list"])
        #expect(result.status == 2 && result.stderr.contains("pass --db PATH or --store postgres://"))
    }

    /// A PostgreSQL store given wrongly: exit 2, one line, and never the password.
    @Test func storeURLsThatCannotBeUsed() throws {
        let cases: [([String], String)] = [
            (["account", "list", "--db", "/tmp/x.sqlite", "--store", "postgres://u@h/d"], "not both"),
            (["account", "list", "--store", "mysql://u@h/d"], "neither postgres://"),
            (["account", "list", "--store", "postgres://u:hunter2@127.0.0.1:1/d"], "process list"),
            (["account", "list", "--store", "postgres://u@127.0.0.1:1/d?sslmode=verify"], "sslmode 'verify'"),
            (["account", "list", "--store", "postgres://u@127.0.0.1:1/d"], "cannot connect"),
            (["backup", "/tmp/never", "--store", "postgres://u@127.0.0.1:1/d"], "pg_dump"),
        ]
        for (arguments, reason) in cases {
            let result = try run(arguments)
            #expect(
                result.status == 2 && result.stderr.contains(reason) && !result.stderr.contains("hunter2")
                    && result.stderr.split(separator: "\n").count == 1, "\(arguments): \(result)")
        }
        // BRSYNCD_STORE wins over BRSYNCD_DB (the unit sets BRSYNCD_DB by default).
        let both = try ProcessRunner.run(
            binary, ["account", "list"],
            environment: ["BRSYNCD_DB": "/tmp/never.sqlite", "BRSYNCD_STORE": "postgres://u@127.0.0.1:1/d"])
        #expect(both.status == 2 && both.stderr.contains("cannot connect to postgres://u@127.0.0.1:1/d"), "\(both)")
    }

    @Test func unusableStoresAreLeftUntouched() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        // A mistyped path: named, and no empty store is left behind; only the first `account add` makes one.
        let typo = directory.file("stroe.sqlite")
        for arguments in [
            ["device", "list", "alice"], ["account", "list"], ["device", "add", "alice", "phone"],
            ["backup", directory.file("out.sqlite")],
        ] {
            let result = try run(arguments, db: typo)
            #expect(
                result.status == 2 && result.stderr.contains("there is no store at \(typo)"), "\(arguments): \(result)")
            #expect(!FileManager.default.fileExists(atPath: typo))
        }
        #expect(try run(["account", "add", "alice"], db: typo).status == 0)
        #expect(FileManager.default.fileExists(atPath: typo))
        let garbage = directory.file("garbage.sqlite")
        try Data(String(repeating: "junk", count: 1000).utf8).write(to: URL(fileURLWithPath: garbage))
        let other = directory.file("other.sqlite")
        try Database(path: other).execute("CREATE TABLE photos (x)")
        let newer = directory.file("newer.sqlite")
        _ = try SyncStore(sqlite: newer)
        try Database(path: newer).execute("PRAGMA user_version = 99")
        for (file, message) in [
            (garbage, "not an SQLite database"), (other, "not a brsyncd database"), (newer, "schema version 99"),
        ] {
            let before = try Data(contentsOf: URL(fileURLWithPath: file))
            let result = try run(["account", "list"], db: file)
            #expect(result.status == 2 && result.stderr.contains(message), "\(result)")
            #expect(try Data(contentsOf: URL(fileURLWithPath: file)) == before)
        }
    }

    @Test func keyThatDoesNotMatchAndPortInUse() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let authority = try CertificateAuthority()
        let one = try authority.issue(hosts: ["localhost"])
        let two = try authority.issue(hosts: ["localhost"])
        try one.certificatePEM.write(toFile: directory.file("one.pem"), atomically: true, encoding: .utf8)
        try two.privateKeyPEM.write(toFile: directory.file("two.key"), atomically: true, encoding: .utf8)
        let mismatch = try run(
            ["serve", "--cert", directory.file("one.pem"), "--key", directory.file("two.key")],
            db: directory.file("s.sqlite"))
        #expect(mismatch.status == 2 && mismatch.stderr.contains("does not match the certificate"), "\(mismatch)")

        let busy = try Socket.listen(on: SocketAddress(host: "127.0.0.1", port: 0))
        let inUse = try run(
            ["serve", "--insecure-plaintext", "--listen", "127.0.0.1:\(busy.localPort)"], db: directory.file("s.sqlite")
        )
        #expect(inUse.status == 2 && inUse.stderr.contains("the port is in use"), "\(inUse)")
        // The metrics listener: a bad address, or a port in use, stops the start (and the sync port is let go).
        let badMetrics = try run(
            ["serve", "--insecure-plaintext", "--listen", "127.0.0.1:0", "--metrics-listen", "nowhere"],
            db: directory.file("s.sqlite"))
        #expect(badMetrics.status == 2 && badMetrics.stderr.contains("--metrics-listen"), "\(badMetrics)")
        let metricsInUse = try run(
            [
                "serve", "--insecure-plaintext", "--listen", "127.0.0.1:0", "--metrics-listen",
                "127.0.0.1:\(busy.localPort)",
            ],
            db: directory.file("s.sqlite"))
        #expect(metricsInUse.status == 2 && metricsInUse.stderr.contains("the port is in use"), "\(metricsInUse)")
    }
}

/// `brsyncd serve` as a real process.
@Suite(.serialized) struct BrsyncdProcessTests {
    let binary = ProcessRunner.binary("brsyncd")

    func serve(_ directory: TemporaryDirectory, db: String, extra: [String] = []) throws -> BrsyncdProcess {
        try BrsyncdProcess(["--db", db] + extra, certificates: directory, binary: binary)
    }

    func writeCertificates(_ directory: TemporaryDirectory, authority: CertificateAuthority) throws {
        _ = try TestCertificates(in: directory, authority: authority)
    }

    /// Certificates, and a store with account alice and `devices`: the store path, their tokens and the epoch.
    func prepareStore(_ directory: TemporaryDirectory, devices: [String]) throws -> (String, [String], String) {
        try writeCertificates(directory, authority: try CertificateAuthority())
        let db = directory.file("store.sqlite")
        let store = try SyncStore(sqlite: db)
        try store.addAccount("alice")
        let tokens = try devices.map { try store.addDevice(account: "alice", name: $0) }
        store.close()
        return (db, tokens, store.epoch)
    }

    func device(_ port: UInt16, caFile: String, token: String, id: String) throws -> TestDevice {
        let client = HTTPClient(
            .init(
                address: SocketAddress(host: "127.0.0.1", port: port), serverName: "localhost",
                tls: try TLSContext.client(caFile: caFile)))
        return TestDevice(client: client, token: token, deviceID: id)
    }

    /// kill -9 during concurrent pushes: after a restart every acknowledged
    /// change is there and the database passes its integrity check.
    @Test func everyAcknowledgedPushSurvivesKillDashNine() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let (db, tokens, _) = try prepareStore(directory, devices: (0..<4).map { "d\($0)" })
        let running = try serve(directory, db: db)
        let acknowledged = LockedKeys()
        let group = DispatchGroup()
        for (index, token) in tokens.enumerated() {
            group.enter()
            let caFile = directory.file("ca.pem")
            let port = running.port
            DispatchQueue.global().async {
                defer { group.leave() }
                guard let device = try? device(port, caFile: caFile, token: token, id: "dev\(index)") else { return }
                for round in 0..<400 {
                    let changes = (0..<3).map {
                        device.change("d\(index)-r\(round)-\($0).example", ["browser": .string("b")])
                    }
                    // the server died
                    guard let response = try? device.push(changes), response.status == 200 else { return }
                    acknowledged.add(changes.map { "rules/\($0.key)" })
                }
            }
        }
        // Kill while pushes are in flight.
        for _ in 0..<500 where acknowledged.count < 60 { usleep(10_000) }
        running.process.signal(SIGKILL)
        group.wait()
        #expect(acknowledged.count >= 60, "pushes were acknowledged before the kill")

        let restarted = try serve(directory, db: db)
        defer { restarted.process.stop() }
        let reader = try device(restarted.port, caFile: directory.file("ca.pem"), token: tokens[0], id: "dev0")
        let stored = try reader.pullAll(limit: 1000).records
        let missing = acknowledged.all.subtracting(stored.keys)
        #expect(missing.isEmpty, "acknowledged but lost: \(missing.sorted().prefix(5))")
        #expect(try Database(path: db, mode: .readOnly).scalar("PRAGMA integrity_check") == .text("ok"))
    }

    @Test func sigtermStopsGracefullyAndSighupReloadsTheCertificate() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        try writeCertificates(directory, authority: try CertificateAuthority(name: "first CA"))
        let firstCA = directory.file("first-ca.pem")
        try FileManager.default.copyItem(atPath: directory.file("ca.pem"), toPath: firstCA)
        let db = directory.file("store.sqlite")
        let running = try serve(directory, db: db)
        let health = { (caFile: String) throws -> Int in
            let client = HTTPClient(
                .init(
                    address: SocketAddress(host: "127.0.0.1", port: running.port), serverName: "localhost",
                    tls: try TLSContext.client(caFile: caFile)))
            return try client.send(method: "GET", target: "/v1/health").status
        }
        #expect(try health(firstCA) == 200)
        // New files from another CA, then SIGHUP: new connections get the new certificate.
        try writeCertificates(directory, authority: try CertificateAuthority(name: "second CA"))
        running.process.signal(SIGHUP)
        _ = try running.process.waitFor("reloaded the TLS certificate")
        #expect(try health(directory.file("ca.pem")) == 200)
        #expect(throws: NetError.self) { _ = try health(firstCA) }
        // A broken file on reload keeps the old certificate.
        try "not a certificate".write(toFile: directory.file("server.pem"), atomically: true, encoding: .utf8)
        running.process.signal(SIGHUP)
        _ = try running.process.waitFor("certificate reload failed")
        #expect(try health(directory.file("ca.pem")) == 200)

        // A bad token is logged without the token.
        let stranger = try device(
            running.port, caFile: directory.file("ca.pem"), token: "brs_secret-never-logged", id: "x")
        #expect(try stranger.pull().status == 401)
        #expect(running.process.stop(signal: SIGTERM) == 0)
        #expect(running.process.text.contains("stopped"))
        #expect(running.process.text.contains("401 unauthorized"))
        #expect(!running.process.text.contains("secret-never-logged"), "tokens never appear in logs")
    }

    @Test func onlineBackupWhileServing() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let (db, tokens, epoch) = try prepareStore(directory, devices: ["laptop"])
        let token = tokens[0]
        let running = try serve(directory, db: db)
        defer { running.process.stop() }
        let device = try device(running.port, caFile: directory.file("ca.pem"), token: token, id: "laptop")
        #expect(
            try device.push((0..<10).map { device.change("s\($0).example", ["browser": .string("x")]) }).status == 200)
        let backup = directory.file("backup.sqlite")
        let result = try ProcessRunner.run(binary, ["backup", backup, "--db", db])
        #expect(result.status == 0, "\(result)")
        let copy = try SyncStore(sqlite: backup)
        #expect(copy.epoch != epoch, "a restored backup is a new epoch")
        #expect(try copy.counts().records == 10)
        #expect(try ProcessRunner.run(binary, ["backup", backup, "--db", db]).stderr.contains("exists already"))
    }

    @Test func devPrintsWhatAClientNeeds() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let process = try BackgroundProcess(binary, ["dev", "--dir", directory.file("dev"), "--listen", "127.0.0.1:0"])
        defer { process.stop() }
        let url = try process.waitFor(#"serving (https://127\.0\.0\.1:\d+)"#)
        let caFile = try process.waitFor(#"CA file:\s+(\S+)"#)
        // The token is in a file the banner names, never on a command line it prints.
        let tokenFile = try process.waitFor(#"token:\s+in (\S+)"#)
        #expect(try process.waitFor(#"remote set \S+ --ca \S+ (--token-file \S+)"#) == "--token-file \(tokenFile)")
        let token = try String(contentsOfFile: tokenFile, encoding: .utf8).trimmingCharacters(
            in: .whitespacesAndNewlines)
        let port = try #require(UInt16(url.split(separator: ":").last ?? ""))
        let device = try device(port, caFile: caFile, token: token, id: "laptop")
        #expect(try device.pull().status == 200)
        let firstCode = try JoinCode(parsing: try process.waitFor(#"echo '(brsync://[^']+)' \| \S*/brsync join"#))
        #expect(try process.waitFor(#"join another machine in one step \(as device '([^']+)'"#) == "machine-2")
        // The administration commands, pointed at the dev store, as printed.
        let store = try process.waitFor(#"brsyncd device list dev --db (\S+)"#)
        let listed = try ProcessRunner.run(binary, ["device", "list", "dev", "--db", store])
        #expect(
            listed.status == 0 && listed.stdout.contains("laptop\tactive")
                && listed.stdout.contains("machine-2\twaiting to join"), "\(listed)")
        #expect(process.stop(signal: SIGINT) == 0)

        // Restarted: the paired machine keeps its token; the unused code's device is offered again.
        func restart() throws -> (BackgroundProcess, UInt16, String, String) {
            let again = try BackgroundProcess(
                binary, ["dev", "--dir", directory.file("dev"), "--listen", "127.0.0.1:0"])
            let url = try again.waitFor(#"serving (https://127\.0\.0\.1:\d+)"#)
            let token = try String(contentsOfFile: try again.waitFor(#"token:\s+in (\S+)"#), encoding: .utf8)
                .trimmingCharacters(in: .whitespacesAndNewlines)
            let joining = try again.waitFor(#"join another machine in one step \(as device '([^']+)'"#)
            return (again, try #require(UInt16(url.split(separator: ":").last ?? "")), token, joining)
        }
        let (second, secondPort, sameToken, stillJoining) = try restart()
        #expect(sameToken == token && stillJoining == "machine-2")
        #expect(
            try self.device(secondPort, caFile: caFile, token: token, id: "laptop").pull().status == 200,
            "a paired machine keeps working")
        // The first run's code still works: each start prints the same one until it is used or expires.
        let code = try JoinCode(parsing: try second.waitFor(#"echo '(brsync://[^']+)' \| \S*/brsync join"#))
        #expect(code.token == firstCode.token)
        let joined = Tokens.make()
        let joiner = try self.device(secondPort, caFile: caFile, token: code.token, id: "m2")
        let answer = try joiner.client.send(
            method: "POST", target: "/v1/join", headers: ["Authorization": "Bearer \(code.token)"],
            body: JoinRequest(token: joined).body)
        #expect(answer.status == 200, "\(answer.text)")
        #expect(second.stop(signal: SIGINT) == 0)
        // The next start's code is for another machine: the joined one keeps its token.
        let (third, thirdPort, _, nextJoining) = try restart()
        defer { third.stop() }
        #expect(nextJoining == "machine-3")
        #expect(
            try self.device(thirdPort, caFile: caFile, token: joined, id: "m2").pull().status == 200,
            "a joined machine keeps working")
    }
}

/// Keys acknowledged by several threads.
final class LockedKeys: @unchecked Sendable {
    private let lock = NSLock()
    private var keys: Set<String> = []
    func add(_ new: [String]) { lock.lock(); keys.formUnion(new); lock.unlock() }
    var count: Int { lock.lock(); defer { lock.unlock() }; return keys.count }
    var all: Set<String> { lock.lock(); defer { lock.unlock() }; return keys }
}

@Suite struct DeployTests {
    /// systemd-analyze, or nil (recorded as an issue) when it is missing.
    static func systemdAnalyze() -> String? {
        let analyze = "/usr/bin/systemd-analyze"
        guard FileManager.default.isExecutableFile(atPath: analyze) else {
            Issue.record("systemd-analyze is missing (scripts/setup installs systemd)")
            return nil
        }
        return analyze
    }

    /// The systemd unit passes `systemd-analyze verify` (with ExecStart pointing
    /// at the built binary, as an install would).
    @Test func systemdUnitVerifies() throws {
        guard let analyze = Self.systemdAnalyze() else { return }
        let unit = try String(contentsOfFile: Repository.file("Deploy/brsyncd.service"), encoding: .utf8)
        #expect(unit.contains("ExecStart=/usr/local/bin/brsyncd serve"))
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let file = directory.file("brsyncd.service")
        try unit.replacingOccurrences(of: "/usr/local/bin/brsyncd", with: ProcessRunner.binary("brsyncd"))
            .write(toFile: file, atomically: true, encoding: .utf8)
        let result = try ProcessRunner.run(analyze, ["verify", file])
        #expect(result.status == 0, "\(result)")
        #expect(!result.stderr.contains("brsyncd.service"), "\(result.stderr)")
        for setting in [
            "DynamicUser=yes", "StateDirectory=brsyncd", "ProtectSystem=strict", "NoNewPrivileges=yes",
            "CapabilityBoundingSet=CAP_NET_BIND_SERVICE", "RestrictAddressFamilies=AF_INET AF_INET6 AF_UNIX",
        ] {
            #expect(unit.contains(setting), "\(setting)")
        }
    }
}

extension DeployTests {
    /// The user units that sync every few minutes pass `systemd-analyze --user verify`.
    @Test func syncUserUnitsVerify() throws {
        guard let analyze = Self.systemdAnalyze() else { return }
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let service = try String(contentsOfFile: Repository.file("Deploy/brsync-sync.service"), encoding: .utf8)
        #expect(
            service.contains("ExecStart=%h/.local/bin/brsync sync --quiet") && service.contains("SuccessExitStatus=4"))
        try service.replacingOccurrences(of: "%h/.local/bin/brsync", with: ProcessRunner.binary("brsync"))
            .write(toFile: directory.file("brsync-sync.service"), atomically: true, encoding: .utf8)
        try FileManager.default.copyItem(
            atPath: Repository.file("Deploy/brsync-sync.timer"),
            toPath: directory.file("brsync-sync.timer"))
        let result = try ProcessRunner.run(
            analyze, ["--user", "verify", directory.file("brsync-sync.service"), directory.file("brsync-sync.timer")],
            environment: ["XDG_RUNTIME_DIR": directory.path])
        #expect(result.status == 0, "\(result)")
    }
}
