import JSON
import Model
import SyncCore

/// Sealed format 2 (docs/sealed-format-v2.md): one box per write of a
/// record, holding everything the writer stamped with one stamp, the
/// record's readable key and, at a change's newest stamp, its manifest.
extension RecordCipher {
    /// One write of one record, as a box holds it.
    public struct Write: Sendable, Equatable {
        /// The record's readable key.
        public var key: String
        /// Every field the write stamped, the deletion flag included (never
        /// one of encryption's own, `e2e.`).
        public var fields: [String: JSONValue]
        /// The change's manifest, in the box at its newest stamp only.
        public var manifest: RecordManifest?

        public init(key: String, fields: [String: JSONValue], manifest: RecordManifest? = nil) {
            self.key = key
            self.fields = fields
            self.manifest = manifest
        }

        /// How much of its write a box holds (``ChangeRecord/PulledBox/weight``):
        /// twice its fields, one more with a manifest.
        public var weight: Int { fields.count * 2 + (manifest == nil ? 0 : 1) }

        /// The value of field `name`, its name matched byte for byte: Swift's
        /// `String` equality takes canonically equivalent spellings as one, and
        /// a server could otherwise file a sealed field under another spelling
        /// of its name (outside review of format 2, finding 2).
        func value(named name: String) -> JSONValue? {
            guard let index = fields.index(forKey: name), fields[index].key.utf8.elementsEqual(name.utf8) else {
                return nil
            }
            return fields[index].value
        }
    }

    /// The text a box seals: `{"k":KEY,"f":{NAME:VALUE,…},"m":MANIFEST}`,
    /// the key and every value followed by spaces up to its size class
    /// (``paddedLength(_:minimum:)``, from ``smallestClass(collection:field:)``),
    /// names ascending bytewise, the manifest unpadded and only when there is one.
    static func boxText(_ write: Write, collection: String, stamp: HLCTimestamp) -> [UInt8] {
        boxText(
            key: write.key, fields: write.fields.sorted { bytewise($0.key, $1.key) }, manifest: write.manifest,
            collection: collection, stamp: stamp)
    }

    /// ``boxText(_:collection:stamp:)`` of a write's key, its fields with
    /// their names in ascending bytewise order, and its manifest.
    static func boxText(
        key: String, fields: some Collection<(key: String, value: JSONValue)>, manifest: RecordManifest?,
        collection: String, stamp: HLCTimestamp
    ) -> [UInt8] {
        var output: [UInt8] = []
        output.reserveCapacity(64 + fields.count * 48)
        output += #"{"k":"#.utf8
        appendPadded(.string(key), minimum: smallestClass(collection: collection, field: keyField), to: &output)
        output += #","f":{"#.utf8
        for (index, field) in fields.enumerated() {
            if index > 0 { output.append(UInt8(ascii: ",")) }
            JSONValue.writeString(field.key, into: &output)
            output.append(UInt8(ascii: ":"))
            appendPadded(field.value, minimum: smallestClass(collection: collection, field: field.key), to: &output)
        }
        output.append(UInt8(ascii: "}"))
        if let manifest {
            output += #","m":"#.utf8
            manifest.writeBoxed(at: stamp, into: &output)
        }
        output.append(UInt8(ascii: "}"))
        return output
    }

    /// Whether name `a` comes before `b` by their UTF-8 bytes (not by
    /// Swift's `String` order, which compares canonical equivalents equal).
    static func bytewise(_ a: String, _ b: String) -> Bool {
        a.utf8.lexicographicallyPrecedes(b.utf8)
    }

    /// `value`'s JSON text, then spaces up to its size class.
    private static func appendPadded(_ value: JSONValue, minimum: Int, to output: inout [UInt8]) {
        let start = output.count
        value.write(into: &output)
        let count = output.count - start
        output.append(
            contentsOf: repeatElement(UInt8(ascii: " "), count: paddedLength(count, minimum: minimum) - count))
    }

    /// `write` sealed as a box of the record `hiddenKey` under `stamp`:
    /// `e2.` and the base64url of nonce, ciphertext and tag, bound to
    /// `brsync-e2e-v2`, the collection, the hidden key and the stamp. The
    /// nonce is synthetic (as a value's), so the same write seals to the same box.
    public func sealBox(_ write: Write, collection: String, hiddenKey: String, stamp: HLCTimestamp) -> String {
        var sealer = Sealer(self, collection: collection, hiddenKey: hiddenKey, label: Self.boxLabel)
        return sealer.box(write, stamp: stamp)
    }

    /// The write a box holds, when this key sealed it for the record
    /// `hiddenKey` under `stamp`, and it is one: its key hashes to the hidden
    /// key, its fields are not encryption's own and keep the wire's limits,
    /// its manifest reads.
    /// - Throws: ``RecordCipherError`` naming the record and what is wrong.
    public func openBox(
        _ sealed: String, collection: String, hiddenKey: String, stamp: HLCTimestamp
    ) throws(RecordCipherError) -> Write {
        var opener = Opener(self, collection: collection, hiddenKey: hiddenKey, label: Self.boxLabel)
        // Written only for a message: every box a pull brings is opened here.
        var place: String { "\(collection)/\(DisplayText.printable(hiddenKey.prefix(80))) box \(stamp)" }
        guard let text = opener.openBox(sealed, stamp: Self.bytes(of: stamp)) else {
            throw RecordCipherError(
                message: Opener.sealedForm(sealed, Self.boxPrefix)
                    ? "\(place) does not open: a wrong account key, or the box was changed, or moved to another record or stamp"
                    : "\(place): not a box (a plaintext value in an encrypted account?)")
        }
        let json: JSONValue
        do {
            json = try text.withUnsafeBufferPointer { buffer throws(JSONValue.ParseError) in
                try JSONValue.parse(utf8: buffer)
            }
        } catch {
            throw RecordCipherError(message: "\(place): the opened box is not JSON")
        }
        do throws(Wire.Problem) {
            let write = try Self.write(in: json, stamp: stamp)
            guard self.hiddenKey(collection: collection, key: write.key) == hiddenKey else {
                throw Wire.Problem("its key is not the key the record is filed under")
            }
            return write
        } catch {
            throw RecordCipherError(message: "\(place): \(error.message)")
        }
    }

    /// The write an opened box's JSON holds: an object of `k` (a string),
    /// `f` (an object of at least one field) and maybe `m` (a boxed manifest), nothing else.
    private static func write(in json: JSONValue, stamp: HLCTimestamp) throws(Wire.Problem) -> Write {
        guard case .object(let object) = json, case .string(let key)? = object["k"],
            case .object(let fields)? = object["f"], object.count == (object["m"] == nil ? 2 : 3)
        else {
            throw Wire.Problem("the opened box is not an object of \"k\", \"f\" and maybe \"m\"")
        }
        guard !fields.isEmpty, fields.count <= Wire.maxFields else {
            throw Wire.Problem("the opened box holds no field, or more than a record has")
        }
        if let problem = Wire.problem(key: key) { throw Wire.Problem("its key: \(problem)") }
        for (name, value) in fields {
            if let problem = Wire.problem(fieldName: name) ?? Wire.problem(value: value) {
                throw Wire.Problem("field \"\(DisplayText.printable(name.prefix(80)))\": \(problem)")
            }
            if name.hasPrefix(Wire.sealedFieldPrefix) {
                throw Wire.Problem(
                    "it holds a field named \"\(DisplayText.printable(name.prefix(80)))\": names starting with e2e. are encryption's own"
                )
            }
        }
        if let deleted = fields[RecordState.deletedField], deleted.boolValue == nil {
            throw Wire.Problem("its deletion flag is not true or false")
        }
        let manifest: RecordManifest?
        if let boxed = object["m"] {
            do { manifest = try RecordManifest(boxed: boxed, at: stamp, own: fields.keys) } catch {
                throw Wire.Problem("its manifest is not one: \(error.message)")
            }
        } else {
            manifest = nil
        }
        return Write(key: key, fields: fields, manifest: manifest)
    }

    /// `change` sealed in format 2: one box per stamp its fields carry, each
    /// holding the fields of that stamp and the key, the newest one the
    /// change's manifest; each field (and `e2e.key`, `e2e.manifest`, the
    /// deletion flag's twin) the register (its stamp, its box). The same
    /// change always seals to the same boxes.
    func sealBoxes(_ change: ChangeRecord) throws(RecordCipherError) -> ChangeRecord {
        let collection = change.collection.rawValue
        let hidden = hiddenKey(collection: collection, key: change.key)
        // Each stamp once with its fields, names ascending bytewise: a change
        // mostly holds one or two stamps (no dictionary per stamp).
        var writes: [(stamp: HLCTimestamp, fields: [(key: String, value: JSONValue)])] = []
        for (name, register) in change.state.fields.sorted(by: { Self.bytewise($0.key, $1.key) }) {
            if let index = writes.firstIndex(where: { $0.stamp == register.stamp }) {
                writes[index].fields.append((name, register.value))
            } else {
                writes.append((register.stamp, [(name, register.value)]))
            }
        }
        guard let newest = writes.lazy.map(\.stamp).max() else {
            // Nothing to seal (re-stamping took every field): the hidden key alone, as format 1.
            return ChangeRecord(
                sequence: change.sequence, collection: change.collection, key: hidden,
                state: RecordState(fields: [:], versions: change.state.versions))
        }
        let manifest = Self.manifest(of: change, newest: newest)
        var sealer = Sealer(self, collection: collection, hiddenKey: hidden, label: Self.boxLabel)
        var fields = [String: StampedValue](minimumCapacity: change.state.fields.count + 3)
        for (stamp, values) in writes {
            let text = Self.boxText(
                key: change.key, fields: values, manifest: stamp == newest ? manifest : nil, collection: collection,
                stamp: stamp)
            let box = StampedValue(.string(sealer.sealBox(text, stamp: stamp)), stamp: stamp)
            for (name, _) in values { fields[name] = box }
            if stamp == newest {
                fields[Self.keyField] = box
                fields[Self.manifestField] = box
            }
        }
        if let flag = change.state.fields[RecordState.deletedField] {
            fields[Self.deletedTwinField] = fields[RecordState.deletedField]
            fields[RecordState.deletedField] = flag
        }
        return ChangeRecord(
            sequence: change.sequence, collection: change.collection, key: hidden,
            state: RecordState(fields: fields, versions: change.state.versions))
    }

    /// A whole record relayed in format 2 (docs/protocol.md, "Relays of
    /// boxes"): each field in the box its writer sealed, when `kept` holds
    /// one at the field's stamp that opens under this key and holds the
    /// field with the value the record holds; the other fields (values that
    /// came in format 1, this machine's own writes) in a box per stamp
    /// sealed here, under their own stamps. The key and the manifest name
    /// the kept box at the newest stamp when it carries a manifest, else a
    /// box sealed here at that stamp, holding every field of it and the
    /// record itself as manifest. The same record and boxes always seal to
    /// the same boxes.
    public func sealRelayed(_ record: ChangeRecord, kept: [StampedValue]) throws(RecordCipherError) -> ChangeRecord {
        if record.collection == .ledger { return try sealLedger(record) }
        try Self.checkOwnNames(record)
        guard let newest = record.state.newestStamp else { return try sealBoxes(record) }
        let collection = record.collection.rawValue
        let hidden = hiddenKey(collection: collection, key: record.key)
        let held = record.state.fields
        let stamps = Set(held.values.map(\.stamp))
        var boxes: [HLCTimestamp: (box: StampedValue, write: Write)] = [:]
        for box in kept where stamps.contains(box.stamp) {
            guard case .string(let sealed) = box.value,
                let write = try? openBox(sealed, collection: collection, hiddenKey: hidden, stamp: box.stamp)
            else { continue } // sealed under an older key, or damaged: sealed again below
            boxes[box.stamp] = (box, write)
        }
        let carrier = boxes[newest].flatMap { $0.write.manifest == nil ? nil : $0.box }
        var fields = [String: StampedValue](minimumCapacity: held.count + 3)
        var unboxed: [HLCTimestamp: [String: JSONValue]] = [:]
        for (name, register) in held {
            if let box = boxes[register.stamp], box.write.value(named: name) == register.value,
                carrier != nil || register.stamp != newest
            {
                fields[name] = box.box
            } else {
                unboxed[register.stamp, default: [:]][name] = register.value
            }
        }
        var sealer = Sealer(self, collection: collection, hiddenKey: hidden, label: Self.boxLabel)
        for (stamp, values) in unboxed {
            let manifest = stamp == newest && carrier == nil ? RecordManifest(of: record.state, through: newest) : nil
            let write = Write(key: record.key, fields: values, manifest: manifest)
            let box = StampedValue(.string(sealer.box(write, stamp: stamp)), stamp: stamp)
            for name in values.keys { fields[name] = box }
            if manifest != nil {
                fields[Self.keyField] = box
                fields[Self.manifestField] = box
            }
        }
        if let carrier {
            fields[Self.keyField] = carrier
            fields[Self.manifestField] = carrier
        }
        if let flag = held[RecordState.deletedField] {
            fields[Self.deletedTwinField] = fields[RecordState.deletedField]
            fields[RecordState.deletedField] = flag
        }
        return ChangeRecord(
            sequence: record.sequence, collection: record.collection, key: hidden,
            state: RecordState(fields: fields, versions: record.state.versions))
    }

    /// The writes of one record's boxes, each once, by the register that
    /// names it. A record names a box or two: a list searched by stamp
    /// first, then by the box's text, beats hashing (a pull of 10,000
    /// sealed rules looked boxes up ~30 times a record).
    struct OpenedWrites {
        private(set) var boxes: [(register: StampedValue, write: Write)] = []

        /// The write of the box `register` names, when opened.
        subscript(register: StampedValue) -> Write? {
            boxes.first { $0.register.stamp == register.stamp && $0.register.value == register.value }?.write
        }

        mutating func add(_ write: Write, named register: StampedValue) {
            boxes.append((register, write))
        }

        var writes: some Collection<Write> { boxes.lazy.map(\.write) }
    }

    /// The write of each box `change`'s fields name, each opened once.
    func openBoxes(_ change: ChangeRecord) throws(RecordCipherError) -> OpenedWrites {
        var writes = OpenedWrites()
        for register in change.state.fields.values where writes[register] == nil && RecordState.isBox(register.value) {
            writes.add(
                try openBox(
                    register.value.stringValue!, collection: change.collection.rawValue, hiddenKey: change.key,
                    stamp: register.stamp),
                named: register)
        }
        return writes
    }

    /// The value of field `field` that `register` holds, whichever format
    /// sealed it: the field of its write's box, or a value sealed by itself.
    /// - Throws: ``RecordCipherError`` when it does not open, is not sealed,
    ///   or names a box without the field.
    public func openField(
        _ register: StampedValue, field: String, collection: String, hiddenKey: String
    ) throws(RecordCipherError) -> JSONValue {
        guard case .string(let sealed) = register.value else {
            throw RecordCipherError(
                message: "\(collection)/\(DisplayText.printable(hiddenKey.prefix(80))) field \"\(field)\" is not sealed"
            )
        }
        guard RecordState.isBox(register.value) else {
            return try openValue(
                sealed, collection: collection, hiddenKey: hiddenKey, field: field, stamp: register.stamp.description)
        }
        guard
            let value = try openBox(sealed, collection: collection, hiddenKey: hiddenKey, stamp: register.stamp)
                .value(named: field)
        else {
            throw RecordCipherError(
                message:
                    "\(collection)/\(DisplayText.printable(hiddenKey.prefix(80))) field \"\(field)\" names a write without it"
            )
        }
        return value
    }

    /// Refuses `state` when a field a write holds is missing from it, or
    /// held at an older stamp than the write's: an honest merge only moves
    /// a field forward, and keeps a box only while some field names it.
    static func checkWritesHeld(
        _ writes: OpenedWrites, in state: RecordState
    ) throws(RecordCipherError) {
        // Every record a pull brings is checked: names are sorted (for the
        // message to name the first) only when something is wrong.
        let fine = writes.boxes.allSatisfy { box, write in
            write.fields.keys.allSatisfy { state.fields[$0].map { $0.stamp >= box.stamp } == true }
        }
        if fine { return }
        for (box, write) in writes.boxes.sorted(by: { $0.register.stamp < $1.register.stamp }) {
            for name in write.fields.keys.sorted(by: bytewise) {
                guard let held = state.fields[name] else {
                    throw RecordCipherError(
                        message:
                            "field \"\(DisplayText.printable(name.prefix(80)))\" of the write of \(box.stamp) was dropped (by the server?)"
                    )
                }
                if held.stamp < box.stamp {
                    throw RecordCipherError(
                        message:
                            "field \"\(DisplayText.printable(name.prefix(80)))\" was rolled back to older than the write of \(box.stamp) (by the server?)"
                    )
                }
            }
        }
    }

    /// A stamp's text, as its bytes.
    private static func bytes(of stamp: HLCTimestamp) -> [UInt8] {
        var bytes: [UInt8] = []
        stamp.write(into: &bytes)
        return bytes
    }

    /// What a box's associated data starts with (a value's is `brsync-e2e-v1`).
    static let boxLabel = "brsync-e2e-v2"
}
