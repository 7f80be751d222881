import HTTP
import JSON
import Replica
import SyncClient
import SyncCore
import Synchronization
import TestSupport
import Testing

/// What `brsync status` says went wrong is the last word of the part it
/// came from: a push or pull that stops keeps its problem, the next push or
/// pull that finishes without one ends what its own part kept (not the
/// other's), and a sync ends any.
@Suite struct ProblemKeptTests {
    /// A server that refuses `path` while `refusing` is set, as a full store does.
    final class Refusing: Sendable {
        final class Switch: Sendable { let on = Atomic<Bool>(true) }
        let refusing = Switch()
        let liar: LyingServer

        init(_ path: String, in world: SyncWorld) throws {
            let refusing = refusing
            liar = try LyingServer(
                in: world,
                answering: { request in
                    guard request.path == path, refusing.on.load(ordering: .relaxed) else { return nil }
                    let refusal = WireError(code: .quotaExceeded, message: "the account holds 100 records at most")
                    return HTTPResponse.json(507, refusal.json.jsonText)
                }, rewrite: { _, _, _ in nil })
        }
    }

    static func kept(_ machine: SimulatedMachine) throws -> (problem: String, part: SyncPart) {
        let state = try machine.replica.syncState()
        return (state.problem, state.problemIn)
    }

    /// A world with machine `a`, synced once and holding an edit since, and
    /// a server in front of it that refuses pushes.
    static func editWaitingBehindARefusingServer() throws -> (SyncWorld, SimulatedMachine, Refusing) {
        let world = try SyncWorld()
        let a = try world.machine("a")
        try world.sync(a)
        try a.replica.write(.settings, key: "one", changes: ["value": .int(1)])
        return (world, a, try Refusing("/v1/push", in: world))
    }

    @Test func aPushOrPullEndsOnlyTheProblemOfItsOwnPart() throws {
        let (world, a, pushes) = try Self.editWaitingBehindARefusingServer()
        defer { pushes.liar.stop() }
        try pushes.liar.serving(world) {
            #expect(throws: SyncError.self) { try world.client(a).push() }
            var kept = try Self.kept(a)
            #expect(kept.part == .push && kept.problem.contains("quota_exceeded"), "\(kept)")
            // A pull that finishes says nothing about the push's problem.
            try world.client(a).pull()
            kept = try Self.kept(a)
            #expect(kept.part == .push && kept.problem.contains("quota_exceeded"), "\(kept)")
            // A push that finishes ends it.
            pushes.refusing.on.store(false, ordering: .relaxed)
            try world.client(a).push()
            #expect(try Self.kept(a).problem.isEmpty)
        }
        let pulls = try Refusing("/v1/pull", in: world)
        defer { pulls.liar.stop() }
        try pulls.liar.serving(world) {
            #expect(throws: SyncError.self) { try world.client(a).pull() }
            #expect(try Self.kept(a).part == .pull)
            // A push that finishes leaves the pull's problem; a sync that finishes ends it.
            try a.replica.write(.settings, key: "two", changes: ["value": .int(2)])
            try world.client(a).push()
            #expect(try Self.kept(a).part == .pull && !Self.kept(a).problem.isEmpty)
            pulls.refusing.on.store(false, ordering: .relaxed)
            try world.sync(a)
            #expect(try Self.kept(a).problem.isEmpty)
        }
    }

    /// A push refused, then a pull that cannot get through: both are kept,
    /// the pull's newest; the pull that then finishes leaves the push's
    /// refusal, which still holds, shown.
    @Test func aPullThatFinishesLeavesAPushRefusalShown() throws {
        let (world, a, pushes) = try Self.editWaitingBehindARefusingServer()
        defer { pushes.liar.stop() }
        let pulls = try Refusing("/v1/pull", in: world)
        defer { pulls.liar.stop() }
        pushes.liar.serving(world) {
            #expect(throws: SyncError.self) { try world.client(a).push() }
        }
        pulls.liar.serving(world) {
            #expect(throws: SyncError.self) { try world.client(a).pull() }
        }
        var state = try a.replica.syncState()
        #expect(state.problems.map(\.part) == [.pull, .push] && state.problemIn == .pull, "\(state.problems)")
        try world.client(a).pull()
        state = try a.replica.syncState()
        #expect(state.problems.map(\.part) == [.push] && state.problem.contains("quota_exceeded"), "\(state.problems)")
    }

    /// A sync whose push is refused pulls, then stops with the refusal: the
    /// push's problem, which the next push that finishes ends.
    @Test func aSyncRefusedInItsPushKeepsThePushsProblem() throws {
        let (world, a, pushes) = try Self.editWaitingBehindARefusingServer()
        defer { pushes.liar.stop() }
        try pushes.liar.serving(world) {
            #expect(throws: SyncError.self) { try world.sync(a) }
            #expect(try Self.kept(a).part == .push)
            pushes.refusing.on.store(false, ordering: .relaxed)
            try world.client(a).push()
            #expect(try Self.kept(a).problem.isEmpty)
        }
    }
}
