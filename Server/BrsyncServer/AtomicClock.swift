import Synchronization
import SyncCore

/// The server's hybrid logical clock as one atomic word (48 bits of wall-clock
/// milliseconds, 16 bits of counter), so request threads never queue on a lock
/// to stamp an answer. Same rules as ``HybridLogicalClock``.
final class AtomicClock: Sendable {
    private let word: Atomic<UInt64>
    let device: String

    init(device: String, last: HLCTimestamp?) {
        self.device = device
        word = Atomic(last.map { Self.pack(wall: $0.wallMillis, counter: UInt64(min($0.counter, 0xFFFF))) } ?? 0)
    }

    private static func pack(wall: Int64, counter: UInt64) -> UInt64 {
        UInt64(max(0, wall)) << 16 | counter
    }

    private func stamp(_ packed: UInt64) -> HLCTimestamp {
        HLCTimestamp(wallMillis: Int64(packed >> 16), counter: UInt32(packed & 0xFFFF), device: device)
    }

    /// A new stamp greater than every stamp minted or observed.
    func tick(wallMillis: Int64) -> HLCTimestamp {
        update { last in
            let lastWall = Int64(last >> 16)
            if wallMillis > lastWall { return Self.pack(wall: wallMillis, counter: 0) }
            return last + 1 // a full counter carries into the wall time, which stays monotonic
        }
    }

    /// Moves the clock past a received stamp.
    func observe(_ remote: HLCTimestamp, wallMillis: Int64) {
        let remoteWord = Self.pack(wall: remote.wallMillis, counter: UInt64(min(remote.counter, 0xFFFF)))
        _ = update { last in
            let floor = Self.pack(wall: wallMillis, counter: 0)
            let highest = max(last, remoteWord)
            return highest >= floor ? highest + 1 : floor
        }
    }

    var last: HLCTimestamp { stamp(word.load(ordering: .acquiring)) }

    private func update(_ next: (UInt64) -> UInt64) -> HLCTimestamp {
        var current = word.load(ordering: .relaxed)
        while true {
            let proposed = next(current)
            let (exchanged, original) = word.compareExchange(expected: current, desired: proposed, ordering: .acquiringAndReleasing)
            if exchanged { return stamp(proposed) }
            current = original
        }
    }
}
