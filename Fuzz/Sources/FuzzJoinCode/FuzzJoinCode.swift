import Model
import SyncClient
import SyncCore

/// Reads the input as the codes a user pastes: a join code and a
/// recovery code, the `Brsync-Sealed-With` claim, and the sealed-form check the server runs on every change
/// of an encrypted account. Whatever reads must read back as itself.
func fuzzJoinCode(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let text = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
    if let code = try? JoinCode(parsing: text) {
        precondition(code.caFingerprint.count == 32 && code.server.hasPrefix("https://"))
        precondition((try? JoinCode(parsing: code.description)) == code, "a join code changed in a round trip")
    }
    // The head of a push or relay: what its records are sealed with.
    if let claim = Wire.SealedWith(header: text) {
        precondition(Wire.SealedWith(header: claim.description) == claim, "a sealed-with claim changed in a round trip")
    }
    if let key = try? AccountKey(recoveryCode: text) {
        precondition(
            (try? AccountKey(recoveryCode: key.recoveryCode)) == key, "a recovery code changed in a round trip")
    }
    if let change = try? Wire.read(text, ChangeRecord.init(reading:)) {
        // Either refused with a reason or in the sealed form; never a crash.
        if Wire.sealedProblem(change) == nil && !change.state.fields.isEmpty {
            if change.collection == .ledger {
                // A ledger record's key is readable by design (a device's shard, head or slot).
                precondition(Ledger.Key(change.key) != nil && Array(change.state.fields.keys) == [Wire.ledgerField])
            } else {
                precondition(Wire.isHiddenKey(change.key) && change.state.fields[Wire.sealedKeyField] != nil)
            }
        }
        _ = Wire.looksSealed(change)
    }
    return 0
}
