import Foundation
import JSON
import Replica
import SyncClient
import SyncCore
import TestSupport
import Testing

/// The guard against a server whose answers never let a push finish
/// follows from the work: answers that move the acknowledgement on are
/// never held against the server, however many batches or whole records a
/// push needs; only answers that do not (stalls) are counted.
@Suite(.serialized) struct PushStallTests {
    /// A copied home with many edits of its own, in an encrypted account,
    /// killed after it took its new device id: its next push sends changes
    /// the server must have whole (renumbered under the new id), dozens of
    /// them, more than the stalls allowed. An honest server is never accused.
    @Test func aCopiedHomesEditsGoUpHoweverManyRecordsTheServerAsksForWhole() throws {
        let world = try SyncWorld(.sqlite)
        let a = try world.machine("a")
        try KeyChangeTests.rule(a, "base.example")
        let (key, _) = try KeyChangeTests.changeKey(world, a)
        try world.sync(a)
        let copyHome = world.directory.file("b")
        try FileManager.default.copyItem(atPath: a.replica.home, toPath: copyHome)
        let b = try SimulatedMachine(name: "a", home: copyHome, token: a.token, skewMilliseconds: 0)
        let count = 3 * SyncClient.maxPushStalls
        for index in 0..<count {
            try a.replica.addRule(pattern: "a\(index).example", browser: "firefox", priority: nil)
            try b.replica.addRule(pattern: "b\(index).example", browser: "firefox", priority: nil)
        }
        try world.sync(a)
        // Killed right after it took its new id (the first step of a sync): nothing pushed.
        #expect(try b.replica.takeNewDeviceIDIfCopied() != nil)
        let summary = try world.sync(b)
        #expect(summary.pushed >= count, "\(summary)")
        try world.sync(a)
        let rules = try SyncWorld.rules(a.replica).keys
        #expect(rules.count == 2 * count + 1 && rules.contains("b0.example"))
        #expect(try KeyChangeTests.freshRules(world, key: key).count == 2 * count + 1)
    }

    /// A server that answers every batch by taking nothing (acknowledging
    /// the change before it, again and again) stops the push after the
    /// allowed stalls, with every edit kept.
    @Test func aServerThatNeverTakesABatchStopsThePush() throws {
        let world = try SyncWorld(.sqlite)
        let a = try world.machine("a")
        try KeyChangeTests.rule(a, "first.example")
        try world.sync(a)
        for index in 0..<12 { try KeyChangeTests.rule(a, "r\(index).example") }
        let liar = try LyingServer(in: world) { request, status, body in
            guard request.target.hasPrefix("/v1/push"), status == 200, case .object(var answer)? = body,
                case .object(let pushed)? = try? JSONValue.parse(String(decoding: request.body, as: UTF8.self)),
                let from = pushed["from"]?.intValue
            else { return nil }
            answer["acknowledged"] = .int(from - 1)
            answer["digest"] = pushed["base"] ?? .string("")
            answer["applied"] = .int(0)
            return .object(answer)
        }
        defer { liar.stop() }
        let unpushed = try a.replica.unpushedCount()
        #expect { _ = try liar.serving(world) { try world.sync(a) } } throws: { error in
            "\(error)".contains("never let this push finish")
        }
        #expect(liar.rewritten.value.load(ordering: .relaxed) == SyncClient.maxPushStalls + 1)
        #expect(try a.replica.unpushedCount() == unpushed, "every edit kept")
        try world.sync(a)
        #expect(try a.replica.unpushedCount() == 0)
    }
}
