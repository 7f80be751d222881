import JSON
import Model
import SyncCore

/// Builds three record states from the input (few field names, devices and
/// values, so collisions — equal stamps with different values included — are
/// common) and checks that the merge is commutative, associative and
/// idempotent, as convergence needs.
func fuzzMerge(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    var bytes = UnsafeBufferPointer(start: data, count: size).makeIterator()
    func state() -> RecordState {
        var fields: [String: StampedValue] = [:]
        var versions: [String: UInt64] = [:]
        let count = Int(bytes.next() ?? 0) % 6
        for _ in 0..<count {
            guard let a = bytes.next(), let b = bytes.next(), let c = bytes.next() else { break }
            let device = ["a", "b", "c"][Int(a) % 3]
            let stamp = HLCTimestamp(wallMillis: Int64(b % 4), counter: UInt32(c % 3), device: device)
            let values: [JSONValue] = [
                .null, .bool(true), .int(Int64(c)), .string("x\(b % 3)"), .array([.int(1)]),
                .object(["k": .int(Int64(a % 2))]), .double(1.5), .bool(false),
            ]
            fields[["browser", "deleted", "priority", "pattern"][Int(a >> 2) % 4]] = StampedValue(
                values[Int(b >> 2) % values.count], stamp: stamp)
            versions[device, default: 0] += UInt64(c % 2)
        }
        return RecordState(fields: fields, versions: VersionVector(versions))
    }
    let x = state(), y = state(), z = state()
    precondition(x.merged(with: y).state == y.merged(with: x).state, "merge is not commutative")
    precondition(
        x.merged(with: y).state.merged(with: z).state == x.merged(with: y.merged(with: z).state).state,
        "merge is not associative")
    precondition(x.merged(with: x).state == x, "merge is not idempotent")
    return 0
}
