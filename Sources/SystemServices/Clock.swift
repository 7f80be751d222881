import Glibc

/// The one clock of every binary, in milliseconds. Wall time is what stamps,
/// logs and files name, and may jump (a user sets the clock, NTP steps it);
/// monotonic time never jumps and is what durations, timeouts and deadlines
/// use. Code that must run against a clock of the test's own takes a
/// `() -> Int64` (wall milliseconds) whose default is ``wallMillis()``.
public enum Clock {
    /// Milliseconds since 1970-01-01 UTC, from the real-time clock.
    public static func wallMillis() -> Int64 { read(CLOCK_REALTIME, perSecond: 1000) }

    /// Milliseconds since an arbitrary start (the boot), from a clock that
    /// never goes back.
    public static func monotonicMillis() -> Int64 { read(CLOCK_MONOTONIC, perSecond: 1000) }

    /// The same clock in microseconds, for durations of a few milliseconds.
    public static func monotonicMicros() -> Int64 { read(CLOCK_MONOTONIC, perSecond: 1_000_000) }

    /// `clock` in units of which a second has `perSecond` (a divisor of 10⁹).
    private static func read(_ clock: clockid_t, perSecond: Int64) -> Int64 {
        var spec = timespec()
        clock_gettime(clock, &spec)
        return Int64(spec.tv_sec) * perSecond + Int64(spec.tv_nsec) / (1_000_000_000 / perSecond)
    }
}
