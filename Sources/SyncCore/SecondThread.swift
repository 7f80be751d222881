/// A thread a reader may hand half its work to: brsyncd reads a push or a
/// relay of a thousand changes, and digests a push, in two halves at once.
/// SyncCore starts no thread of its own; the program lends one (brsyncd,
/// from Net's spare threads), and a lender with none spare at the moment
/// leaves both halves to the caller.
public struct SecondThread: Sendable {
    /// Starts `body` on another thread and returns what waits for it to
    /// finish; nil when no thread is spare.
    public typealias Start = @Sendable (_ body: @escaping @Sendable () -> Void) -> (@Sendable () -> Void)?

    private let start: Start
    /// Fewer items than this are done on the caller's thread alone: by
    /// default 256 (starting a thread costs about what reading 50 changes
    /// does); the tests and the fuzz targets split short ones too.
    public let worthSplitting: Int

    public init(worthSplitting: Int = 256, start: @escaping Start) {
        self.worthSplitting = max(2, worthSplitting)
        self.start = start
    }

    /// `first()` on this thread while `second()` runs on the other one;
    /// both here, one after the other, when no thread is spare.
    public func both<First, Second: Sendable>(
        _ first: () -> First, _ second: @escaping @Sendable () -> Second
    ) -> (First, Second) {
        let box = Box<Second>()
        guard let wait = start({ box.value = second() }) else { return (first(), second()) }
        let firstValue = first()
        wait()
        // Written by the other thread before `wait` returned: `start`'s
        // waiting orders the write before this read.
        return (firstValue, box.value!)
    }

    private final class Box<Value>: @unchecked Sendable {
        var value: Value?
    }
}
