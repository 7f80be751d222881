import JSON
import Model
import Replica
import SyncClient
import SyncCore
import Synchronization
import TestSupport
import Testing

/// A change the server refused was never applied, and the machine that made
/// it keeps why, whether it heard on the first answer or on a retry after
/// that answer was lost; a refusal of a change the push did not send is the
/// server's invention (Deploy/SECURITY.md, "A device's own writes, counted").
@Suite struct RefusalTests {
    /// Chromium, a rule, a profile the server refuses in a readable account
    /// (a flag that runs a program), and another rule: four changes to push.
    static func editsWithOneRefused(_ machine: SimulatedMachine) throws {
        _ = try machine.replica.addBrowser(id: "chromium", name: nil, format: nil, scheme: nil, exec: "true %u")
        try KeyChangeTests.rule(machine, "before.example")
        _ = try machine.replica.addBrowser(
            id: "work", name: nil, format: nil, scheme: nil, exec: nil,
            profile: try BrowserProfile(base: "chromium", arguments: ["--renderer-cmd-prefix=touch /tmp/pwned"]))
        try KeyChangeTests.rule(machine, "after.example")
    }

    static func refused(_ machine: SimulatedMachine) throws -> [String: String] {
        var found: [String: String] = [:]
        for entry in try machine.replica.changeLog(limit: 100) where !entry.isPulled {
            if let reason = entry.refused { found["\(entry.collection)/\(entry.key)"] = reason }
        }
        return found
    }

    @Test(arguments: StoreKind.allCases) func aRefusalIsKeptWhenItsFirstAnswerIsLost(_ kind: StoreKind) throws {
        let world = try SyncWorld(kind)
        let a = try world.machine("a")
        try Self.editsWithOneRefused(a)
        // The first push answer never arrives whole (the server committed it).
        let lost = Atomic<Bool>(false)
        let liar = try LyingServer(in: world) { request, status, _ in
            guard request.path == "/v1/push", status == 200,
                lost.compareExchange(expected: false, desired: true, ordering: .relaxed).exchanged
            else { return nil }
            return .string("the connection dropped")
        }
        defer { liar.stop() }
        #expect(throws: (any Error).self) { try liar.serving(world) { try world.sync(a) } }
        #expect(try Self.refused(a).isEmpty, "nothing is known refused before an answer says so")
        // The retry's answer names the refusal again: the machine keeps it.
        let summary = try liar.serving(world) { try world.sync(a) }
        #expect(
            summary.problems.contains { $0.contains("the server did not take browsers 'work'") }, "\(summary.problems)")
        let refused = try Self.refused(a)
        #expect(Array(refused.keys) == ["browsers/work"], "\(refused)")
        #expect(refused["browsers/work"]?.contains("--renderer-cmd-prefix") == true, "\(refused)")
        #expect(try a.replica.unpushedCount() == 0)
    }

    /// A refusal must name a change of the batch under its own key, within
    /// what the answer acknowledges; anything else is not believed, and no
    /// change is marked refused for it.
    @Test func aRefusalOfAChangeThePushDidNotSendIsNotBelieved() throws {
        let world = try SyncWorld(.sqlite)
        let a = try world.machine("a")
        try KeyChangeTests.rule(a, "one.example")
        try KeyChangeTests.rule(a, "two.example")
        let once = Atomic<Bool>(false)
        let liar = try LyingServer(in: world) { request, status, body in
            guard request.path == "/v1/push", status == 200, case .object(var answer)? = body,
                once.compareExchange(expected: false, desired: true, ordering: .relaxed).exchanged
            else { return nil }
            answer["rejected"] = .array([
                RejectedChange(sequence: 2, collection: .rules, key: "other.example", reason: "made up").json,
                RejectedChange(sequence: 99, collection: .rules, key: "two.example", reason: "made up").json,
            ])
            return .object(answer)
        }
        defer { liar.stop() }
        let summary = try liar.serving(world) { try world.sync(a) }
        #expect(
            summary.problems.filter { $0.contains("did not send") && $0.contains("not believed") }.count == 2,
            "\(summary.problems)")
        #expect(!summary.problems.contains { $0.contains("did not take") }, "\(summary.problems)")
        #expect(try Self.refused(a).isEmpty)
    }

    /// A change refused, then pushed again after a rewind and taken, is no
    /// longer marked: the newest answer about a change is what the log keeps.
    @Test func aRefusalIsReplacedByALaterAnswer() throws {
        let world = try SyncWorld(.sqlite)
        let a = try world.machine("a")
        try Self.editsWithOneRefused(a)
        _ = try world.sync(a)
        #expect(Array(try Self.refused(a).keys) == ["browsers/work"])
        // The same numbers answered again with nothing refused (as after a
        // server restored from before the push, once it is taken).
        try a.replica.transaction { try a.replica.noteRefusals(first: 1, last: 100, [:]) }
        #expect(try Self.refused(a).isEmpty)
        try a.replica.transaction { try a.replica.noteRefusals(first: 1, last: 2, [3: "outside"]) }
        #expect(try Self.refused(a).isEmpty, "a refusal outside the answered range is not kept")
    }
}
