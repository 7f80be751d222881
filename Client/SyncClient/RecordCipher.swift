import Cryptography
import JSON
import Model
import Net
import SyncCore

/// Hides record keys and seals field values so that the server merges what
/// it cannot read. The merge needs only stamps and version
/// vectors, which stay readable; everything else is HMAC'd or sealed.
public struct RecordCipher: Sendable {
    let valueKey: Crypto.GCMKey
    private let nameKey: Crypto.HMACKey
    let nonceKey: Crypto.HMACKey

    public init(_ key: AccountKey) {
        valueKey = Crypto.GCMKey(key.valueKey)
        nameKey = Crypto.HMACKey(key.nameKey)
        nonceKey = Crypto.HMACKey(key.nonceKey)
    }

    /// A record's key as the server sees it: `h1.` and the base64url
    /// HMAC-SHA256 of the collection and the key. The same pattern written on
    /// two machines is still one record; the server cannot read it.
    public func hiddenKey(collection: String, key: String) -> String {
        var output = Array("h1.".utf8)
        Crypto.base64URL(nameCode(collection: collection, key: key), into: &output)
        return String(decoding: output, as: UTF8.self)
    }

    /// A record's tag, as a device's ledger names it (``Ledger/Entry/tag``):
    /// the first 8 bytes of its hidden key's HMAC, big-endian.
    public func tag(collection: String, key: String) -> UInt64 {
        nameCode(collection: collection, key: key).prefix(8).reduce(0) { $0 << 8 | UInt64($1) }
    }

    /// The HMAC-SHA256 of the collection and the key that names a record.
    private func nameCode(collection: String, key: String) -> [UInt8] {
        var message: [UInt8] = []
        message.reserveCapacity(collection.utf8.count + 1 + key.utf8.count)
        message += collection.utf8
        message.append(0)
        message += key.utf8
        return nameKey.code(message)
    }

    /// The data a sealed value is bound to (its associated data): the server
    /// cannot move a value to another record, field or stamp without it
    /// failing to open. For one record's values the label, the collection and
    /// the hidden key are written once; each value adds its field and stamp.
    struct Binding {
        private var bytes: [UInt8]
        private let recordPart: Int

        /// - Parameter label: `brsync-e2e-v1` binds a value (and its field),
        ///   `brsync-e2e-v2` a box (``RecordCipher/sealBox(_:collection:hiddenKey:stamp:)``).
        init(collection: String, hiddenKey: String, label: String = "brsync-e2e-v1") {
            bytes = Array(label.utf8)
            bytes.reserveCapacity(bytes.count + 16 + collection.utf8.count + hiddenKey.utf8.count + 96)
            Self.append(collection.utf8, to: &bytes)
            Self.append(hiddenKey.utf8, to: &bytes)
            recordPart = bytes.count
        }

        /// The binding of the value of `field` under `stamp` (its text's bytes).
        mutating func bytes(field: String, stamp: [UInt8]) -> [UInt8] {
            bytes.removeSubrange(recordPart...)
            Self.append(field.utf8, to: &bytes)
            Self.append(stamp, to: &bytes)
            return bytes
        }

        /// The binding of a box sealed under `stamp` (its text's bytes): no
        /// field, the names are inside the sealed text.
        mutating func bytes(stamp: [UInt8]) -> [UInt8] {
            bytes.removeSubrange(recordPart...)
            Self.append(stamp, to: &bytes)
            return bytes
        }

        /// Appends a part, length-prefixed (32 bits, big-endian), so no two
        /// different bindings have the same bytes.
        private static func append(_ part: some Collection<UInt8>, to bytes: inout [UInt8]) {
            let count = UInt32(part.count)
            bytes.append(UInt8(count >> 24))
            bytes.append(UInt8(count >> 16 & 255))
            bytes.append(UInt8(count >> 8 & 255))
            bytes.append(UInt8(count & 255))
            bytes += part
        }
    }

    /// A field value (its JSON text) sealed with AES-256-GCM: `e1.` and the
    /// base64url of nonce, ciphertext and tag.
    ///
    /// The nonce is synthetic: the first 12 bytes of HMAC-SHA256 (a key of
    /// its own) over the binding and the value. Sealing the same value of the
    /// same field, record and stamp twice gives the same bytes, so a push
    /// sent again after a lost answer is the same push, and the client and
    /// the server chain the same bytes (how a copied home is noticed). Two
    /// different values, or one value under two stamps, get unrelated
    /// nonces; since every write has a stamp of its own, equal ciphertexts
    /// only ever show a write sent twice.
    public func seal(_ value: String, collection: String, hiddenKey: String, field: String, stamp: String) -> String {
        seal(bytes: Array(value.utf8), collection: collection, hiddenKey: hiddenKey, field: field, stamp: stamp)
    }

    /// As ``seal(_:collection:hiddenKey:field:stamp:)``, of the value's UTF-8 bytes.
    func seal(bytes plaintext: [UInt8], collection: String, hiddenKey: String, field: String, stamp: String) -> String {
        var sealer = Sealer(self, collection: collection, hiddenKey: hiddenKey)
        return sealer.seal(plaintext, field: field, stamp: Array(stamp.utf8))
    }

    /// Seals the values of one record: the record's part of the binding is
    /// written once and the buffers are reused (a push of 10,000 rules seals
    /// 70,000 values).
    struct Sealer {
        let cipher: RecordCipher
        private var binding: Binding
        private var combined: [UInt8] = []
        private var padded: [UInt8] = []
        private var stampBytes: [UInt8] = []

        private let collection: String

        init(_ cipher: RecordCipher, collection: String, hiddenKey: String, label: String = "brsync-e2e-v1") {
            self.cipher = cipher
            self.collection = collection
            binding = Binding(collection: collection, hiddenKey: hiddenKey, label: label)
        }

        /// `text` sealed for `field` under `stamp` (its text's bytes),
        /// padded first (``RecordCipher/paddedLength(_:minimum:)``, at least
        /// ``RecordCipher/smallestClass(collection:field:)``).
        /// - Parameter padding: false for a text whose size tells the server
        ///   nothing it does not see anyway (a manifest: field names, stamps
        ///   and version vectors are readable).
        mutating func seal(_ text: [UInt8], field: String, stamp: [UInt8], padding: Bool = true) -> String {
            padded.removeAll(keepingCapacity: true)
            padded += text
            if padding {
                let length = RecordCipher.paddedLength(
                    text.count, minimum: RecordCipher.smallestClass(collection: collection, field: field))
                padded.append(contentsOf: repeatElement(UInt8(ascii: " "), count: length - text.count))
            }
            return seal(padded, binding: binding.bytes(field: field, stamp: stamp), prefix: RecordCipher.sealedPrefix)
        }

        /// A box: `text` (padded inside already) sealed under `stamp`.
        mutating func sealBox(_ text: [UInt8], stamp: HLCTimestamp) -> String {
            stampBytes.removeAll(keepingCapacity: true)
            stamp.write(into: &stampBytes)
            return seal(text, binding: binding.bytes(stamp: stampBytes), prefix: RecordCipher.boxPrefix)
        }

        /// `write` sealed as the box of `stamp`.
        mutating func box(_ write: RecordCipher.Write, stamp: HLCTimestamp) -> String {
            sealBox(RecordCipher.boxText(write, collection: collection, stamp: stamp), stamp: stamp)
        }

        /// `plaintext` sealed with `binding` as its associated data: `prefix`
        /// and the base64url of nonce, ciphertext and tag.
        private mutating func seal(_ plaintext: [UInt8], binding: [UInt8], prefix: [UInt8]) -> String {
            let total = 12 + plaintext.count + 16
            if combined.count < total { combined = [UInt8](repeating: 0, count: total) }
            let cipher = cipher
            return binding.withUnsafeBufferPointer { binding in
                plaintext.withUnsafeBufferPointer { plaintext in
                    combined.withUnsafeMutableBufferPointer { combined in
                        let output = combined.baseAddress!
                        // The synthetic nonce: HMAC-SHA256 of binding and value, its first 12 bytes.
                        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 32) { code in
                            cipher.nonceKey.code(
                                UnsafeRawBufferPointer(binding), UnsafeRawBufferPointer(plaintext),
                                into: code.baseAddress!)
                            cipher.valueKey.seal(
                                plaintext, authenticated: binding, nonce: code.baseAddress!, into: output)
                        }
                        return Crypto.base64URLString(prefix: prefix, UnsafeBufferPointer(start: output, count: total))
                    }
                }
            }
        }
    }

    /// The value `seal` sealed, when the key, the record, the field and the
    /// stamp are those it was sealed with.
    /// - Throws: ``RecordCipherError`` naming the record and the field.
    public func open(
        _ sealed: String, collection: String, hiddenKey: String, field: String, stamp: String
    ) throws(RecordCipherError) -> String {
        let plaintext = try openBytes(sealed, collection: collection, hiddenKey: hiddenKey, field: field, stamp: stamp)
        guard let text = String(validUTF8: plaintext) else {
            throw RecordCipherError(
                message: "\(Self.place(collection, hiddenKey, field)): the opened value is not text")
        }
        return text
    }

    /// Where a value was sealed, for an error (opening thousands of records builds none).
    static func place(_ collection: String, _ hiddenKey: String, _ field: String) -> String {
        "\(collection)/\(DisplayText.printable(hiddenKey.prefix(80))) field \"\(DisplayText.printable(field.prefix(80)))\""
    }

    /// The bytes `seal` sealed (see ``open(_:collection:hiddenKey:field:stamp:)``).
    func openBytes(
        _ sealed: String, collection: String, hiddenKey: String, field: String, stamp: String
    ) throws(RecordCipherError) -> [UInt8] {
        var opener = Opener(self, collection: collection, hiddenKey: hiddenKey)
        return try opener.open(sealed, field: field, stamp: Array(stamp.utf8))
    }

    /// Opens the values of one record, the record's part of the binding
    /// written once (see ``Sealer``).
    struct Opener {
        let cipher: RecordCipher
        let collection: String
        let hiddenKey: String
        private var binding: Binding

        init(_ cipher: RecordCipher, collection: String, hiddenKey: String, label: String = "brsync-e2e-v1") {
            self.cipher = cipher
            self.collection = collection
            self.hiddenKey = hiddenKey
            binding = Binding(collection: collection, hiddenKey: hiddenKey, label: label)
        }

        /// The bytes sealed for `field` under `stamp` (its text's bytes);
        /// `padded`: a JSON text padded with spaces, which are dropped.
        mutating func open(
            _ sealed: String, field: String, stamp: [UInt8], padded: Bool = true
        ) throws(RecordCipherError) -> [UInt8] {
            guard
                var opened = open(
                    sealed, prefix: RecordCipher.sealedPrefix, binding: binding.bytes(field: field, stamp: stamp))
            else {
                throw RecordCipherError(
                    message: Self.sealedForm(sealed, RecordCipher.sealedPrefix)
                        ? "\(RecordCipher.place(collection, hiddenKey, field)) does not open: a wrong account key, or the value was changed, moved to another record or field, or replayed under another stamp"
                        : "\(RecordCipher.place(collection, hiddenKey, field)): not a sealed value (a plaintext value in an encrypted account?)"
                )
            }
            // The padding (spaces, which JSON ignores after a value).
            while padded, opened.last == UInt8(ascii: " ") { opened.removeLast() }
            return opened
        }

        /// The bytes of a box sealed under `stamp` (its text's bytes), padding
        /// included (JSON ignores it); nil when it does not open (or is not a box).
        mutating func openBox(_ sealed: String, stamp: [UInt8]) -> [UInt8]? {
            open(sealed, prefix: RecordCipher.boxPrefix, binding: binding.bytes(stamp: stamp))
        }

        /// Whether `sealed` is `prefix` and base64url.
        static func sealedForm(_ sealed: String, _ prefix: [UInt8]) -> Bool {
            var sealed = sealed
            return sealed.withUTF8 { utf8 in
                utf8.starts(with: prefix)
                    && Crypto.base64URLDecode(utf8: UnsafeBufferPointer(rebasing: utf8[prefix.count...])) != nil
            }
        }

        /// What `sealed` (`prefix` and base64url) holds when it opens with
        /// `binding` as its associated data; nil when it is not that form or does not open.
        private func open(_ sealed: String, prefix: [UInt8], binding: [UInt8]) -> [UInt8]? {
            var sealed = sealed
            let combined = sealed.withUTF8 { utf8 in
                utf8.starts(with: prefix)
                    ? Crypto.base64URLDecode(utf8: UnsafeBufferPointer(rebasing: utf8[prefix.count...])) : nil
            }
            guard let combined else { return nil }
            return try? cipher.valueKey.open(combined, authenticated: binding)
        }

        /// A JSON value sealed for `field` under `stamp`, parsed from the opened bytes (the parser checks their UTF-8).
        mutating func openValue(_ sealed: String, field: String, stamp: [UInt8]) throws(RecordCipherError) -> JSONValue
        {
            let bytes = try open(sealed, field: field, stamp: stamp)
            do {
                return try bytes.withUnsafeBufferPointer { buffer throws(JSONValue.ParseError) in
                    try JSONValue.parse(utf8: buffer)
                }
            } catch {
                throw RecordCipherError(
                    message: "\(RecordCipher.place(collection, hiddenKey, field)): the opened value is not JSON")
            }
        }
    }

    static let sealedPrefix = Array("e1.".utf8)
    /// A box's prefix (sealed format 2: one write of a record).
    static let boxPrefix = Array(RecordState.boxPrefix.utf8)

    /// The length a value's JSON text of `count` bytes is padded to before
    /// it is sealed, with spaces (JSON ignores them after a value): 16, 32,
    /// 64, 128, 256 or 512 bytes, then whole KiB, so a sealed value's size names
    /// a size class, never a browser id or a pattern. Never past the
    /// largest text a value may have (``Wire/maxSealedValueBytes``).
    /// - Parameter minimum: the smallest class (a power of two up to 512).
    public static func paddedLength(_ count: Int, minimum: Int = 16) -> Int {
        let padded =
            count <= minimum
            ? minimum
            : count <= 512 ? 1 << (Int.bitWidth - (count - 1).leadingZeroBitCount) : (count + 1023) / 1024 * 1024
        return max(count, min(padded, maxPaddedLength))
    }

    /// The smallest size class of a field's values. 16 bytes but for the
    /// values that would otherwise tell the server which browser a record
    /// names: a rule's `browser` (ids up to 30 characters: 32 bytes), and
    /// every value of a browser record (names, iOS schemes and link formats
    /// of every catalog browser fit 64 bytes; its id, the sealed key, 32).
    static func smallestClass(collection: String, field: String) -> Int {
        switch collection {
        case RecordCollection.browsers.rawValue: return field == keyField ? 32 : 64
        case RecordCollection.rules.rawValue where field == "browser": return 32
        // A setting's value may be a browser id (the default browser).
        case RecordCollection.settings.rawValue where field == "value": return 32
        default: return 16
        }
    }

    /// The longest padded text: a sealed value of it is at most ``Wire/maxSealedValueBytes``.
    public static let maxPaddedLength = (Wire.maxSealedValueBytes - 3) / 4 * 3 - 28

    /// A JSON value `seal` sealed, parsed from the opened bytes (the parser checks their UTF-8).
    func openValue(
        _ sealed: String, collection: String, hiddenKey: String, field: String, stamp: String
    ) throws(RecordCipherError) -> JSONValue {
        var opener = Opener(self, collection: collection, hiddenKey: hiddenKey)
        return try opener.openValue(sealed, field: field, stamp: Array(stamp.utf8))
    }
}

extension RecordCipher {
    /// The field that carries a record's readable key, sealed (the server
    /// sees only the hidden key). It is stamped with the change's newest
    /// stamp; every copy holds the same key, so whichever wins a merge opens
    /// to it.
    public static let keyField = Wire.sealedKeyField
    /// The sealed twin of the deletion flag: the flag stays readable (the
    /// server keeps tombstones and purges them), and the twin, sealed under
    /// the same stamp, proves the device wrote it (a server cannot delete a
    /// record by setting the flag).
    public static let deletedTwinField = RecordState.deletedTwinField
    /// The sealed ``RecordManifest`` of a change, stamped with its newest
    /// stamp like ``keyField``: the merged record keeps its newest writer's.
    public static let manifestField = "e2e.manifest"

    /// A change as the server of an encrypted account sees it: the hidden
    /// key, every field value sealed (the deletion flag stays readable, with
    /// its sealed twin), the readable key sealed in ``keyField``. Stamps,
    /// version vectors and the change number stay as they are: they are all
    /// the merge needs.
    /// A change with no field (re-stamping took them all; it keeps its
    /// number) gets only its hidden key: there is nothing to seal, and no
    /// client opens a record without fields (nothing to apply).
    /// - Parameter format: format 2 seals each write of the change once, in
    ///   a box (``sealBoxes(_:)``); the ledger is sealed in format 1 either way.
    /// - Throws: ``RecordCipherError`` for a field named like the cipher's
    ///   own (`e2e.` and a name).
    public func seal(_ change: ChangeRecord, format: Wire.SealedFormat = .one) throws(RecordCipherError) -> ChangeRecord
    {
        if change.collection == .ledger { return try sealLedger(change) }
        try Self.checkOwnNames(change)
        if format == .two { return try sealBoxes(change) }
        let collection = change.collection.rawValue
        let hidden = hiddenKey(collection: collection, key: change.key)
        var sealer = Sealer(self, collection: collection, hiddenKey: hidden)
        var fields = [String: StampedValue](minimumCapacity: change.state.fields.count + 2)
        var stamps = HLCTimestamp.TextCache()
        var value: [UInt8] = []
        var newest: HLCTimestamp?
        for (name, register) in change.state.fields {
            if newest.map({ register.stamp > $0 }) ?? true { newest = register.stamp }
            value.removeAll(keepingCapacity: true)
            register.value.write(into: &value)
            let sealed = sealer.seal(value, field: name, stamp: stamps.text(of: register.stamp))
            if name == RecordState.deletedField {
                fields[name] = register
                fields[Self.deletedTwinField] = StampedValue(.string(sealed), stamp: register.stamp)
            } else {
                fields[name] = StampedValue(.string(sealed), stamp: register.stamp)
            }
        }
        if let newest {
            let stamp = stamps.text(of: newest)
            value.removeAll(keepingCapacity: true)
            JSONValue.string(change.key).write(into: &value)
            fields[Self.keyField] = StampedValue(
                .string(sealer.seal(value, field: Self.keyField, stamp: stamp)), stamp: newest)
            value.removeAll(keepingCapacity: true)
            // The one the log kept (the record just after the edit), else the
            // change's own fields and versions (a whole record relayed, a
            // change logged before manifests were kept).
            if let text = change.manifestText {
                value += text.utf8
            } else {
                Self.manifest(of: change, newest: newest).write(at: newest, into: &value)
            }
            fields[Self.manifestField] = StampedValue(
                .string(sealer.seal(value, field: Self.manifestField, stamp: stamp, padding: false)), stamp: newest)
        }
        return ChangeRecord(
            sequence: change.sequence, collection: change.collection, key: hidden,
            state: RecordState(fields: fields, versions: change.state.versions))
    }

    /// Refuses a change with a field named like the cipher's own (`e2e.` and a name).
    static func checkOwnNames(_ change: ChangeRecord) throws(RecordCipherError) {
        guard let name = change.state.fields.keys.first(where: { $0.hasPrefix(Wire.sealedFieldPrefix) }) else {
            return
        }
        throw RecordCipherError(
            message:
                "\(change.collection.rawValue) '\(DisplayText.printable(change.key.prefix(80)))' has a field named \"\(DisplayText.printable(name.prefix(80)))\": names starting with e2e. are end-to-end encryption's own"
        )
    }

    /// The manifest of `change`, whose newest stamp is `newest`: the one the
    /// log kept (the record just after the edit), else the change's own
    /// fields and versions (a whole record relayed, a change logged before
    /// manifests were kept).
    static func manifest(of change: ChangeRecord, newest: HLCTimestamp) -> RecordManifest {
        if let text = change.manifestText, let json = try? JSONValue.parse(text),
            let kept = try? RecordManifest(json: json, at: newest)
        {
            return kept
        }
        return RecordManifest(of: change.state, through: newest)
    }
}

public struct RecordCipherError: Error, Sendable, CustomStringConvertible {
    public let message: String
    /// The record's key as the user knows it, when it opened that far.
    public var shownKey: String?
    public var description: String { message }

    public init(message: String, shownKey: String? = nil) {
        self.message = message
        self.shownKey = shownKey
    }
}
