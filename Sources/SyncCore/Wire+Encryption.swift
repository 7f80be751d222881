import JSON

/// What the server of an end-to-end encrypted account checks
/// (Deploy/SECURITY.md). It cannot open anything; it can only see that every
/// change is in the sealed form, so a client that does not encrypt (an old
/// brsync, or one without the account key) is refused rather than mixing
/// readable records into an encrypted account.
extension Wire {
    /// The request header saying which protocol a client speaks. Clients that
    /// can encrypt send `2` or more; a request without it is protocol 1.
    public static let protocolHeader = "Brsync-Protocol"
    /// The protocol of this build: 2 knows end-to-end encryption; 3 signs
    /// every write to an encrypted account (``WriteSignature``); 4 keeps
    /// devices' ledgers (``ledgerProtocol``); 5 withdraws writes of a
    /// device's earlier id that every holder lost (``withdrawalProtocol``);
    /// 6 reads and writes sealed format 2 (``sealedFormatProtocol``).
    public static let protocolVersion = 6
    /// The first protocol that signs writes: an encrypted account takes
    /// writes from it only.
    public static let signedWritesProtocol = 3
    /// The first protocol that keeps devices' ledgers (the ``RecordCollection/ledger``
    /// collection): the server takes and sends ledger records to it only.
    public static let ledgerProtocol = 4
    /// The first protocol that reads withdrawals (``Ledger/Withdrawal``,
    /// `DEVICE/withdrawn/SLOT`): the server takes and sends them to it only
    /// (a client of protocol 4 would set them aside as damaged).
    public static let withdrawalProtocol = 5
    /// The first protocol that reads and writes sealed format 2
    /// (docs/sealed-format-v2.md): an encrypted account is marked format 2
    /// once every device seen in the last ``sealedFormatWindowMillis``
    /// speaks it, and then takes no request of an older one.
    public static let sealedFormatProtocol = 6
    /// How recently a device must have been seen to hold its account in format 1: 30 days.
    public static let sealedFormatWindowMillis: Int64 = 30 * 24 * 3_600_000
    /// Whether a server sends a record to a client of protocol
    /// `clientProtocol`: ledger records to clients that keep ledgers,
    /// withdrawals to clients that read them (the cursor passes the rest
    /// for the others, which never read them).
    public static func sends(collection: RecordCollection, key: String, toProtocol clientProtocol: Int) -> Bool {
        guard collection == .ledger else { return true }
        guard clientProtocol >= withdrawalProtocol else {
            guard clientProtocol >= ledgerProtocol else { return false }
            if case .withdrawal? = Ledger.Key(key) { return false }
            return true
        }
        return true
    }

    /// The one sealed field of a ledger record: its packed bytes (``Ledger``).
    public static let ledgerField = "ledger"

    /// The request header of a push or relay naming the key its records are
    /// sealed with, or `none` for readable records (``SealedWith``). The
    /// server checks it against the account on the request's head, and the
    /// client sends the body only after `100 Continue`: records go nowhere
    /// readable, nor sealed with a retired key, even on the first sync after
    /// another machine encrypted or rotated the account.
    public static let sealedWithHeader = "Brsync-Sealed-With"

    /// What ``sealedWithHeader`` says: the records are readable, or sealed with a key.
    public enum SealedWith: Sendable, Equatable, CustomStringConvertible {
        case none
        case key(String)

        /// `none` or a key id; nil for anything else.
        public init?(header: String) {
            if header == "none" {
                self = .none
            } else if Wire.isKeyID(header) {
                self = .key(header)
            } else {
                return nil
            }
        }

        public init(keyID: String?) { self = keyID.map { .key($0) } ?? .none }

        /// The key id, nil for readable records.
        public var keyID: String? {
            if case .key(let id) = self { return id }
            return nil
        }

        public var description: String { keyID ?? "none" }
    }

    /// The field that carries a sealed record's readable key.
    public static let sealedKeyField = "e2e.key"
    /// Field names starting with this are encryption's own.
    public static let sealedFieldPrefix = "e2e."

    /// How an encrypted account's changes are sealed (docs/sealed-format-v2.md):
    /// format 1 seals each value by itself, format 2 each write once, in a box.
    public enum SealedFormat: Int, Sendable, Comparable, CaseIterable {
        case one = 1
        case two = 2

        public static func < (a: Self, b: Self) -> Bool { a.rawValue < b.rawValue }
    }

    /// Whether `text` is an account key's id: 16 lower-case hex digits
    /// (HKDF-derived; it reveals nothing of the key).
    public static func isKeyID(_ text: String) -> Bool { isDigest(text) }

    /// The optional `"key"` of a request: an account key's id.
    static func keyID(in object: [String: JSONValue]) throws(Problem) -> String? {
        guard let value = object["key"] else { return nil }
        guard let text = value.stringValue, isKeyID(text) else {
            throw Problem("\"key\" must be an account key's id (16 hex digits)")
        }
        return text
    }

    /// Whether `key` is a hidden record key: `h1.` and 43 base64url
    /// characters (an HMAC-SHA256).
    public static func isHiddenKey(_ key: String) -> Bool {
        isPrefixedBase64URL(key, prefix: "h1.", minimumLength: 46, maximumLength: 46)
    }

    /// Whether `text` is `prefix` (3 ASCII characters) and base64url, of a
    /// length in the range, read straight from its UTF-8 (the server checks
    /// every key and sealed value of every push).
    private static func isPrefixedBase64URL(
        _ text: String, prefix: StaticString, minimumLength: Int, maximumLength: Int
    ) -> Bool {
        func check(_ utf8: UnsafeBufferPointer<UInt8>) -> Bool {
            utf8.count >= minimumLength && utf8.count <= maximumLength && utf8[0] == prefix.utf8Start[0]
                && utf8[1] == prefix.utf8Start[1]
                && utf8[2] == prefix.utf8Start[2] && allBase64URL(UnsafeBufferPointer(rebasing: utf8[3...]))
        }
        return text.utf8.withContiguousStorageIfAvailable(check) ?? Array(text.utf8).withUnsafeBufferPointer(check)
    }

    /// Whether `value` is a sealed value: `e1.` and base64url (nonce,
    /// ciphertext and tag: at least 28 bytes, so at least 38 characters).
    public static func isSealedValue(_ value: JSONValue) -> Bool {
        guard case .string(let text) = value else { return false }
        return isPrefixedBase64URL(text, prefix: "e1.", minimumLength: 3 + 38, maximumLength: .max)
    }

    public static func isBase64URL(_ byte: UInt8) -> Bool {
        (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte) || (0x30...0x39).contains(byte) || byte == 0x2D
            || byte == 0x5F
    }

    /// Whether every byte is a base64url digit (a table look-up per byte:
    /// the server checks every sealed value of every push).
    static func allBase64URL(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        base64URLTable.withUnsafeBufferPointer { table in
            var all: UInt8 = 1
            for byte in bytes { all &= table[Int(byte)] }
            return all == 1
        }
    }

    private static let base64URLTable: [UInt8] = (0...255).map { isBase64URL(UInt8($0)) ? 1 : 0 }

    /// Why `change` is not in the sealed form an encrypted account takes, or
    /// nil when it is: a hidden key, the sealed key field, and every value
    /// sealed (by itself, or in a box) except the deletion flag (which the
    /// server keeps readable to keep and purge tombstones).
    public static func sealedProblem(_ change: ChangeRecord) -> String? {
        // Built only for a refusal: checking 10,000 sealed changes builds none.
        var shown: String { DisplayText.printable(change.key.prefix(60)) }
        if change.collection == .ledger { return ledgerProblem(change) }
        guard isHiddenKey(change.key) else { return "\(change.collection.rawValue) '\(shown)' has a readable key" }
        // A change whose fields all left it (re-stamped after they were
        // overwritten) keeps its number and holds nothing to seal.
        if change.state.fields.isEmpty { return nil }
        guard change.state.fields[sealedKeyField] != nil else {
            return "\(change.collection.rawValue) '\(shown)' has no sealed key"
        }
        // The box last found: the fields of one write name it, read once.
        var box: StampedValue?
        for (name, register) in change.state.fields {
            if name == RecordState.deletedField {
                guard case .bool = register.value else {
                    return "\(change.collection.rawValue) '\(shown)': its deletion flag is not true or false"
                }
                continue
            }
            if register == box { continue }
            if RecordState.isBox(register.value) {
                box = register
                continue
            }
            // Sealed by itself (format 1) or in a box (format 2).
            guard isSealedValue(register.value) else {
                return
                    "\(change.collection.rawValue) '\(shown)' field \"\(DisplayText.printable(name.prefix(60)))\" is readable"
            }
        }
        return nil
    }

    /// Why `change` is not a ledger record in the sealed form, or nil: a
    /// readable key naming a device's shard, head or pending slot
    /// (``Ledger/Key``), and no field but the sealed ``ledgerField``. A
    /// ledger record is never deleted (its slot or shard is written over):
    /// a deletion flag would let a server that sets it retire a record
    /// that names what it withholds.
    public static func ledgerProblem(_ change: ChangeRecord) -> String? {
        var shown: String { DisplayText.printable(change.key.prefix(60)) }
        guard Ledger.Key(change.key) != nil else {
            return "ledger '\(shown)' is not DEVICE/SHARD, DEVICE/head, DEVICE/pending/SLOT or DEVICE/withdrawn/SLOT"
        }
        for (name, register) in change.state.fields {
            switch name {
            case RecordState.deletedField:
                return "ledger '\(shown)': a ledger record is never deleted"
            case ledgerField:
                guard isSealedValue(register.value) else { return "ledger '\(shown)' is readable" }
            default:
                return
                    "ledger '\(shown)' has a field \"\(DisplayText.printable(name.prefix(60)))\" besides \"\(ledgerField)\""
            }
        }
        return nil
    }

    /// Why a record's deletion flag is unusable (it is not true or false), or
    /// nil: the flag stays readable in every account, and a record must say
    /// whether it is deleted.
    public static func deletionFlagProblem(_ state: RecordState) -> String? {
        guard let flag = state.fields[RecordState.deletedField] else { return nil }
        if case .bool = flag.value { return nil }
        return "its deletion flag \"\(RecordState.deletedField)\" is not true or false"
    }

    /// Whether `change` carries end-to-end encryption's fields, or a box
    /// (sealed format 2, ``RecordState/isBox(_:)``): such a change does not
    /// belong in an account that is not encrypted.
    public static func looksSealed(_ change: ChangeRecord) -> Bool {
        change.state.fields.contains { $0.key.hasPrefix(sealedFieldPrefix) || RecordState.isBox($0.value.value) }
    }
}
