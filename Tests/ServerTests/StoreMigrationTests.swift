import Foundation
import JSON
import Model
import Postgres
import SyncCore
import TestSupport
import Testing

@testable import BrsyncServer
@testable import ServerStore

/// `brsyncd migrate --from sqlite:PATH --to postgres://…`, the real binary.
@Suite struct StoreMigrationTests {
    let binary = ProcessRunner.binary("brsyncd")

    @Test func aCopiedStoreServesClientsWhereTheyWere() throws {
        let cluster = try PostgresCluster.shared()
        let fixture = try ServerFixture(.sqlite)
        let laptop = try fixture.device("alice", "laptop")
        let desktop = try fixture.device("alice", "desktop")
        _ = try fixture.device("bob", "phone")
        for round in 0..<5 {
            #expect(
                try laptop.push(
                    (0..<4).map { laptop.change("l\(round)-\($0).example", ["browser": .string("firefox")]) }
                ).status == 200)
        }
        #expect(try desktop.push([desktop.change("l0-0.example", ["browser": .string("chrome")])]).status == 200)
        _ = try laptop.pullAll()
        // A join code not used yet, and one used already: both go along.
        let unused = try fixture.store.joinSecret("alice", "phone")
        let used = try fixture.store.joinSecret("bob", "tablet")
        let tabletToken = Tokens.make()
        try fixture.store.join(secret: used, token: tabletToken)
        let sqlite = fixture.store
        let sqlitePath = try #require(fixture.store.sqlite).path
        let url = try cluster.createDatabase()
        let environment = ["BRSYNCD_STORE_PASSWORD_FILE": cluster.passwordFile]

        let migrated = try ProcessRunner.run(
            binary, ["migrate", "--from", "sqlite:" + sqlitePath, "--to", url], environment: environment)
        #expect(migrated.status == 0, "\(migrated)")
        #expect(
            migrated.stdout.contains(
                "copied 2 account(s), 5 device(s), 2 replica stream(s), 20 record(s), 2 join code(s)"),
            "\(migrated.stdout)")

        let postgres = try SyncStore(postgres: try PostgresConfiguration(url: url, password: cluster.password))
        defer { postgres.close() }
        #expect(try postgres.accounts() == sqlite.accounts())
        #expect(postgres.epoch == sqlite.epoch)
        // Tokens still work, and a pull reads the same page, cursor and epoch.
        #expect(try postgres.authenticate(token: laptop.token).name == "laptop")
        #expect(try postgres.authenticate(token: tabletToken).name == "tablet")
        #expect(throws: ServerError.self) { try postgres.join(secret: used, token: Tokens.make()) }
        let phoneToken = Tokens.make()
        #expect(try postgres.join(secret: unused, token: phoneToken).name == "phone")
        #expect(try postgres.authenticate(token: phoneToken).name == "phone")
        for since in [Int64(0), 7, 21] {
            let before = try Wire.read(
                String(decoding: try sqlite.pullText(token: desktop.token, since: since, limit: 100), as: UTF8.self),
                PullResponse.init(reading:))
            let after = try Wire.read(
                String(
                    decoding: try postgres.pullText(
                        token: desktop.token, since: since, limit: 100, clientDevice: nil, origin: CursorOrigin(),
                        reconciling: false, clientProtocol: 2, clientKeyID: nil, clientSigningKey: nil,
                        maxBytes: 1 << 20), as: UTF8.self),
                PullResponse.init(reading:))
            #expect(before.changes == after.changes && before.next == after.next && before.epoch == after.epoch)
        }
        // The laptop goes on from its next change number: no gap, no divergence.
        let next = [laptop.change("after-the-move.example", ["browser": .string("firefox")])]
        let request = PushRequest(
            device: laptop.deviceID, from: next[0].sequence, to: next[0].sequence, changes: next,
            base: laptop.chains[next[0].sequence - 1])
        let response = try postgres.push(
            request, from: try postgres.authenticate(token: laptop.token), maxClockOffsetMilliseconds: 300_000)
        #expect(response.acknowledged == next[0].sequence && response.applied == 1)
        // New devices get new ids.
        #expect(throws: Never.self) { _ = try postgres.addDevice(account: "alice", name: "tablet") }

        // A second copy into a store that holds accounts is refused, and changes nothing.
        let again = try ProcessRunner.run(
            binary, ["migrate", "--from", "sqlite:" + sqlitePath, "--to", url], environment: environment)
        #expect(again.status == 2 && again.stderr.contains("holds 2 account(s) already"), "\(again)")
        #expect(try postgres.counts().records == 21)
    }

    @Test func badArgumentsAreRefused() throws {
        let cases: [([String], String)] = [
            (["migrate", "--from", "/tmp/x.sqlite", "--to", "postgres://u@h/d"], "sqlite:PATH"),
            (["migrate", "--from", "sqlite:/nonexistent/store.sqlite", "--to", "postgres://u@h/d"], "does not exist"),
            (["migrate", "--from", "sqlite:/etc/hostname", "--to", "mysql://u@h/d"], "postgres://"),
        ]
        for (arguments, reason) in cases {
            let result = try ProcessRunner.run(binary, arguments)
            #expect(result.status == 2 && result.stderr.contains(reason), "\(arguments): \(result)")
        }
    }
}
