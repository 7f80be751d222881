import Synchronization

/// An answer that is not ready yet: a long poll (`GET /v1/watch`). The
/// server holds the connection in its event loop, without a thread, until
/// ``fire()`` is called (from any thread) or ``waitMilliseconds`` pass, or
/// the client sends more; then it asks for the answer on a thread and
/// writes it. ``end()`` runs once whatever happens (the answer made, the
/// client gone, the server stopping), so whoever waits to fire it can
/// forget it.
public final class DeferredResponse: Sendable, Equatable {
    public let waitMilliseconds: Int
    private let make: @Sendable (_ woken: Bool) -> HTTPResponse
    private let ended: @Sendable () -> Void

    private enum State {
        case waiting
        /// Fired before the server was waiting for it.
        case fired
        /// The server waits: this wakes it.
        case held(@Sendable () -> Void)
        case done
    }

    private let state = Mutex<State>(.waiting)

    /// - Parameters:
    ///   - make: the answer, when the wait is over: `woken` when ``fire()``
    ///     ended it, false when the time ran out (or the client sent more).
    ///   - ended: called once, when the answer is made or never will be.
    public init(
        waitMilliseconds: Int, make: @escaping @Sendable (_ woken: Bool) -> HTTPResponse,
        ended: @escaping @Sendable () -> Void = {}
    ) {
        self.waitMilliseconds = waitMilliseconds
        self.make = make
        self.ended = ended
    }

    public static func == (left: DeferredResponse, right: DeferredResponse) -> Bool { left === right }

    /// The answer is ready to be made: the server wakes the connection.
    public func fire() {
        let wake = state.withLock { state -> (@Sendable () -> Void)? in
            switch state {
            case .waiting:
                state = .fired
                return nil
            case .held(let wake):
                state = .fired
                return wake
            case .fired, .done:
                return nil
            }
        }
        wake?()
    }

    /// For the server: `wake` is called when ``fire()`` is (at most once).
    /// - Returns: true when it was fired already (`wake` is not kept).
    public func hold(wake: @escaping @Sendable () -> Void) -> Bool {
        state.withLock { state in
            switch state {
            case .waiting:
                state = .held(wake)
                return false
            case .fired, .done:
                return true
            case .held:
                state = .held(wake)
                return false
            }
        }
    }

    /// For the server: ends the wait and makes the answer.
    public func answer() -> HTTPResponse {
        let woken = state.withLock { state in
            if case .fired = state { return true }
            return false
        }
        end()
        return make(woken)
    }

    /// For the server: the wait is over and no answer will be made (the
    /// client went away, the server stops). Runs `ended` once.
    public func end() {
        let first = state.withLock { state -> Bool in
            if case .done = state { return false }
            state = .done
            return true
        }
        if first { ended() }
    }
}
