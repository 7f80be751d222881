import JSON

/// One record version: a pushed change (`sequence` is the device's) or a
/// pulled record (`sequence` is the account's).
public struct ChangeRecord: Sendable, Equatable {
    public var sequence: Int64
    public var collection: RecordCollection
    public var key: String
    public var state: RecordState {
        didSet { fieldsText = nil } // the text no longer reads as the state
    }
    /// A pulled record's fields as the page carried them (JSON that reads as
    /// `state.fields`), so a replica that takes the record as it came stores
    /// this text instead of writing the fields again; nil once `state`
    /// changes, and for every record not read from a page (an opened sealed
    /// record is a new one). Not part of equality: it is the same record.
    public var fieldsText: String?
    /// What the writer's record held just after this change, when the
    /// change log kept it: ``RecordManifest/text(at:)`` at the change's
    /// stamp, sealed with the change as it is in an encrypted account (never
    /// sent readable).
    public var manifestText: String?
    /// In a pulled record, the version vector of the write that brought its
    /// newest stamp, as that writer held it, when it differs from the
    /// record's own (a write it had not seen was merged in; the wire's
    /// `"writer"`); nil when it is `state.versions`. A machine whose value
    /// lost to that write learns whether the writer had seen it. In an
    /// encrypted account it comes from the sealed manifest, never from the
    /// server. Pushes never carry it (a pushed change is its own writer).
    public var writerVersions: VersionVector?
    /// In an opened record of sealed format 2, the version vector of the
    /// write that set a field, by the field's name, where the box of that
    /// write carries its manifest and it is not `writerVersions` (a later
    /// write of other fields brought the newest stamp). A machine whose
    /// value of the field lost learns whether that write had seen it, not
    /// whether the newest one had. Empty otherwise (the server's word is
    /// never taken for it).
    public var fieldWriters: [String: VersionVector] = [:]
    /// In an opened (sealed) record, the key the server files it under, its
    /// hidden key; nil when that is `key`. Not part of equality.
    public var filedKey: String?
    /// In an encrypted account, the sealed format this change of the log was
    /// first sent in (docs/sealed-format-v2.md: a retry sends the same
    /// bytes); nil while it was never sent, and for anything not from the
    /// log. Not part of equality.
    public var sealedFormat: Wire.SealedFormat?
    /// In an opened record of sealed format 2, the boxes its own fields
    /// named (not only `e2e.key` or `e2e.manifest`), as the server sent
    /// them: a replica keeps them, and a relay sends a write in the box its
    /// writer sealed (docs/protocol.md, "Relays of boxes"). Empty
    /// otherwise. Not part of equality.
    public var boxes: [PulledBox] = []

    /// A box of sealed format 2 as a pull brought it.
    public struct PulledBox: Sendable, Hashable {
        /// Its stamp and sealed text.
        public var register: StampedValue
        /// Twice the fields its write holds, one more when it carries a
        /// manifest. A relay's box of a stamp (the fields it still held at
        /// that stamp) never weighs more than its writer's (every field it
        /// stamped), so a replica keeps the heavier of two (a lying server
        /// cannot make it trade the writer's box for a part of it).
        public var weight: Int

        public init(_ register: StampedValue, weight: Int) {
            self.register = register
            self.weight = weight
        }
    }

    public init(
        sequence: Int64, collection: RecordCollection, key: String, state: RecordState, manifestText: String? = nil,
        writerVersions: VersionVector? = nil
    ) {
        self.sequence = sequence
        self.collection = collection
        self.key = key
        self.state = state
        self.manifestText = manifestText
        self.writerVersions = writerVersions
    }

    public static func == (a: ChangeRecord, b: ChangeRecord) -> Bool {
        a.sequence == b.sequence && a.collection == b.collection && a.key == b.key && a.state == b.state
            && a.manifestText == b.manifestText && a.writerVersions == b.writerVersions
            && a.fieldWriters == b.fieldWriters
    }

    /// What identifies this change's content (FNV-1a 64 of its collection,
    /// key and canonical fields, as 16 hex digits).
    public var digest: String {
        Self.digest(collection: collection, key: key, fieldsText: RecordState.encodeFieldBytes(state.fields)[...])
    }

    /// ``digest`` from the text of the change's fields (``RecordState/encodeFields(_:)``),
    /// as ``write(into:)`` wrote it: a push digests what it sends without writing it again.
    public static func digest(collection: RecordCollection, key: String, fieldsText: ArraySlice<UInt8>) -> String {
        var hash = FNV1a()
        hash.mix(collection.rawValue)
        hash.mix(key)
        fieldsText.withUnsafeBufferPointer { hash.mix($0) }
        return hash.hex
    }

    /// What identifies a device's changes from its first through this one:
    /// this change's ``digest`` chained after `previous`, the chain through the
    /// change before ("" before the first). The server keeps the chain through
    /// the last change of each device it applied; a device whose numbers were
    /// reused (a copied home, a home restored from an older copy) is told by
    /// the chain, never by the number alone, nor by one change (two copies can
    /// make the same edit with the same stamp after different ones).
    public func chained(after previous: String) -> String {
        Self.chain(digest, after: previous)
    }

    /// The chain through the last of `changes` (consecutive, in order) after `base`.
    public static func chain(_ changes: some Sequence<ChangeRecord>, after base: String) -> [String] {
        chain(digests: changes.map(\.digest), after: base)
    }

    /// The chain through each of consecutive changes given by their ``digest``s, after `base`.
    public static func chain(digests: [String], after base: String) -> [String] {
        var previous = base
        return digests.map { digest in
            previous = chain(digest, after: previous)
            return previous
        }
    }

    private static func chain(_ digest: String, after previous: String) -> String {
        var hash = FNV1a()
        hash.mix(previous)
        hash.mix(digest)
        return hash.hex
    }

    /// The change's JSON text (members in name order), written directly
    /// (pushes write thousands).
    /// - Returns: where in `output` the fields' text is (for ``digest(collection:key:fieldsText:)``).
    @discardableResult
    public func write(into output: inout [UInt8]) -> Range<Int> {
        var fields = 0..<0
        Self.write(
            collection: collection, key: key, sequence: sequence, into: &output,
            fields: { output in
                let start = output.count
                RecordState.writeFields(state.fields, into: &output)
                fields = start..<output.count
            }, versions: { RecordState.writeVersions(state.versions, into: &$0) },
            writer: writerVersions.map { writer in { RecordState.writeVersions(writer, into: &$0) } })
        return fields
    }

    /// The one layout of a change's text, its fields, versions and writer
    /// (left out when nil) written by the caller: the server splices in the
    /// texts it stores.
    public static func write(
        collection: RecordCollection, key: String, sequence: Int64, into output: inout [UInt8],
        fields writeFields: (inout [UInt8]) -> Void, versions writeVersions: (inout [UInt8]) -> Void,
        writer writeWriter: ((inout [UInt8]) -> Void)? = nil
    ) {
        output += #"{"collection":""#.utf8
        output += collection.rawValue.utf8
        output += #"","fields":"#.utf8
        writeFields(&output)
        output += #","key":"#.utf8
        JSONValue.writeString(key, into: &output)
        output += #","seq":"#.utf8
        output += String(sequence).utf8
        output += #","versions":"#.utf8
        writeVersions(&output)
        if let writeWriter {
            output += #","writer":"#.utf8
            writeWriter(&output)
        }
        output.append(UInt8(ascii: "}"))
    }

    /// ``write(into:)`` as a new buffer.
    public var jsonBytes: [UInt8] { jsonBytesAndDigest.text }

    /// ``jsonBytes`` and ``digest``, the fields written once for both.
    public var jsonBytesAndDigest: (text: [UInt8], digest: String) {
        var output: [UInt8] = []
        let fields = write(into: &output)
        return (output, Self.digest(collection: collection, key: key, fieldsText: output[fields]))
    }
}

extension StampedValue {
    public var json: JSONValue { .object(["v": value, "s": .string(stamp.description)]) }
}

/// FNV-1a 64, each part ended by a zero byte, as 16 hex digits.
private struct FNV1a {
    private var hash: UInt64 = 0xcbf2_9ce4_8422_2325

    mutating func mix(_ text: String) {
        var text = text
        text.withUTF8 { mix($0) }
    }

    mutating func mix(_ bytes: UnsafeBufferPointer<UInt8>) {
        for byte in bytes { step(byte) }
        step(0)
    }

    private mutating func step(_ byte: UInt8) {
        hash ^= UInt64(byte)
        hash = hash &* 0x0000_0100_0000_01b3
    }

    var hex: String {
        let text = String(hash, radix: 16)
        return String(repeating: "0", count: 16 - text.count) + text
    }
}
