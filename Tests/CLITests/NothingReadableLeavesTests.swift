import Foundation
import Glibc
import SyncClient
import TestSupport
import Testing

/// Nothing readable leaves a machine once its account is encrypted, and
/// nothing sealed with a key the account left: seen from a TLS proxy that
/// holds the server's certificate and keeps every byte a machine sends it.
/// Each test also shows the proxy does see what it looks for when a machine
/// may send it, so a quiet proxy is not a blind one.
@Suite(.serialized) struct NothingReadableLeavesTests {
    static func marker(_ prefix: String) -> String { "\(prefix)\(UInt32.random(in: 100_000...999_999))" }

    /// A proxy in front of the world's server, presenting its certificate (with the CA, as `brsync join` reads it).
    static func proxy(_ world: CLIWorld) throws -> CapturingProxy {
        try CapturingProxy(
            upstreamPort: world.port, caFile: world.directory.file("ca.pem"),
            certificateFile: world.directory.file("server-chain.pem"), keyFile: world.directory.file("server.key"))
    }

    /// The records (pushes and relays) that left sealed with `key`.
    static func sealed(with key: String, _ proxy: CapturingProxy) -> [String] {
        proxy.requests.filter {
            ($0.head.hasPrefix("POST /v1/push") || $0.head.hasPrefix("POST /v1/relay"))
                && $0.bodyText.contains(#""key":"\#(key)""#)
        }
        .map(\.bodyText)
    }

    /// A replica named `name` whose server is the proxy.
    static func replica(_ world: CLIWorld, _ name: String, through proxy: CapturingProxy) throws -> String {
        let home = world.directory.file(name)
        try world.mustRun(home, ["init", "--device-name", name])
        try world.mustRun(
            home,
            [
                "remote", "set", "https://127.0.0.1:\(proxy.port)", "--token", try world.token(name),
                "--ca", world.directory.file("ca.pem"),
            ])
        return home
    }

    /// After another machine's `key init`, a machine without the key sends
    /// none of its edits readable: not by the sync timer's command, not by
    /// `push`, not by `watch`; not on the first sync after the switch (the
    /// server refuses on the request's head, and the body never leaves), nor
    /// later when the server says the account is readable again. Only the
    /// user's `key forget` lets them go.
    @Test(arguments: StoreKind.allCases) func aMachineWithoutTheKeySendsNothingReadable(_ store: StoreKind) throws {
        let world = try CLIWorld(store)
        let proxy = try Self.proxy(world)
        defer { proxy.stop() }
        let laptop = try world.replica("laptop")
        let desktop = try Self.replica(world, "desktop", through: proxy)
        let (before, after) = (Self.marker("qzb"), Self.marker("qza"))
        for home in [laptop, desktop] { try world.mustRun(home, ["browsers", "add", "firefox", "--exec", "true %u"]) }
        // Readable until the switch: the proxy sees the desktop's rule.
        try world.mustRun(desktop, ["rules", "add", "\(before).example", "firefox"])
        try world.mustRun(desktop, ["sync"])
        #expect(proxy.saw("\(before).example"), "the proxy sees readable rules")
        try world.mustRun(laptop, ["sync"])
        let initialised = try world.run(laptop, ["key", "init"])
        #expect(initialised.status == 0, "\(initialised)")
        proxy.clear()

        // The sync timer's command, on the first sync after the switch.
        try world.mustRun(desktop, ["rules", "add", "\(after)-timer.example", "firefox"])
        let timer = try world.run(desktop, ["sync", "--quiet", "--notify", "--unless-watching"])
        #expect(timer.status == 5 && timer.stderr.contains("brsync key add"), "\(timer)")
        let status = try world.run(desktop, ["status"]).stdout
        #expect(
            status.contains("end-to-end encrypted and has no key: it sends nothing until 'brsync key add'"), "\(status)"
        )
        // `push`.
        try world.mustRun(desktop, ["rules", "add", "\(after)-push.example", "firefox"])
        let push = try world.run(desktop, ["push"])
        #expect(push.status == 5 && push.stderr.contains("nothing is sent readable"), "\(push)")
        // `watch`: it syncs at once, and again at an edit.
        let watch = try BackgroundProcess(
            world.brsync, ["watch", "--server-wait", "5"], environment: ["BRSYNC_HOME": desktop])
        defer { watch.stop() }
        _ = try watch.waitFor("brsync key add")
        try world.mustRun(desktop, ["rules", "add", "\(after)-watch.example", "firefox"])
        var tried = false
        for _ in 0..<100 where !tried {
            usleep(50_000)
            // The same refusal again: said in a short line, not whole.
            tried = watch.text.contains("sync stopped again, for the reason logged")
        }
        #expect(tried, "the watch tried again at the edit: \(watch.text)")
        watch.stop()
        #expect(!proxy.saw(after), "an edit left readable")
        #expect(try world.run(desktop, ["status", "--json"]).stdout.contains(#""unpushed":3"#))

        // The operator resets the account's encryption: the server says it is
        // readable, and the desktop still sends nothing (its mark is sticky).
        let reset = try ProcessRunner.run(
            world.brsyncd, ["account", "reset-encryption", "alice"] + world.storeArguments,
            environment: world.storeEnvironment)
        #expect(reset.status == 0, "\(reset)")
        let sticky = try world.run(desktop, ["sync"])
        #expect(sticky.status == 5 && sticky.stderr.contains("brsync key forget"), "\(sticky)")
        #expect(!proxy.saw(after), "an edit left readable on the server's word")
        // Encrypting it again from here waits for the mark to be cleared: refused, nothing made.
        let again = try world.run(desktop, ["key", "init", "--yes"])
        #expect(again.status == 5 && again.stderr.contains("'brsync key forget' first"), "\(again)")
        #expect(!FileManager.default.fileExists(atPath: desktop + "/account-key.next"))

        // Only the user clears the mark, and then the edits go, readable.
        let forgot = try world.run(desktop, ["key", "forget"])
        #expect(forgot.status == 0 && forgot.stderr.contains("syncs readable from now on"), "\(forgot)")
        #expect(
            proxy.saw("\(after)-timer.example") && proxy.saw("\(after)-watch.example"),
            "the proxy sees readable edits once allowed")
        #expect(try world.run(desktop, ["status", "--json"]).stdout.contains(#""unpushed":0"#))
    }

    /// After a rotation, a machine still on the old key seals nothing with
    /// it: its first sync is refused on the head, and it remembers, so a
    /// server restored from before the rotation (which would take that
    /// key) gets nothing sealed with it either.
    @Test func aMachineOnTheOldKeySealsNothingWithItAfterARotation() throws {
        let world = try CLIWorld(.sqlite)
        let proxy = try Self.proxy(world)
        defer { proxy.stop() }
        let laptop = try world.replica("laptop")
        let desktop = try Self.replica(world, "desktop", through: proxy)
        for home in [laptop, desktop] { try world.mustRun(home, ["browsers", "add", "firefox", "--exec", "true %u"]) }
        let code = try world.encryptAccount(on: laptop, sharingWith: [desktop])
        let oldKey = try AccountKey(recoveryCode: code).id
        try world.mustRun(desktop, ["rules", "add", "first.example", "firefox"])
        try world.mustRun(desktop, ["sync"])
        // Sealed with the current key, the proxy sees records under it (and no rule text).
        #expect(
            !Self.sealed(with: oldKey, proxy).isEmpty && !proxy.saw("first.example"),
            "the proxy sees what the old key sealed")
        let backup = world.directory.file("before-rotation.sqlite")
        #expect(try ProcessRunner.run(world.brsyncd, ["backup", backup, "--db", world.db]).status == 0)

        let rotated = try world.run(laptop, ["key", "rotate"])
        #expect(rotated.status == 0, "\(rotated)")
        proxy.clear()
        try world.mustRun(desktop, ["rules", "add", "second.example", "firefox"])
        let refused = try world.run(desktop, ["sync"])
        #expect(refused.status == 5 && refused.stderr.contains("brsync key add"), "\(refused)")
        #expect(Self.sealed(with: oldKey, proxy).isEmpty, "a record sealed with the retired key left")

        // The server is restored from before the rotation: it takes the old key again. The desktop does not.
        let port = world.port
        world.stop()
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: world.db + suffix) }
        try FileManager.default.copyItem(atPath: backup, toPath: world.db)
        try world.start(port: port)
        try world.mustRun(desktop, ["rules", "add", "third.example", "firefox"])
        let restored = try world.run(desktop, ["sync"])
        #expect(restored.status == 5 && restored.stderr.contains("rotated away from"), "\(restored)")
        #expect(
            Self.sealed(with: oldKey, proxy).isEmpty, "a record sealed with the retired key left for a restored server")
        // Its old code is not taken again here either.
        let again = try ProcessRunner.run(
            world.brsync, ["key", "add"], environment: ["BRSYNC_HOME": desktop], stdin: code + "\n")
        #expect(again.status != 0, "\(again)")
        // Its edits are kept, waiting for the new code.
        let status = try world.run(desktop, ["status", "--json"]).stdout
        #expect(!status.contains(#""unpushed":0"#), "\(status)")
        let rules = try world.run(desktop, ["rules", "list"]).stdout
        #expect(rules.contains("second.example") && rules.contains("third.example"), "\(rules)")
    }

    /// A join believes whoever says the account is encrypted (the join code,
    /// or the user with a recovery code on standard input) over a server that
    /// says it is not: nothing is saved, and nothing goes up readable.
    @Test func aJoinThatWasToldTheAccountIsEncryptedRefusesAServerThatSaysOtherwise() throws {
        let world = try CLIWorld(.sqlite)
        let proxy = try Self.proxy(world)
        defer { proxy.stop() }
        let laptop = try world.replica("laptop")
        let recovery = try #require(EncryptionTests.recoveryCode(try world.run(laptop, ["key", "init"]).stdout))
        let made = try ProcessRunner.run(
            world.brsyncd,
            [
                "device", "add", "alice", "phone", "--url", "https://127.0.0.1:\(proxy.port)",
                "--ca", world.directory.file("ca.pem"),
            ] + world.storeArguments,
            environment: world.storeEnvironment)
        let code = try #require(made.stdout.split(separator: "\n").last.map(String.init), "\(made)")
        #expect(code.contains("&e2e=1&"), "the code says the account is encrypted: \(code)")
        // The server now says "not encrypted" (its operator reset it; a lying server says the same).
        #expect(
            try ProcessRunner.run(
                world.brsyncd, ["account", "reset-encryption", "alice"] + world.storeArguments,
                environment: world.storeEnvironment
            ).status == 0)
        let phone = world.directory.file("phone")
        let secret = Self.marker("qzj")
        try world.mustRun(phone, ["init", "--device-name", "phone"])
        try world.firefoxRule(phone, "\(secret).example")

        // The code alone, on standard input.
        let byCode = try ProcessRunner.run(
            world.brsync, ["join"], environment: ["BRSYNC_HOME": phone], stdin: code + "\n")
        #expect(
            byCode.status == 5 && byCode.stderr.contains("the join code says the account was end-to-end encrypted"),
            "\(byCode)")
        // An older code that says nothing, with the recovery code on the next line.
        let older = code.replacingOccurrences(of: "&e2e=1", with: "")
        let byRecovery = try ProcessRunner.run(
            world.brsync, ["join"], environment: ["BRSYNC_HOME": phone], stdin: older + "\n" + recovery + "\n")
        #expect(byRecovery.status == 5 && byRecovery.stderr.contains("a recovery code was given"), "\(byRecovery)")
        // The older code as an argument, the recovery code on standard input.
        let byArgument = try ProcessRunner.run(
            world.brsync, ["join", older], environment: ["BRSYNC_HOME": phone], stdin: recovery + "\n")
        #expect(byArgument.status == 5 && byArgument.stderr.contains("a recovery code was given"), "\(byArgument)")
        for file in ["token", "ca.pem", "account-key"] {
            #expect(!FileManager.default.fileExists(atPath: "\(phone)/\(file)"), "\(file) was saved")
        }
        #expect(!proxy.saw(secret), "a rule left readable")

        // The same older code without a recovery code claims nothing: the phone joins, readable, and the proxy sees it.
        let joined = try ProcessRunner.run(
            world.brsync, ["join"], environment: ["BRSYNC_HOME": phone], stdin: older + "\n")
        #expect(joined.status == 0, "\(joined)")
        #expect(proxy.saw(secret), "the proxy sees readable rules once nobody said the account is encrypted")
    }
}
