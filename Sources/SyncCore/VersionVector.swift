/// A version vector: device id → number of versions of a record that device minted.
public struct VersionVector: Sendable, Hashable {
    public private(set) var counters: [String: UInt64]

    public init(_ counters: [String: UInt64] = [:]) {
        self.counters = counters.filter { $0.value > 0 }
    }

    public subscript(device: String) -> UInt64 { counters[device] ?? 0 }

    /// The largest counter the wire carries (a JSON integer read as Int64).
    public static let maxCounter = UInt64(Int64.max)

    /// Counts one more version minted by `device`; at ``maxCounter`` it
    /// stays there (only a lying server puts a counter there: growing past
    /// it, the record could not be sent any more, and every edit of this
    /// device to it would be refused).
    public mutating func increment(_ device: String) {
        let current = counters[device, default: 0]
        counters[device] = current >= Self.maxCounter ? Self.maxCounter : current + 1
    }

    /// This vector with `device`'s counter at most `count` (0: left out).
    public func lowering(_ device: String, to count: UInt64) -> VersionVector {
        var copy = self
        if copy[device] > count { copy.counters[device] = count > 0 ? count : nil }
        return copy
    }

    /// The pointwise maximum.
    public func merged(with other: VersionVector) -> VersionVector {
        VersionVector(counters.merging(other.counters, uniquingKeysWith: max))
    }

    public enum Order: Sendable, Equatable {
        case equal, before, after, concurrent
    }

    /// How this vector relates to `other`: `before` when every counter is ≤ and
    /// one is <; `concurrent` when each has a counter the other lacks.
    public func compare(to other: VersionVector) -> Order {
        var less = false
        var greater = false
        for device in Set(counters.keys).union(other.counters.keys) {
            let mine = self[device]
            let theirs = other[device]
            if mine < theirs { less = true }
            if mine > theirs { greater = true }
        }
        switch (less, greater) {
        case (false, false): return .equal
        case (true, false): return .before
        case (false, true): return .after
        case (true, true): return .concurrent
        }
    }
}

extension VersionVector {
    /// This vector cut to at most `limit` devices (``Wire/maxVersionEntries``):
    /// every device of `kept` stays, then the highest counters, the smaller
    /// device id first among equals; the rest are forgotten. A vector only
    /// tells conflicts (values are decided by stamps), so forgetting a
    /// device can at worst make a later edit of it look concurrent; refusing
    /// the edit instead would let anyone who pads a vector with made-up
    /// devices lock the record for every machine outside it.
    public func capped(at limit: Int = Wire.maxVersionEntries, keeping kept: some Sequence<String>) -> VersionVector {
        guard counters.count > limit else { return self }
        let first = Set(kept)
        let order = counters.sorted { left, right in
            let (leftKept, rightKept) = (first.contains(left.key), first.contains(right.key))
            if leftKept != rightKept { return leftKept }
            if left.value != right.value { return left.value > right.value }
            return left.key < right.key
        }
        return VersionVector(Dictionary(uniqueKeysWithValues: order.prefix(limit).map { ($0.key, $0.value) }))
    }
}
