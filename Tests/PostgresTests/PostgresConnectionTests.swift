import Foundation
import Glibc
import Postgres
import Synchronization
import TestSupport
import Testing

/// The libpq layer against a real PostgreSQL cluster started by the tests
/// (TestSupport.PostgresCluster: initdb in a temporary folder, 127.0.0.1, a
/// free port, SCRAM passwords).
@Suite struct PostgresConnectionTests {
    let cluster: PostgresCluster
    let configuration: PostgresConfiguration

    init() throws {
        cluster = try PostgresCluster.shared()
        configuration = try PostgresConfiguration(url: try cluster.createDatabase(), password: cluster.password)
    }

    @Test func valuesRoundTripWithTheirTypes() throws {
        let connection = try PostgresConnection(configuration)
        try connection.execute("CREATE TABLE t (id bigint PRIMARY KEY, name text, data bytea, flag boolean)")
        let allBytes = (0...255).map(UInt8.init)
        let rows: [(Int64, String?, [UInt8]?, Bool?)] = [
            (Int64.min, "", [], false),
            (Int64.max, "Zürich 🌍 \u{202E}é", allBytes, true),
            (0, nil, nil, nil),
            (-1, "it's \"quoted\"; DROP TABLE t; --", [0, 0, 0], true),
        ]
        for (id, name, data, flag) in rows {
            try connection.run(
                "INSERT INTO t (id, name, data, flag) VALUES ($1, $2, $3, $4)",
                [
                    .integer(id), name.map { .text($0) } ?? .null, data.map { .bytes($0) } ?? .null,
                    flag.map { .bool($0) } ?? .null,
                ])
        }
        let read = try connection.query("SELECT id, name, data, flag FROM t ORDER BY id") { row in
            (row.int64(0), row.string(1), row.bytes(2), row.bool(3), row.isNull(1))
        }
        #expect(read.count == 4)
        for (stored, expected) in zip(read, rows.sorted { $0.0 < $1.0 }) {
            #expect(stored.0 == expected.0)
            #expect(stored.1 == expected.1)
            #expect(stored.2 == expected.2)
            #expect(stored.3 == expected.3)
            #expect(stored.4 == (expected.1 == nil))
        }
        #expect(try connection.run("UPDATE t SET flag = NOT flag WHERE id < $1", [.integer(0)]) == 2)
    }

    /// Columns sent as arrays (a batched write) come back element by element
    /// exactly as sent, whatever they hold; a seeded random part too.
    @Test func arraysRoundTrip() throws {
        let connection = try PostgresConnection(configuration)
        var texts: [String?] = [
            "", "plain", "\"", "\\", "\\\"", "{a,b}", "NULL", "null", " lead and trail ", "a,b", "}{", "'",
            "Zürich 🌍 \u{202E}é", "\t\n\r", String(repeating: "\\\"{}", count: 300), nil, "[\"x\",{\"v\":\"\\u0000\"}]",
        ]
        let seed = ProcessInfo.processInfo.environment["BRSYNC_TEST_SEED"].flatMap(UInt64.init) ?? 20_261_124
        print("PostgresConnectionTests.arrayLiteralsRoundTrip seed: \(seed)")
        var random = SeededRandom(seed: seed)
        let alphabet: [Unicode.Scalar] = ["\"", "\\", "{", "}", ",", " ", "a", "N", "\u{7F}", "\u{1}", "é", "🌍", "\n"]
        for _ in 0..<200 {
            var text = ""
            for _ in 0..<Int.random(in: 0...12, using: &random) {
                text.unicodeScalars.append(alphabet.randomElement(using: &random)!)
            }
            texts.append(text)
        }
        let back = try connection.query("SELECT unnest($1::text[])", [PostgresArray.texts(texts)]) {
            $0.string(0)
        }
        #expect(back == texts)
        let integers: [Int64] = [Int64.min, -1, 0, 1, Int64.max]
        #expect(
            try connection.query("SELECT unnest($1::bigint[])", [PostgresArray.integers(integers)]) {
                $0.int64(0)
            } == integers.map(Optional.init))
        #expect(
            try connection.query("SELECT unnest($1::boolean[])", [PostgresArray.booleans([true, false])]) {
                $0.bool(0)
            } == [true, false])
        let bytes: [[UInt8]] = [[], [0], [0, 255, 34, 92], Array("Zürich".utf8)]
        #expect(
            try connection.query("SELECT unnest($1::bytea[])", [PostgresArray.byteStrings(bytes)]) {
                $0.bytes(0)
            } == bytes.map(Optional.init))
        // Empty, and only NULL: the binary form's two edge cases.
        let empties = [
            ("text", PostgresArray.texts([String]())), ("bigint", PostgresArray.integers([])),
            ("boolean", PostgresArray.booleans([])), ("bytea", PostgresArray.byteStrings([])),
        ]
        for (type, empty) in empties {
            #expect(try connection.scalar("SELECT count(*) FROM unnest($1::\(type)[])", [empty]) == .text("0"))
        }
        #expect(
            try connection.query("SELECT unnest($1::text[]) IS NULL", [PostgresArray.texts([nil, nil] as [String?])]) {
                $0.bool(0)
            } == [true, true])
        #expect(throws: PostgresError.self) {
            try connection.query("SELECT unnest($1::text[])", [PostgresArray.texts(["a\u{0}b"])]) {
                $0.string(0)
            }
        }
    }

    @Test func textWithANulIsRefusedAndNothingIsWritten() throws {
        let connection = try PostgresConnection(configuration)
        try connection.execute("CREATE TABLE n (value text)")
        #expect {
            try connection.run("INSERT INTO n (value) VALUES ($1)", [.text("a\u{0}b")])
        } throws: { error in
            (error as? PostgresError)?.message.contains("NUL") == true
        }
        #expect(try connection.scalar("SELECT count(*) FROM n") == .text("0"))
    }

    @Test func errorsCarryTheirSQLState() throws {
        let connection = try PostgresConnection(configuration)
        try connection.execute("CREATE TABLE u (k text PRIMARY KEY)")
        try connection.run("INSERT INTO u VALUES ($1)", [.text("a")])
        let cases: [(String, [PostgresValue], String)] = [
            ("INSERT INTO u VALUES ($1)", [.text("a")], "23505"),
            ("SELEC 1", [], "42601"),
            ("SELECT 1 / $1::int", [.integer(0)], "22012"),
            ("SELECT * FROM missing_table", [], "42P01"),
        ]
        for (sql, parameters, state) in cases {
            #expect {
                try connection.run(sql, parameters)
            } throws: { error in
                guard let error = error as? PostgresError else { return false }
                return error.sqlState == state && error.description.contains("SQLSTATE \(state)")
                    && !error.isConnectionFailure
            }
        }
        // The connection is still good after each failure.
        #expect(try connection.scalar("SELECT count(*) FROM u") == .text("1"))
        #expect {
            try connection.run("INSERT INTO u VALUES ($1)", [.text("a")])
        } throws: { ($0 as? PostgresError)?.isUniqueViolation == true }
    }

    @Test func aThrowingTransactionLeavesNothing() throws {
        let connection = try PostgresConnection(configuration)
        try connection.execute("CREATE TABLE r (v bigint)")
        struct Stop: Error {}
        #expect(throws: Stop.self) {
            try connection.transaction {
                try connection.run("INSERT INTO r VALUES ($1)", [.integer(1)])
                throw Stop()
            }
        }
        #expect(!connection.isInTransaction)
        let committed = try connection.transaction(.serializable) {
            try connection.run("INSERT INTO r VALUES ($1)", [.integer(2)])
        }
        #expect(committed == 1)
        #expect(try connection.query("SELECT v FROM r") { $0.int64(0) } == [2])
    }

    @Test func aWrongPasswordOrPortSaysSoWithoutThePassword() throws {
        let wrong = try PostgresConfiguration(url: configuration.url, password: "not-the-password")
        #expect {
            _ = try PostgresConnection(wrong)
        } throws: { error in
            guard let error = error as? PostgresError else { return false }
            return error.isAuthenticationFailure && !error.description.contains("not-the-password")
        }
        let closedPort = try PostgresCluster.freePortForTests()
        let nowhere = try PostgresConfiguration(
            url: "postgres://brsync@127.0.0.1:\(closedPort)/postgres", password: cluster.password)
        #expect {
            _ = try PostgresConnection(nowhere, connectTimeoutSeconds: 5)
        } throws: { error in
            guard let error = error as? PostgresError else { return false }
            return error.isConnectionFailure && error.description.contains("127.0.0.1")
                && !error.description.contains(cluster.password)
        }
    }

    @Test func preparedStatementsAreMadeOncePerConnection() throws {
        let connection = try PostgresConnection(configuration)
        for value in 0..<50 {
            _ = try connection.query("SELECT $1::bigint + 1", [.integer(Int64(value))]) { $0.int64(0) }
        }
        _ = try connection.query("SELECT $1::text", [.text("x")]) { $0.string(0) }
        // The two queries, and this one.
        #expect(try connection.scalar("SELECT count(*) FROM pg_prepared_statements") == .text("3"))
    }
}

@Suite struct PostgresConfigurationTests {
    @Test func urlsThatCannotBeUsedAreRefusedWithAReason() {
        let cases: [(String, String)] = [
            ("postgres://user:secret@db.example/brsync", "password"),
            ("mysql://user@db.example/brsync", "not a PostgreSQL URL"),
            ("postgres://db.example:notaport/brsync?sslmode=require", "not valid"),
            ("postgres://db.example/brsync?nosuchoption=1", "not valid"),
            ("postgres://db.example/brsync?sslmode=verify", "sslmode 'verify'"),
            ("postgres://db.example:70000/brsync", "65535"),
        ]
        for (url, reason) in cases {
            #expect {
                _ = try PostgresConfiguration(url: url)
            } throws: { error in
                let text = String(describing: error)
                return text.contains(reason) && !text.contains("secret")
            }
        }
        #expect(throws: Never.self) {
            _ = try PostgresConfiguration(url: "postgresql://brsync@db.example:5433/brsync?sslmode=verify-full")
        }
    }

    @Test func thePasswordFileMustBeTheOwnersAlone() throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let path = folder.file("password")
        try Data("s3cret\nsecond line\n".utf8).write(to: URL(fileURLWithPath: path))
        chmod(path, 0o644)
        #expect {
            _ = try PostgresConfiguration(url: "postgres://u@h/d", passwordFile: path)
        } throws: { String(describing: $0).contains("chmod 600") }
        chmod(path, 0o600)
        #expect(throws: Never.self) {
            _ = try PostgresConfiguration(url: "postgres://u@h/d", passwordFile: path)
        }
        #expect {
            _ = try PostgresConfiguration(url: "postgres://u@h/d", passwordFile: folder.file("missing"))
        } throws: { String(describing: $0).contains("cannot read the password file") }
        try Data("\n".utf8).write(to: URL(fileURLWithPath: folder.file("empty")))
        chmod(folder.file("empty"), 0o600)
        #expect {
            _ = try PostgresConfiguration(url: "postgres://u@h/d", passwordFile: folder.file("empty"))
        } throws: { String(describing: $0).contains("no password") }
    }
}

@Suite struct PostgresPoolTests {
    @Test func manyThreadsShareAFewConnections() throws {
        let cluster = try PostgresCluster.shared()
        let configuration = try PostgresConfiguration(url: try cluster.createDatabase(), password: cluster.password)
        let pool = PostgresPool(configuration, size: 4, applicationName: "pooltest")
        defer { pool.close() }
        try pool.withConnection { try $0.execute("CREATE TABLE c (n bigint NOT NULL); INSERT INTO c VALUES (0)") }
        let threads = 16
        let rounds = 25
        let failures = Mutex<[String]>([])
        DispatchQueue.concurrentPerform(iterations: threads) { _ in
            for _ in 0..<rounds {
                do {
                    try pool.withConnection { connection in
                        try connection.transaction { try connection.run("UPDATE c SET n = n + 1") }
                    }
                } catch {
                    failures.withLock { $0.append("\(error)") }
                }
            }
        }
        #expect(failures.withLock { $0 } == [])
        #expect(pool.openConnections <= 4)
        #expect(try pool.withConnection { try $0.scalar("SELECT n FROM c") } == .text(String(threads * rounds)))
    }

    @Test func aConnectionTheServerDroppedIsReplaced() throws {
        let cluster = try PostgresCluster.shared()
        let configuration = try PostgresConfiguration(url: try cluster.createDatabase(), password: cluster.password)
        let name = "droptest-\(getpid())-\(Int.random(in: 0..<1_000_000))"
        let pool = PostgresPool(configuration, size: 2, applicationName: name)
        defer { pool.close() }
        #expect(try pool.withConnection { try $0.scalar("SELECT 1") } == .text("1"))
        // The server ends the idle connection (a restart, an administrator, a failover).
        try cluster.psql("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = '\(name)'")
        var answers: [String] = []
        for _ in 0..<3 {
            do {
                answers.append(try pool.withConnection { try $0.scalar("SELECT 2") } == .text("2") ? "ok" : "wrong")
            } catch let error as PostgresError {
                answers.append(error.isConnectionFailure ? "lost" : "other: \(error)")
            }
        }
        // At most the first use finds the connection gone; then a new one serves.
        #expect(answers == ["ok", "ok", "ok"] || answers == ["lost", "ok", "ok"], "\(answers)")
    }

    @Test func aBorrowerWaitsOnlyAsLongAsItWasTold() throws {
        let cluster = try PostgresCluster.shared()
        let configuration = try PostgresConfiguration(url: try cluster.createDatabase(), password: cluster.password)
        let pool = PostgresPool(configuration, size: 1, waitSeconds: 1)
        defer { pool.close() }
        let error = try pool.withConnection { _ -> PostgresError? in
            // The only connection is lent: another borrower gives up after 1 s.
            let result = DispatchQueue.global().sync {
                Result { try pool.withConnection { _ in () } }
            }
            if case .failure(let error as PostgresError) = result { return error }
            return nil
        }
        #expect(error?.message.contains("busy") == true)
    }
}
