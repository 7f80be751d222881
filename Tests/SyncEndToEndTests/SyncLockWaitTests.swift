import Foundation
import Glibc
import Replica
import SyncClient
import SyncCore
import Synchronization
import TestSupport
import Testing

/// A sync that finds another sync of its replica under way says whom it
/// waits for, goes on once that one ends, and gives up after its limit
/// (`replicaBusy`, naming the process) behind one that hangs, changing
/// nothing; a stop asked for ends the wait at once.
@Suite struct SyncLockWaitTests {
    /// Another sync's hold on `home`'s lock, as a process that wrote its pid.
    final class Holder: Sendable {
        let descriptor: Int32

        init(home: String, pid: Int32) throws {
            descriptor = open("\(home)/sync.lock", O_CREAT | O_RDWR | O_CLOEXEC, 0o600)
            guard descriptor >= 0, flock(descriptor, LOCK_EX | LOCK_NB) == 0 else {
                throw SyncError.usage("cannot take the lock for the test")
            }
            let text = Array("\(pid)\n".utf8)
            _ = ftruncate(descriptor, 0)
            _ = text.withUnsafeBytes { pwrite(descriptor, $0.baseAddress, $0.count, 0) }
        }

        func release() { close(descriptor) }
    }

    final class Told: Sendable {
        let lines = Mutex<[String]>([])
    }

    static func client(
        _ world: SyncWorld, _ machine: SimulatedMachine, waitMilliseconds: Int, told: Told,
        stop: (@Sendable () -> Bool)? = nil
    ) throws -> SyncClient {
        var options = SyncClient.Options()
        options.lockWaitMilliseconds = waitMilliseconds
        options.stopRequested = stop
        let remote = try RemoteURL(parsing: "https://127.0.0.1:\(world.port)")
        return try SyncClient(
            replica: machine.replica, remote: remote, token: machine.token, caFile: world.caFile, options: options,
            progress: { what, done, _ in told.lines.withLock { $0.append("\(what) \(done)") } })
    }

    @Test func aSyncBehindOneThatHangsGivesUpNamingIt() throws {
        let world = try SyncWorld()
        let a = try world.machine("a")
        try a.replica.write(.settings, key: "one", changes: ["value": .int(1)])
        let holder = try Holder(home: a.replica.home, pid: getpid())
        defer { holder.release() }
        let told = Told()
        let started = Date()
        do {
            _ = try Self.client(world, a, waitMilliseconds: 1_200, told: told).sync()
            Issue.record("the sync did not wait for the lock")
        } catch let error as SyncError {
            guard case .replicaBusy(let message) = error else {
                Issue.record("not replicaBusy: \(error)")
                return
            }
            #expect(
                message.contains("process \(getpid())") && message.contains("another sync of this replica"),
                "\(message)")
        }
        #expect(Date().timeIntervalSince(started) >= 1.1)
        // Told while it waited, naming the process.
        let lines = told.lines.withLock { $0 }
        #expect(
            lines.contains { $0.contains("waiting for another sync of this replica (process \(getpid()))") }, "\(lines)"
        )
        // Nothing was done, and no problem is kept for a sync that never started.
        #expect(try a.replica.unpushedCount() == 1)
        #expect(try a.replica.syncState().problem.isEmpty)
    }

    @Test func aSyncWaitsForOneThatEndsAndGoesOn() throws {
        let world = try SyncWorld()
        let a = try world.machine("a")
        try a.replica.write(.settings, key: "one", changes: ["value": .int(1)])
        let holder = try Holder(home: a.replica.home, pid: 4_242)
        Thread.detachNewThread {
            usleep(300_000)
            holder.release()
        }
        let summary = try Self.client(world, a, waitMilliseconds: 30_000, told: Told()).sync()
        let left = try a.replica.unpushedCount()
        #expect(summary.pushed == 1 && left == 0)
    }

    @Test func aStopEndsTheWait() throws {
        let world = try SyncWorld()
        let a = try world.machine("a")
        let holder = try Holder(home: a.replica.home, pid: 4_242)
        defer { holder.release() }
        #expect(throws: SyncError.cancelled) {
            try Self.client(world, a, waitMilliseconds: 60_000, told: Told(), stop: { true }).sync()
        }
    }

    /// A pid left in the file by a brsync that is gone (another program
    /// holds the lock now) is not named as the holder.
    @Test func aGoneProcessIsNotNamed() throws {
        let world = try SyncWorld()
        let a = try world.machine("a")
        let holder = try Holder(home: a.replica.home, pid: Int32.max - 1)
        defer { holder.release() }
        do {
            _ = try Self.client(world, a, waitMilliseconds: 100, told: Told()).sync()
            Issue.record("the sync did not wait for the lock")
        } catch SyncError.replicaBusy(let message) {
            #expect(message.contains("a process that is not a brsync") && !message.contains("\(Int32.max - 1)"))
        }
    }
}
