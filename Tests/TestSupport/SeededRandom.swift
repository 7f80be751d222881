import Foundation

/// A reproducible random source (SplitMix64). Randomized tests print the seed
/// they ran with; set `BRSYNC_TEST_SEED` to re-run one.
public struct SeededRandom: RandomNumberGenerator, Sendable {
    public let seed: UInt64
    private var state: UInt64

    public init(seed: UInt64) {
        self.seed = seed
        state = seed
    }

    /// The seed from `BRSYNC_TEST_SEED`, or `fallback` (fixed, so CI is repeatable).
    public static func fromEnvironment(fallback: UInt64) -> SeededRandom {
        let text = ProcessInfo.processInfo.environment["BRSYNC_TEST_SEED"]
        return SeededRandom(seed: text.flatMap { UInt64($0) } ?? fallback)
    }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
