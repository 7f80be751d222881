import Synchronization
import SystemServices

/// The watches (`GET /v1/watch`) waiting in this process, by account, in
/// memory: a write of this process that changes an account wakes its
/// watches as it commits; with PostgreSQL, so does another brsyncd's (its
/// `NOTIFY`, which ``PostgresDialect`` listens for). Nothing polls the store.
///
/// A device keeps at most ``maxPerDevice`` watches and an account at most
/// ``maxPerAccount``: a new one past either answers the oldest ("no
/// change"; its client, if it is still there, watches again). A machine
/// whose old connection died unseen (a suspend, a network change) is never
/// locked out by it, and no account holds more than its share of memory.
public final class WatchHub: Sendable {
    public let maxPerDevice: Int
    public let maxPerAccount: Int

    private struct Watcher {
        let id: UInt64
        let device: Int64
        /// Answers the watch (its deferred response fired).
        let wake: @Sendable () -> Void
    }

    private struct State {
        var next: UInt64 = 1
        var byAccount: [Int64: [Watcher]] = [:]
        var count = 0
        /// Counts the changes heard of (``changed(account:)``, ``changedAll()``).
        var generation: UInt64 = 0
        /// The generation of each account's last change heard of, from
        /// `forgottenThrough` on (kept for at most ``maxTracked`` accounts).
        var changedAt: [Int64: UInt64] = [:]
        var forgottenThrough: UInt64 = 0
    }

    private let state = Locked(State())
    /// ``State/generation``, readable without the lock: a pull asking about
    /// a generation that is still the current one needs no lock at all.
    private let currentGeneration = Atomic<UInt64>(0)
    /// Accounts whose last change is remembered (a few MB at most).
    let maxTracked: Int

    public init(maxPerDevice: Int = 4, maxPerAccount: Int = 64, maxTracked: Int = 100_000) {
        self.maxPerDevice = maxPerDevice
        self.maxPerAccount = maxPerAccount
        self.maxTracked = maxTracked
    }

    /// The changes heard of so far: taken before an account is read, it
    /// tells whether a change may have come after the read
    /// (``changed(account:since:)``).
    package var generation: UInt64 { currentGeneration.load(ordering: .acquiring) }

    /// Whether a change of `account` was heard of after `generation` was
    /// taken (true when that is too long ago to know).
    package func changed(account: Int64, since generation: UInt64) -> Bool {
        if generation == currentGeneration.load(ordering: .acquiring) { return false }
        return state.withLock { state in
            generation < state.forgottenThrough || (state.changedAt[account] ?? 0) > generation
        }
    }

    /// Watches waiting now.
    public var count: Int { state.withLock { $0.count } }

    /// Adds a watch that `wake` answers; answers the oldest of the device, or
    /// of the account, past its cap.
    /// - Returns: the watch's id, for ``remove(account:id:)``.
    package func add(account: Int64, device: Int64, wake: @escaping @Sendable () -> Void) -> UInt64 {
        let (id, displaced) = state.withLock { state -> (UInt64, [@Sendable () -> Void]) in
            let id = state.next
            state.next += 1
            var watchers = state.byAccount[account] ?? []
            watchers.append(Watcher(id: id, device: device, wake: wake))
            var displaced: [@Sendable () -> Void] = []
            while watchers.count(where: { $0.device == device }) > maxPerDevice,
                let oldest = watchers.firstIndex(where: { $0.device == device })
            {
                displaced.append(watchers.remove(at: oldest).wake)
            }
            while watchers.count > maxPerAccount { displaced.append(watchers.removeFirst().wake) }
            state.count += 1 - displaced.count
            state.byAccount[account] = watchers
            return (id, displaced)
        }
        for wake in displaced { wake() }
        return id
    }

    /// Forgets a watch (answered, or its client gone); nothing if it is gone already.
    package func remove(account: Int64, id: UInt64) {
        state.withLock { state in
            guard var watchers = state.byAccount[account], let index = watchers.firstIndex(where: { $0.id == id })
            else { return }
            watchers.remove(at: index)
            state.count -= 1
            state.byAccount[account] = watchers.isEmpty ? nil : watchers
        }
    }

    /// Wakes every watch of `account`: each answers with what the account holds now.
    public func changed(account: Int64) {
        touched(account: account)
        let woken = state.withLock { $0.byAccount[account] ?? [] }
        for watcher in woken { watcher.wake() }
    }

    /// Notes that `account` was written (a push that changed no record, a
    /// signing key registered) without waking its watches: what was read
    /// of it before is not used again (``changed(account:since:)``).
    package func touched(account: Int64) {
        state.withLock { state in
            state.generation += 1
            currentGeneration.store(state.generation, ordering: .releasing)
            if state.changedAt.count >= maxTracked, state.changedAt[account] == nil {
                state.changedAt.removeAll()
                state.forgottenThrough = state.generation
            }
            state.changedAt[account] = state.generation
        }
    }

    /// Wakes every watch (a notification may have been missed: the
    /// connection that listens for other processes' was lost).
    public func changedAll() {
        let woken = state.withLock { state in
            state.generation += 1
            currentGeneration.store(state.generation, ordering: .releasing)
            state.changedAt.removeAll()
            state.forgottenThrough = state.generation
            return state.byAccount.values.flatMap { $0 }
        }
        for watcher in woken { watcher.wake() }
    }
}
