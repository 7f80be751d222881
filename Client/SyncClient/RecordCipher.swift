import Cryptography
import JSON
import Model
import Net
import SyncCore

/// The account key of end-to-end encryption (Deploy/SECURITY.md):
/// 256 random bits made on the first device, shown once as a recovery code,
/// given to other devices when they join. Only devices hold it.
public struct AccountKey: Sendable, Equatable {
    public let bytes: [UInt8]

    public init(bytes: [UInt8]) throws(RecoveryCodeError) {
        guard bytes.count == 32 else { throw RecoveryCodeError(message: "an account key is 32 bytes; this one has \(bytes.count)") }
        self.bytes = bytes
    }

    /// A new key from OpenSSL's CSPRNG.
    public static func generate() -> AccountKey {
        // 32 bytes always make a key.
        (try? AccountKey(bytes: Crypto.randomBytes(32)))!
    }

    // MARK: Recovery code

    /// Crockford's base32 alphabet: no I, L, O or U, so what is read aloud or
    /// copied by hand is hard to get wrong (I and L read as 1, O as 0).
    static let alphabet = Array("0123456789ABCDEFGHJKMNPQRSTVWXYZ".utf8)

    /// The key and a 16-bit checksum (the first two bytes of its SHA-256) in
    /// Crockford base32, in groups of five separated by dashes: 55 characters
    /// in 11 groups. The checksum catches a mistyped or swapped character.
    public var recoveryCode: String {
        let payload = bytes + Array(Crypto.sha256(bytes).prefix(2))
        var characters: [UInt8] = []
        var buffer = 0
        var bits = 0
        for byte in payload {
            buffer = (buffer << 8) | Int(byte)
            bits += 8
            while bits >= 5 {
                bits -= 5
                characters.append(Self.alphabet[(buffer >> bits) & 31])
            }
            buffer &= (1 << bits) - 1
        }
        if bits > 0 { characters.append(Self.alphabet[(buffer << (5 - bits)) & 31]) }
        var grouped: [UInt8] = []
        for (index, character) in characters.enumerated() {
            if index > 0 && index % 5 == 0 { grouped.append(UInt8(ascii: "-")) }
            grouped.append(character)
        }
        return String(decoding: grouped, as: UTF8.self)
    }

    /// Reads a recovery code as typed: any case, spaces and dashes anywhere,
    /// I and L for 1, O for 0.
    /// - Throws: ``RecoveryCodeError`` saying what is wrong (a character that
    ///   is not in the code's alphabet, a wrong length, a checksum that does
    ///   not match: a typo).
    public init(recoveryCode text: String) throws(RecoveryCodeError) {
        var values: [Int] = []
        for scalar in text.unicodeScalars {
            if scalar == " " || scalar == "-" || scalar == "\t" { continue }
            guard scalar.isASCII else { throw RecoveryCodeError(message: "a recovery code holds letters and digits only; '\(scalar)' is not one") }
            var byte = UInt8(scalar.value)
            if byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z") { byte -= 0x20 }
            switch byte {
            case UInt8(ascii: "I"), UInt8(ascii: "L"): byte = UInt8(ascii: "1")
            case UInt8(ascii: "O"): byte = UInt8(ascii: "0")
            default: break
            }
            guard let value = Self.alphabet.firstIndex(of: byte) else {
                throw RecoveryCodeError(message: "'\(scalar)' is not in a recovery code (it has no U)")
            }
            values.append(value)
        }
        guard values.count == 55 else {
            throw RecoveryCodeError(message: "a recovery code has 55 letters and digits (11 groups of 5); this one has \(values.count)")
        }
        var bytes: [UInt8] = []
        var buffer = 0
        var bits = 0
        for value in values {
            buffer = (buffer << 5) | value
            bits += 5
            if bits >= 8 {
                bits -= 8
                bytes.append(UInt8((buffer >> bits) & 0xFF))
                buffer &= (1 << bits) - 1
            }
        }
        // The last character's three spare bits are zero in every code: any
        // other last character is a typo too, not the same key.
        guard bytes.count == 34, buffer == 0, Array(Crypto.sha256(Array(bytes.prefix(32))).prefix(2)) == Array(bytes.suffix(2)) else {
            throw RecoveryCodeError(message: "the recovery code's checksum does not match: a character was mistyped")
        }
        try self.init(bytes: Array(bytes.prefix(32)))
    }

    // MARK: Derived keys

    static let salt = Array("brsync end-to-end v1".utf8)

    /// The key values are sealed with (HKDF-SHA256, info "values").
    var valueKey: [UInt8] { Crypto.hkdfSHA256(key: bytes, salt: Self.salt, info: Array("values".utf8), length: 32) }
    /// The key record keys are hidden with (HKDF-SHA256, info "record keys").
    var nameKey: [UInt8] { Crypto.hkdfSHA256(key: bytes, salt: Self.salt, info: Array("record keys".utf8), length: 32) }
    /// A name for the key that reveals nothing of it (HKDF-SHA256, info
    /// "key id"): the replica remembers which key it synced with.
    public var id: String { Crypto.hex(Crypto.hkdfSHA256(key: bytes, salt: Self.salt, info: Array("key id".utf8), length: 8)) }
    /// The key nonces are derived with (HKDF-SHA256, info "nonces").
    var nonceKey: [UInt8] { Crypto.hkdfSHA256(key: bytes, salt: Self.salt, info: Array("nonces".utf8), length: 32) }
    /// The Ed25519 key pair that proves a write comes from a holder of this
    /// key: its seed is HKDF-SHA256 with info "signing" (RFC 8032's private
    /// key), so every holder, the phone included, derives the same pair.
    public func signingKey() -> Crypto.SigningKey {
        Crypto.SigningKey(seed: Crypto.hkdfSHA256(key: bytes, salt: Self.salt, info: Array("signing".utf8), length: 32))
    }

    /// The signing public key in base64url, as the protocol names it.
    public var signingPublicKey: String { Crypto.base64URL(signingKey().publicKey) }

    /// A certificate, signed with this key, that `account` moves from this
    /// key to `next` (see ``KeyCertificate``).
    public func certify(_ next: AccountKey, account: String) -> KeyCertificate {
        let publicKey = next.signingPublicKey
        let statement = KeyCertificate.statement(account: account, from: id, to: next.id, publicKey: publicKey)
        return KeyCertificate(from: id, to: next.id, publicKey: publicKey, signature: Crypto.base64URL(signingKey().sign(statement)))
    }
}

public struct RecoveryCodeError: Error, Sendable, CustomStringConvertible {
    public let message: String
    public var description: String { message }
}

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
        var message: [UInt8] = []
        message.reserveCapacity(collection.utf8.count + 1 + key.utf8.count)
        message += collection.utf8
        message.append(0)
        message += key.utf8
        var output = Array("h1.".utf8)
        Crypto.base64URL(nameKey.code(message), into: &output)
        return String(decoding: output, as: UTF8.self)
    }

    /// The data a sealed value is bound to (its associated data): the server
    /// cannot move a value to another record, field or stamp without it
    /// failing to open. For one record's values the label, the collection and
    /// the hidden key are written once; each value adds its field and stamp.
    struct Binding {
        private var bytes: [UInt8]
        private let recordPart: Int

        init(collection: String, hiddenKey: String) {
            bytes = Array("brsync-e2e-v1".utf8)
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

        init(_ cipher: RecordCipher, collection: String, hiddenKey: String) {
            self.cipher = cipher
            binding = Binding(collection: collection, hiddenKey: hiddenKey)
        }

        /// `text` sealed for `field` under `stamp` (its text's bytes),
        /// padded first (``RecordCipher/paddedLength(_:)``).
        mutating func seal(_ text: [UInt8], field: String, stamp: [UInt8]) -> String {
            padded.removeAll(keepingCapacity: true)
            padded += text
            padded.append(contentsOf: repeatElement(UInt8(ascii: " "), count: RecordCipher.paddedLength(text.count) - text.count))
            let plaintext = padded
            let binding = binding.bytes(field: field, stamp: stamp)
            let total = 12 + plaintext.count + 16
            if combined.count < total { combined = [UInt8](repeating: 0, count: total) }
            let cipher = cipher
            return binding.withUnsafeBufferPointer { binding in
                plaintext.withUnsafeBufferPointer { plaintext in
                    combined.withUnsafeMutableBufferPointer { combined in
                        let output = combined.baseAddress!
                        // The synthetic nonce: HMAC-SHA256 of binding and value, its first 12 bytes.
                        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 32) { code in
                            cipher.nonceKey.code(UnsafeRawBufferPointer(binding), UnsafeRawBufferPointer(plaintext), into: code.baseAddress!)
                            cipher.valueKey.seal(plaintext, authenticated: binding, nonce: code.baseAddress!, into: output)
                        }
                        return Crypto.base64URLString(prefix: RecordCipher.sealedPrefix, UnsafeBufferPointer(start: output, count: total))
                    }
                }
            }
        }
    }

    /// The value `seal` sealed, when the key, the record, the field and the
    /// stamp are those it was sealed with.
    /// - Throws: ``RecordCipherError`` naming the record and the field.
    public func open(_ sealed: String, collection: String, hiddenKey: String, field: String, stamp: String) throws(RecordCipherError) -> String {
        let plaintext = try openBytes(sealed, collection: collection, hiddenKey: hiddenKey, field: field, stamp: stamp)
        guard let text = String(validUTF8: plaintext) else {
            throw RecordCipherError(message: "\(Self.place(collection, hiddenKey, field)): the opened value is not text")
        }
        return text
    }

    /// Where a value was sealed, for an error (opening thousands of records builds none).
    static func place(_ collection: String, _ hiddenKey: String, _ field: String) -> String {
        "\(collection)/\(DisplayText.printable(hiddenKey.prefix(80))) field \"\(DisplayText.printable(field.prefix(80)))\""
    }

    /// The bytes `seal` sealed (see ``open(_:collection:hiddenKey:field:stamp:)``).
    func openBytes(_ sealed: String, collection: String, hiddenKey: String, field: String, stamp: String) throws(RecordCipherError) -> [UInt8] {
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

        init(_ cipher: RecordCipher, collection: String, hiddenKey: String) {
            self.cipher = cipher
            self.collection = collection
            self.hiddenKey = hiddenKey
            binding = Binding(collection: collection, hiddenKey: hiddenKey)
        }

        /// The bytes sealed for `field` under `stamp` (its text's bytes).
        mutating func open(_ sealed: String, field: String, stamp: [UInt8]) throws(RecordCipherError) -> [UInt8] {
            var sealed = sealed
            let combined = sealed.withUTF8 { utf8 in
                utf8.starts(with: RecordCipher.sealedPrefix) ? Crypto.base64URLDecode(utf8: UnsafeBufferPointer(rebasing: utf8[3...])) : nil
            }
            guard let combined else {
                throw RecordCipherError(message: "\(RecordCipher.place(collection, hiddenKey, field)): not a sealed value (a plaintext value in an encrypted account?)")
            }
            do {
                var opened = try cipher.valueKey.open(combined, authenticated: binding.bytes(field: field, stamp: stamp))
                // The padding (spaces, which JSON ignores after a value).
                while opened.last == UInt8(ascii: " ") { opened.removeLast() }
                return opened
            } catch {
                throw RecordCipherError(message: "\(RecordCipher.place(collection, hiddenKey, field)) does not open: a wrong account key, or the value was changed, moved to another record or field, or replayed under another stamp")
            }
        }

        /// A JSON value sealed for `field` under `stamp`, parsed from the opened bytes (the parser checks their UTF-8).
        mutating func openValue(_ sealed: String, field: String, stamp: [UInt8]) throws(RecordCipherError) -> JSONValue {
            let bytes = try open(sealed, field: field, stamp: stamp)
            do {
                return try bytes.withUnsafeBufferPointer { buffer throws(JSONValue.ParseError) in try JSONValue.parse(utf8: buffer) }
            } catch {
                throw RecordCipherError(message: "\(RecordCipher.place(collection, hiddenKey, field)): the opened value is not JSON")
            }
        }
    }

    static let sealedPrefix = Array("e1.".utf8)

    /// The length a value's JSON text of `count` bytes is padded to before
    /// it is sealed, with spaces (JSON ignores them after a value): 16, 32,
    /// 64, 128, 256 or 512 bytes, then whole KiB, so a sealed value's size names
    /// a size class, never a browser id or a pattern. Never past the
    /// largest text a value may have (``Wire/maxSealedValueBytes``).
    public static func paddedLength(_ count: Int) -> Int {
        let padded = count <= 16 ? 16 : count <= 512 ? 1 << (Int.bitWidth - (count - 1).leadingZeroBitCount) : (count + 1023) / 1024 * 1024
        return max(count, min(padded, maxPaddedLength))
    }

    /// The longest padded text: a sealed value of it is at most ``Wire/maxSealedValueBytes``.
    public static let maxPaddedLength = (Wire.maxSealedValueBytes - 3) / 4 * 3 - 28

    /// A JSON value `seal` sealed, parsed from the opened bytes (the parser checks their UTF-8).
    func openValue(_ sealed: String, collection: String, hiddenKey: String, field: String, stamp: String) throws(RecordCipherError) -> JSONValue {
        var opener = Opener(self, collection: collection, hiddenKey: hiddenKey)
        return try opener.openValue(sealed, field: field, stamp: Array(stamp.utf8))
    }
}

extension RecordCipher {
    /// The field that carries a record's readable key, sealed (the server
    /// sees only the hidden key). It is stamped with the change's newest
    /// stamp; every copy holds the same key, so whichever wins a merge opens
    /// to it.
    public static let keyField = "e2e.key"
    /// The sealed twin of the deletion flag: the flag stays readable (the
    /// server keeps tombstones and purges them), and the twin, sealed under
    /// the same stamp, proves the device wrote it (a server cannot delete a
    /// record by setting the flag).
    public static let deletedTwinField = "e2e.deleted"

    /// A change as the server of an encrypted account sees it: the hidden
    /// key, every field value sealed (the deletion flag stays readable, with
    /// its sealed twin), the readable key sealed in ``keyField``. Stamps,
    /// version vectors and the change number stay as they are: they are all
    /// the merge needs.
    /// A change with no field (re-stamping took them all; it keeps its
    /// number) gets only its hidden key: there is nothing to seal, and no
    /// client opens a record without fields (nothing to apply).
    /// - Throws: ``RecordCipherError`` for a field named like the cipher's
    ///   own (`e2e.` and a name).
    public func seal(_ change: ChangeRecord) throws(RecordCipherError) -> ChangeRecord {
        let collection = change.collection.rawValue
        let hidden = hiddenKey(collection: collection, key: change.key)
        var sealer = Sealer(self, collection: collection, hiddenKey: hidden)
        var fields = [String: StampedValue](minimumCapacity: change.state.fields.count + 2)
        var stamps = HLCTimestamp.TextCache()
        var value: [UInt8] = []
        var newest: HLCTimestamp?
        for (name, register) in change.state.fields {
            guard !name.hasPrefix("e2e.") else {
                throw RecordCipherError(message: "\(collection) '\(DisplayText.printable(change.key.prefix(80)))' has a field named \"\(DisplayText.printable(name.prefix(80)))\": names starting with e2e. are end-to-end encryption's own")
            }
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
            value.removeAll(keepingCapacity: true)
            JSONValue.string(change.key).write(into: &value)
            fields[Self.keyField] = StampedValue(.string(sealer.seal(value, field: Self.keyField, stamp: stamps.text(of: newest))), stamp: newest)
        }
        return ChangeRecord(sequence: change.sequence, collection: change.collection, key: hidden,
                            state: RecordState(fields: fields, versions: change.state.versions))
    }

    /// The readable change a sealed one holds.
    /// - Throws: ``RecordCipherError`` naming the record (its hidden key)
    ///   and the field: not sealed at all, sealed with another key, or changed,
    ///   moved or replayed by the server.
    public func open(_ change: ChangeRecord) throws(RecordCipherError) -> ChangeRecord {
        let collection = change.collection.rawValue
        let hidden = change.key
        var shown: String { DisplayText.printable(hidden.prefix(80)) }
        guard hidden.hasPrefix("h1.") else {
            throw RecordCipherError(message: "\(collection) record '\(shown)' is not encrypted (a readable record in an encrypted account)")
        }
        guard let keyRegister = change.state.fields[Self.keyField], case .string(let sealedKey) = keyRegister.value else {
            throw RecordCipherError(message: "\(collection)/\(shown): its key is missing (\(Self.keyField))")
        }
        var opener = Opener(self, collection: collection, hiddenKey: hidden)
        var stamps = HLCTimestamp.TextCache()
        let keyValue = try opener.openValue(sealedKey, field: Self.keyField, stamp: stamps.text(of: keyRegister.stamp))
        guard case .string(let key) = keyValue, hiddenKey(collection: collection, key: key) == hidden else {
            throw RecordCipherError(message: "\(collection)/\(shown): its sealed key is not the key it is filed under")
        }
        do {
            let fields = try openFields(change, opener: &opener, stamps: &stamps)
            return ChangeRecord(sequence: change.sequence, collection: change.collection, key: key,
                                state: RecordState(fields: fields, versions: change.state.versions))
        } catch {
            // Once its key is open, the record is named as the user knows it.
            throw RecordCipherError(message: "\(collection) '\(DisplayText.printable(key.prefix(200)))': \(error.message)")
        }
    }

    private func openFields(_ change: ChangeRecord, opener: inout Opener, stamps: inout HLCTimestamp.TextCache) throws(RecordCipherError) -> [String: StampedValue] {
        let (collection, hidden) = (opener.collection, opener.hiddenKey)
        var shown: String { DisplayText.printable(hidden.prefix(80)) }
        var fields = [String: StampedValue](minimumCapacity: change.state.fields.count)
        for (name, register) in change.state.fields where name != Self.keyField && name != Self.deletedTwinField {
            if name == RecordState.deletedField {
                // The readable flag counts only as its sealed twin says, under the same stamp.
                var forged: RecordCipherError {
                    RecordCipherError(message: "\(collection)/\(shown) field \"deleted\": the readable flag is not the one the device sealed (set by the server?)")
                }
                guard let twin = change.state.fields[Self.deletedTwinField], twin.stamp == register.stamp, case .string(let sealed) = twin.value else {
                    throw forged
                }
                let opened = try opener.openValue(sealed, field: name, stamp: stamps.text(of: register.stamp))
                guard opened == register.value else { throw forged }
                fields[name] = register
                continue
            }
            guard case .string(let sealed) = register.value else {
                throw RecordCipherError(message: "\(collection)/\(shown) field \"\(DisplayText.printable(name.prefix(80)))\": not a sealed value (a plaintext value in an encrypted account?)")
            }
            let value = try opener.openValue(sealed, field: name, stamp: stamps.text(of: register.stamp))
            fields[name] = StampedValue(value, stamp: register.stamp)
        }
        return fields
    }
}

public struct RecordCipherError: Error, Sendable, CustomStringConvertible {
    public let message: String
    public var description: String { message }
}
