import SystemServices

/// A point in time on the monotonic clock, in milliseconds.
public struct Deadline: Sendable, Comparable {
    public let milliseconds: Int64

    public static func now() -> Deadline { Deadline(milliseconds: Clock.monotonicMillis()) }

    public static func after(milliseconds: Int) -> Deadline {
        Deadline(milliseconds: now().milliseconds + Int64(milliseconds))
    }

    public static let never = Deadline(milliseconds: Int64.max / 2)

    public init(milliseconds: Int64) {
        self.milliseconds = milliseconds
    }

    /// Milliseconds left (0 when passed), capped to fit `poll`.
    public var remaining: Int32 {
        Int32(clamping: max(0, milliseconds - Deadline.now().milliseconds))
    }

    public var hasPassed: Bool { Deadline.now().milliseconds >= milliseconds }

    public static func < (lhs: Deadline, rhs: Deadline) -> Bool { lhs.milliseconds < rhs.milliseconds }
}
