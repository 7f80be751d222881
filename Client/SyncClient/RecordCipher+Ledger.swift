import Cryptography
import JSON
import SyncCore

/// Ledger records (Deploy/SECURITY.md, "A device's own writes, counted") as
/// the server of an encrypted account keeps them: the key readable
/// (`DEVICE/head` and the like, which names only the device, as stamps
/// already do), the packed bytes sealed as bytes (no base64 inside base64),
/// bound like every sealed value to the collection, the key, the field and
/// the stamp. They are not padded: how many entries a ledger record holds
/// tells the server no more than the records it stores, whose writers their
/// stamps name. No deletion flag (a ledger record is never deleted), sealed
/// key or manifest: a ledger record changed, dropped or rolled back by a
/// server breaks the ledger's chain or hash, or leaves a write newer than
/// what the ledger describes, which the checks name.
/// In the replica the bytes are base64url text (``Wire/ledgerField``).
extension RecordCipher {
    func sealLedger(_ change: ChangeRecord) throws(RecordCipherError) -> ChangeRecord {
        var sealer = Sealer(self, collection: change.collection.rawValue, hiddenKey: change.key)
        var stamps = HLCTimestamp.TextCache()
        var fields: [String: StampedValue] = [:]
        for (name, register) in change.state.fields {
            switch name {
            case Wire.ledgerField:
                guard case .string(let text) = register.value, let bytes = Crypto.base64URLDecode(text) else {
                    throw RecordCipherError(
                        message: "ledger '\(Self.shown(change.key))': its ledger is not packed bytes")
                }
                let sealed = sealer.seal(bytes, field: name, stamp: stamps.text(of: register.stamp), padding: false)
                fields[name] = StampedValue(.string(sealed), stamp: register.stamp)
            default:
                throw RecordCipherError(
                    message:
                        "ledger '\(Self.shown(change.key))' holds a field \"\(Self.shown(name))\" besides its ledger")
            }
        }
        return ChangeRecord(
            sequence: change.sequence, collection: .ledger, key: change.key,
            state: RecordState(fields: fields, versions: change.state.versions))
    }

    func openLedger(_ change: ChangeRecord) throws(RecordCipherError) -> ChangeRecord {
        if let problem = Wire.ledgerProblem(change) { throw RecordCipherError(message: problem) }
        var opener = Opener(self, collection: change.collection.rawValue, hiddenKey: change.key)
        var stamps = HLCTimestamp.TextCache()
        var fields: [String: StampedValue] = [:]
        for (name, register) in change.state.fields {
            // Checked above: the one field, a sealed string.
            guard case .string(let sealed) = register.value else { continue }
            let bytes = try opener.open(sealed, field: name, stamp: stamps.text(of: register.stamp), padded: false)
            fields[name] = StampedValue(.string(Crypto.base64URL(bytes)), stamp: register.stamp)
        }
        var opened = ChangeRecord(
            sequence: change.sequence, collection: .ledger, key: change.key,
            state: RecordState(fields: fields, versions: change.state.versions))
        opened.filedKey = change.key
        return opened
    }

    private static func shown(_ text: String) -> String { DisplayText.printable(text.prefix(80)) }
}
