import CLinux
import Glibc
import Replica
import SyncClient
import SystemServices

/// The watch's loop: sync, hold a watch on the server, sync again when it
/// answers "changed" or an edit here wakes it; offline, retry with a
/// growing pause, at once when the network changes or the machine resumes.
public final class Watcher {
    /// The watch's claim on the replica (its lock, its wake-up socket).
    /// - Throws: when another watch holds it, with what to do about one
    ///   that gave no sign of life.
    public static func claim(_ replica: Replica) throws -> WatchWake.Claim {
        let held: WatchWake.Claim?
        do { held = try WatchWake.claim(home: replica.home) } catch { throw CLIFailure(message: error.description) }
        guard let claim = held else {
            if let running = WatchWake.status(home: replica.home), !running.isAlive(nowMillis: WatchWake.bootMillis()) {
                throw CLIFailure(
                    message:
                        "a watch of this replica (pid \(running.pid)) holds its lock but gave no sign of life for over 3 minutes: "
                        + "stop it ('kill \(running.pid)', or 'systemctl --user restart brsync-watch') and start this one again"
                )
            }
            throw CLIFailure(
                message:
                    "a watch runs already for this replica (\(replica.home)): one is enough ('brsync watch --status')")
        }
        return claim
    }

    /// Whether a watch runs for the replica in `home`, in words, and whether it is alive.
    public static func statusText(home: String) -> (line: String, alive: Bool) {
        guard let running = WatchWake.status(home: home) else {
            return ("no watch runs for this replica (\(home))", false)
        }
        if running.isAlive(nowMillis: WatchWake.bootMillis()) {
            return ("a watch runs for this replica (\(home)), pid \(running.pid)", true)
        }
        return (
            "a watch of this replica (pid \(running.pid)) gave no sign of life for over 3 minutes (stopped or hung?): "
                + "the sync timer syncs meanwhile; 'systemctl --user restart brsync-watch' starts it again", false
        )
    }

    let replica: Replica
    let serverWait: Int?
    /// One descriptor readable when any of the three below is: what ends a watch early.
    private let events: Int32
    /// The wake-up socket (-1: none could be made; edits then go up at the next answer).
    private let wake: Int32
    /// The lock the watch holds for its life, where its heartbeat goes.
    private let lock: Int32
    private let network: Int32
    private let resumed: Int32

    /// Why a wait ended.
    struct Woken: OptionSet {
        let rawValue: Int
        static let edit = Woken(rawValue: 1)
        static let network = Woken(rawValue: 2)
        static let timer = Woken(rawValue: 4)
    }

    public init(replica: Replica, claim: WatchWake.Claim, serverWait: Int?) throws {
        self.replica = replica
        wake = claim.socket ?? -1
        lock = claim.lock
        self.serverWait = serverWait
        events = epoll_create1(Int32(EPOLL_CLOEXEC))
        guard events >= 0 else { throw CLIFailure(message: "cannot watch: epoll_create1: \(SystemError.text())") }
        network = Self.routeSocket()
        resumed = timerfd_create(CLOCK_BOOTTIME, Int32(TFD_NONBLOCK) | Int32(TFD_CLOEXEC))
        for descriptor in [wake, network, resumed] where descriptor >= 0 {
            var event = epoll_event()
            event.events = UInt32(EPOLLIN.rawValue)
            event.data.fd = descriptor
            _ = epoll_ctl(events, EPOLL_CTL_ADD, descriptor, &event)
        }
    }

    /// A route netlink socket told of links, addresses and routes coming
    /// and going (-1 when the system will not give one: then only the
    /// pauses bring the watch back).
    private static func routeSocket() -> Int32 {
        let descriptor = socket(
            AF_NETLINK, Int32(SOCK_RAW.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue),
            NETLINK_ROUTE)
        guard descriptor >= 0 else { return -1 }
        var address = sockaddr_nl()
        address.nl_family = sa_family_t(AF_NETLINK)
        address.nl_groups =
            UInt32(RTMGRP_LINK) | UInt32(RTMGRP_IPV4_IFADDR) | UInt32(RTMGRP_IPV6_IFADDR)
            | UInt32(RTMGRP_IPV4_ROUTE) | UInt32(RTMGRP_IPV6_ROUTE)
        let status = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_nl>.size))
            }
        }
        if status != 0 {
            close(descriptor)
            return -1
        }
        return descriptor
    }

    /// Lines for the journal: systemd reads the `<N>` priority prefix when
    /// it runs the watch; on a terminal the lines are plain.
    enum Level: Int { case error = 3, warning = 4, notice = 5, info = 6 }

    func log(_ level: Level, _ message: String) {
        let prefix = ProcessEnvironment.value("JOURNAL_STREAM") != nil ? "<\(level.rawValue)>" : "brsync watch: "
        writeToStandardError(prefix + message + "\n")
    }

    /// What the loop decides on, carried from one round to the next.
    private struct LoopState {
        var needSync = true
        /// The pause before the next try after a failed sync, in ms.
        var pause = 0
        /// Why the server did not answer, while it does not (said once per outage).
        var offline: String?
        var watching: SyncClient?
        var remote: String?
        /// The last sync left work it could not send (refused, set aside): not forced again until something changes.
        var workLeft = false
        /// Watches that said "changed" in a row whose sync then found nothing new (a server that says so and has nothing).
        var emptyWakes = 0
        /// Whether the sync to come was asked for by the server's watch.
        var wokenByServer = false
        /// Watches in a row that ended at once: "no change" long before their
        /// wait, or an error (a server that lies or fails). Watched more and
        /// more slowly then, not in a loop.
        var quickRounds = 0
        /// The last refusal logged whole, and when (monotonic ms): the same
        /// one again within the hour is logged in a short line, not whole
        /// at every edit while syncs stay stopped.
        var refusal: (text: String, at: Int64)?
        /// Said once per run, each: the two warnings about a server that lies or fails.
        var saidEmpty = false
        var saidQuick = false
        /// A watch that answers "no change" sooner than this (ms) ended at once.
        let quick: Int
    }

    public func run() throws -> Never {
        if wake < 0 {
            log(
                .warning,
                "no private place for the wake-up socket: edits made here go up at the next answer of the server (within a minute)"
            )
        }
        var state = LoopState(quick: min(2_000, (serverWait ?? 55) * 500))
        while true {
            WatchWake.beat(lock)
            guard try followServer(&state) else { continue }
            if state.needSync, !syncRound(&state) { continue }
            guard watchRound(&state) else { continue }
            if state.quickRounds >= 3 {
                if state.quickRounds == 3 && !state.saidQuick {
                    log(
                        .warning,
                        "the server's watch keeps ending at once (no change, or an error): watching again more slowly")
                    state.saidQuick = true
                }
                _ = waitForEvents(milliseconds: min(60_000, 1_000 << min(6, state.quickRounds - 3)))
            }
        }
    }

    /// Follows which server is set: set (or changed, or removed) while the
    /// watch runs, it wakes the watch. False when the round waited for one.
    private func followServer(_ state: inout LoopState) throws -> Bool {
        let current = try replica.syncState().remoteURL
        guard current != state.remote || current == nil else { return true }
        state.remote = current
        state.watching = nil
        guard let current else {
            log(.notice, "this replica has no server yet: waiting for 'brsync join' or 'brsync remote set'")
            while (try replica.syncState().remoteURL) == nil { _ = waitForEvents(milliseconds: 3_600_000) }
            return false
        }
        log(.notice, "watching \(current) for changes of this replica's account")
        state.needSync = true
        return true
    }

    /// One sync, with what its outcome says about the server: false when it
    /// failed (after the pause it calls for).
    private func syncRound(_ state: inout LoopState) -> Bool {
        do {
            let summary = try syncOnce()
            state.needSync = false
            state.pause = 0
            state.workLeft = (try? machineClient(replica).client.hasWorkToSend()) ?? false
            if let problem = state.offline {
                log(.notice, "the server answers again (it did not: \(problem))")
                state.offline = nil
            }
            report(summary)
            state.refusal = nil
            // One empty wake follows each push of this machine's (its own change); more in a row are the server's doing.
            state.emptyWakes = state.wokenByServer && summary.pulled == 0 ? state.emptyWakes + 1 : 0
            state.wokenByServer = false
            if state.emptyWakes >= 3 {
                let wait = min(60_000, 1_000 << min(6, state.emptyWakes - 3))
                if state.emptyWakes == 3 && !state.saidEmpty {
                    log(
                        .warning,
                        "the server keeps saying the account changed but has nothing new: watching again more slowly"
                    )
                    state.saidEmpty = true // once: a server that does it does it again
                }
                _ = waitForEvents(milliseconds: wait)
            }
            return true
        } catch let error as SyncError {
            state.watching = nil
            switch error {
            case .busy:
                // Not offline: the server asks to come back (a herd after its restart); soon, spread.
                state.pause = Int.random(in: 1_000...5_000)
            case .unreachable(let message):
                // Said once per outage, not at every retry.
                if state.offline == nil { log(.warning, "offline: \(message); retrying") }
                state.offline = message
                state.pause = state.pause == 0 ? 1_000 : min(60_000, state.pause * 2)
            default:
                logRefusal(error.description, &state)
                state.pause = 300_000
            }
            _ = waitForEvents(milliseconds: state.pause + Int.random(in: 0...(state.pause / 4)))
            return false
        } catch {
            log(.error, "\(error); trying again in a minute")
            _ = waitForEvents(milliseconds: 60_000)
            return false
        }
    }

    /// Holds one watch on the server, or waits for what ends it here (an
    /// edit, the network, a resume). False when work waits to be sent first.
    private func watchRound(_ state: inout LoopState) -> Bool {
        do {
            let watching = try state.watching ?? machineClient(replica).client
            state.watching = watching
            // Work no change on the server announces (a key change finished here, a relay due): sync first.
            if !state.workLeft, try watching.hasWorkToSend() {
                state.needSync = true
                return false
            }
            // A resume from suspend fires this (it counts the time asleep); so does a server that never answers.
            arm(milliseconds: (serverWait.map { $0 * 1000 } ?? 55_000) + 10_000)
            let started = Clock.monotonicMillis()
            switch try watching.watch(wakeup: events, waitSeconds: serverWait) {
            case .changed:
                state.needSync = true
                state.wokenByServer = true
                state.quickRounds = 0
            case .unchanged:
                state.quickRounds = Clock.monotonicMillis() - started < state.quick ? state.quickRounds + 1 : 0
            case .interrupted:
                if drain().contains(.edit) {
                    // Edits made together go up together.
                    usleep(30_000)
                    _ = drain()
                }
                // A new connection: on the network as it is now, to the server as it is set now.
                state.watching = nil
                state.needSync = true
            case .unsupported:
                log(
                    .warning,
                    "the server has no watch (an older brsyncd): syncing every 5 minutes and at every edit here")
                _ = waitForEvents(milliseconds: 300_000)
                state.needSync = true
            }
        } catch SyncError.unreachable(let message) where message.contains("is busy") {
            // The server sheds watches first when it is loaded: back in a few seconds, without a sync.
            state.watching = nil
            _ = waitForEvents(milliseconds: Int.random(in: 1_000...5_000))
        } catch {
            state.watching = nil
            state.needSync = true
            state.quickRounds += 1
        }
        return true
    }

    /// One sync, as `brsync sync` does it.
    private func syncOnce() throws -> SyncClient.Summary {
        let previous = (try? replica.syncState().problem) ?? ""
        let client = try machineClient(replica).client
        do {
            return try client.sync()
        } catch let error as SyncError {
            Transfer.notifyStop(error, previous: previous)
            throw error
        }
    }

    /// Logs why a sync stopped: whole the first time, and once an hour
    /// while it stays the same; a short line at the other tries (each
    /// edit here tries again).
    private func logRefusal(_ text: String, _ state: inout LoopState) {
        let now = Clock.monotonicMillis()
        if let last = state.refusal, last.text == text, now - last.at < 3_600_000 {
            let since = (now - last.at) / 60_000
            log(
                .error,
                "sync stopped again, for the reason logged \(since == 0 ? "just now" : "\(since) min ago"); "
                    + "trying again in 5 minutes, or at the next edit here")
            return
        }
        log(.error, "\(text); trying again in 5 minutes, or at the next edit here")
        state.refusal = (text, now)
    }

    /// What a sync did, for the journal, as `brsync sync` says it (nothing
    /// when it moved nothing and had nothing to say: a joined account, a
    /// new key, a re-sync, conflicts, removals are all logged).
    private func report(_ summary: SyncClient.Summary) {
        if summary.pushed > 0 || summary.applied > 0 || !Transfer.notes(summary).isEmpty {
            log(.info, Transfer.line(summary, "sync"))
        }
        for problem in summary.problems { log(.warning, problem) }
    }

    /// Sets the resume timer `milliseconds` from now, in time that counts suspend.
    private func arm(milliseconds: Int) {
        guard resumed >= 0 else { return }
        var value = itimerspec()
        value.it_value.tv_sec = milliseconds / 1000
        value.it_value.tv_nsec = (milliseconds % 1000) * 1_000_000
        _ = timerfd_settime(resumed, 0, &value, nil)
    }

    /// Waits up to `milliseconds` for an edit, a network change or the
    /// timer, giving a sign of life at least once a minute.
    private func waitForEvents(milliseconds: Int) -> Woken {
        arm(milliseconds: milliseconds)
        var descriptor = pollfd(fd: events, events: Int16(POLLIN), revents: 0)
        var left = milliseconds
        while left > 0 {
            let slice = min(left, 60_000)
            let started = Clock.monotonicMillis()
            let status = poll(&descriptor, 1, Int32(slice))
            if status > 0 { break }
            if status < 0 && errno != EINTR { break }
            WatchWake.beat(lock)
            left -= max(1, Int(Clock.monotonicMillis() - started))
        }
        let woken = drain()
        if woken.contains(.network) { usleep(300_000); _ = drain() } // a change comes as a burst of messages
        return woken
    }

    /// What is waiting, read and dropped.
    private func drain() -> Woken {
        var woken: Woken = []
        var buffer = [UInt8](repeating: 0, count: 8192)
        if wake >= 0, recv(wake, &buffer, buffer.count, Int32(MSG_DONTWAIT)) > 0 {
            woken.insert(.edit)
            WatchWake.drain(wake)
        }
        if network >= 0 {
            while recv(network, &buffer, buffer.count, Int32(MSG_DONTWAIT)) > 0 { woken.insert(.network) }
        }
        if resumed >= 0, read(resumed, &buffer, 8) == 8 { woken.insert(.timer) }
        return woken
    }
}
