import Cryptography
import SyncCore

extension Ledger {
    /// The head's ``Ledger/Head/shardsHash``: the first 8 bytes (big-endian)
    /// of a SHA-256 over every shard in use, ascending by index, each as its
    /// index (1 byte), the stamp of the write that made it (its text's UTF-8,
    /// after a 2-byte length) and its packed bytes (after a 4-byte length).
    /// A machine recomputes it from the shards it holds (check 2).
    /// - Parameter packed: each shard's packed bytes as held, by index,
    ///   where the caller has them (else they are packed again).
    public static func shardsHash(
        _ shards: [(index: Int, shard: LedgerCheck.Held<Shard>)], packed: [Int: [UInt8]] = [:]
    ) -> UInt64 {
        var bytes: [UInt8] = []
        for (index, held) in shards.sorted(by: { $0.index < $1.index }) {
            let stamp = Array(held.stamp.description.utf8)
            let shardBytes = packed[index] ?? held.value.bytes
            bytes.append(UInt8(truncatingIfNeeded: index))
            bytes += [UInt8(truncatingIfNeeded: stamp.count >> 8), UInt8(truncatingIfNeeded: stamp.count)]
            bytes += stamp
            let length = UInt32(shardBytes.count)
            bytes += [UInt8(length >> 24), UInt8(length >> 16 & 0xFF), UInt8(length >> 8 & 0xFF), UInt8(length & 0xFF)]
            bytes += shardBytes
        }
        return Crypto.sha256(bytes).prefix(8).reduce(0) { $0 << 8 | UInt64($1) }
    }
}

extension Ledger {
    /// What a withdrawal binds a pending record by (``Ledger/Withdrawal/Record/hash``):
    /// the first 8 bytes (big-endian) of a SHA-256 over its packed bytes.
    public static func pendingHash(_ pending: Pending) -> UInt64 {
        Crypto.sha256(pending.bytes).prefix(8).reduce(0) { $0 << 8 | UInt64($1) }
    }
}
