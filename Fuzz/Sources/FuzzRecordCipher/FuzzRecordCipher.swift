import Model
import SyncClient
import SyncCore

/// One fixed account key (the fuzzer cannot forge a seal; it can send
/// anything a hostile server could).
let cipher = RecordCipher(try! AccountKey(bytes: Array(repeating: 7, count: 32)))

/// Reads the input as a change the way the client reads a pulled record. As
/// a sealed record, opening it must refuse or succeed without crashing, and
/// what opens must seal back to a record that opens to the same change. As a
/// readable change, sealing it (unless it uses the cipher's own field names)
/// must open back to it unchanged (unless it has no field: nothing to open).
func fuzzRecordCipher(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard let change = try? ChangeRecord(reading: UnsafeBufferPointer(start: data, count: size)) else { return 0 }
    if let opened = try? cipher.open(change) {
        let again = try? cipher.open(try cipher.seal(opened))
        precondition(again == opened, "an opened record did not survive sealing again")
    }
    if let sealed = try? cipher.seal(change) {
        let back = try? sealed.jsonBytes.withUnsafeBufferPointer { bytes throws(Wire.ReadError) in try ChangeRecord(reading: bytes) }
        precondition(back == sealed, "a sealed change changed in a round trip through its JSON")
        // A change with no field (re-stamping took them all) has no sealed key
        // to open by; the client skips such a record, holding nothing.
        precondition(change.state.fields.isEmpty || (try? cipher.open(sealed)) == change, "a sealed change did not open to itself")
    }
    return 0
}
