import JSON
import Model
import SyncCore

/// Opening a whole sealed record, either format or both mixed: the key it
/// is filed under, every field, the deletion flag with its twin, the
/// writes its boxes hold, and the manifest its last writer sealed.
extension RecordCipher {
    /// The readable change a sealed one holds, checked against its manifest
    /// (``RecordManifest/problem(with:)``).
    /// - Parameter requiringManifest: a record without a manifest, or whose
    ///   newest value came without one, is refused (every writer seals one;
    ///   false only to prove that a key opens records).
    /// - Throws: ``RecordCipherError`` naming the record (its hidden key)
    ///   and the field: not sealed at all, sealed with another key, or changed,
    ///   moved, replayed, dropped or rolled back by the server.
    public func open(_ change: ChangeRecord, requiringManifest: Bool = true) throws(RecordCipherError) -> ChangeRecord {
        if change.collection == .ledger { return try openLedger(change) }
        let collection = change.collection.rawValue
        let hidden = change.key
        var shown: String { DisplayText.printable(hidden.prefix(80)) }
        guard hidden.hasPrefix("h1.") else {
            throw RecordCipherError(
                message: "\(collection) record '\(shown)' is not encrypted (a readable record in an encrypted account)")
        }
        guard let keyRegister = change.state.fields[Self.keyField], case .string(let sealedKey) = keyRegister.value
        else {
            throw RecordCipherError(message: "\(collection)/\(shown): its key is missing (\(Self.keyField))")
        }
        var opener = Opener(self, collection: collection, hiddenKey: hidden)
        var stamps = HLCTimestamp.TextCache()
        // Format 2: each box once (its key hashes to the hidden key, or it does not open).
        let writes = try openBoxes(change)
        let key: String
        if let write = writes[keyRegister] {
            key = write.key
        } else {
            let keyValue = try opener.openValue(
                sealedKey, field: Self.keyField, stamp: stamps.text(of: keyRegister.stamp))
            guard case .string(let opened) = keyValue, hiddenKey(collection: collection, key: opened) == hidden else {
                throw RecordCipherError(
                    message: "\(collection)/\(shown): its sealed key is not the key it is filed under")
            }
            key = opened
        }
        if writes.writes.contains(where: { $0.key != key }) {
            throw RecordCipherError(
                message: "\(collection)/\(shown): its writes do not all hold the key it is filed under")
        }
        do {
            let fields = try openFields(change, writes: writes, opener: &opener, stamps: &stamps)
            let state = RecordState(fields: fields, versions: change.state.versions)
            try Self.checkWritesHeld(writes, in: state)
            let manifest = try checkManifest(
                change, state, writes: writes, opener: &opener, stamps: &stamps, required: requiringManifest)
            // The writer as its sealed manifest says, never as the server does.
            let writer = manifest.map(\.versions).flatMap { $0 == state.versions ? nil : $0 }
            var opened = ChangeRecord(
                sequence: change.sequence, collection: change.collection, key: key, state: state, writerVersions: writer
            )
            opened.filedKey = hidden
            opened.fieldWriters = Self.fieldWriters(writes, in: state, apartFrom: writer ?? state.versions)
            // Only boxes the record's own fields name (the deletion flag's
            // through its twin): a box named by e2e.key or e2e.manifest alone
            // is the server's choice, never kept. Ascending by stamp then text.
            opened.boxes = writes.boxes.filter { box, _ in
                change.state.fields.contains { name, register in
                    register.stamp == box.stamp && register.value == box.value
                        && (!name.hasPrefix(Wire.sealedFieldPrefix) || name == Self.deletedTwinField)
                }
            }.map { box, write in
                ChangeRecord.PulledBox(box, weight: write.weight)
            }.sorted { a, b in
                a.register.stamp != b.register.stamp
                    ? a.register.stamp < b.register.stamp
                    : a.register.value.stringValue!.utf8.lexicographicallyPrecedes(b.register.value.stringValue!.utf8)
            }
            return opened
        } catch {
            // Once its key is open, the record is named as the user knows it
            // (its hidden key, which the message named, means nothing to them).
            let message = error.message.replacing("\(collection)/\(shown) ", with: "")
            throw RecordCipherError(
                message: "\(collection) '\(DisplayText.printable(key.prefix(200)))': \(message)", shownKey: key)
        }
    }

    /// The writer of each field as a manifest of that writer says
    /// (``ChangeRecord/fieldWriters``), where it is not `newest`: the vector
    /// of a box's manifest whose stamp is the writer's (the box's device is
    /// the field's stamp's) and which lists the field at the stamp it holds
    /// here (a box's own fields, or one stamped below it). Of several, the
    /// earliest box's, nearest the write: it saw least since.
    static func fieldWriters(
        _ writes: OpenedWrites, in state: RecordState, apartFrom newest: VersionVector
    ) -> [String: VersionVector] {
        var writers: [String: VersionVector] = [:]
        // Mostly one box, whose manifest is the newest: nothing to look at.
        guard writes.boxes.contains(where: { $0.write.manifest.map { $0.versions != newest } == true }) else {
            return [:]
        }
        for (box, write) in writes.boxes.sorted(by: { $0.register.stamp > $1.register.stamp }) {
            guard let manifest = write.manifest else { continue }
            // The newest writer's own vector is said by `newest` already.
            let versions = manifest.versions == newest ? nil : manifest.versions
            for (name, stamp) in manifest.stamps
            where stamp.device == box.stamp.device && state.fields[name]?.stamp == stamp {
                writers[name] = versions
            }
        }
        return writers
    }

    /// Checks the opened `state` of `change` against the manifest sealed
    /// with it (Deploy/SECURITY.md, "Records sealed as records").
    /// - Returns: the manifest (nil when there is none and none is required).
    private func checkManifest(
        _ change: ChangeRecord, _ state: RecordState, writes: OpenedWrites, opener: inout Opener,
        stamps: inout HLCTimestamp.TextCache, required: Bool
    ) throws(RecordCipherError) -> RecordManifest? {
        let newest = state.newestStamp
        guard let register = change.state.fields[Self.manifestField] else {
            if required {
                throw RecordCipherError(
                    message: """
                        it carries no manifest: most likely the server dropped it (or a brsync older than 2026-11-27 wrote \
                        it: then upgrade that machine); set aside until a machine that has it sends it again with one
                        """)
            }
            return nil
        }
        let manifest: RecordManifest
        if let write = writes[register] {
            guard let boxed = write.manifest else {
                throw RecordCipherError(message: "its manifest names a write that holds none (by the server?)")
            }
            manifest = boxed
        } else {
            guard case .string(let sealed) = register.value else {
                throw RecordCipherError(message: "its manifest is not a sealed value")
            }
            let json = try opener.openValue(sealed, field: Self.manifestField, stamp: stamps.text(of: register.stamp))
            do { manifest = try RecordManifest(json: json, at: register.stamp) } catch {
                throw RecordCipherError(message: "its manifest is not one: \(error.message)")
            }
        }
        if let problem = manifest.problem(with: state) {
            throw RecordCipherError(message: "\(problem), against what its last writer sealed (by the server?)")
        }
        if required, let newest, newest > register.stamp {
            throw RecordCipherError(
                message:
                    "its newest value came without a manifest (an older manifest served with newer values, or an older brsync wrote it)"
            )
        }
        return manifest
    }

    private func openFields(
        _ change: ChangeRecord, writes: OpenedWrites, opener: inout Opener,
        stamps: inout HLCTimestamp.TextCache
    ) throws(RecordCipherError) -> [String: StampedValue] {
        let (collection, hidden) = (opener.collection, opener.hiddenKey)
        var shown: String { DisplayText.printable(hidden.prefix(80)) }
        var fields = [String: StampedValue](minimumCapacity: change.state.fields.count)
        // Encryption's own fields (a later version's too) are not the record's.
        for (name, register) in change.state.fields where !name.hasPrefix(Wire.sealedFieldPrefix) {
            if name == RecordState.deletedField {
                // The readable flag counts only as its sealed twin says, under the same stamp.
                var forged: RecordCipherError {
                    RecordCipherError(
                        message:
                            "\(collection)/\(shown) field \"deleted\": the readable flag is not the one the device sealed (set by the server?)"
                    )
                }
                guard let twin = change.state.fields[Self.deletedTwinField], twin.stamp == register.stamp,
                    case .string(let sealed) = twin.value
                else {
                    throw forged
                }
                let opened: JSONValue?
                if let write = writes[twin] {
                    opened = write.value(named: name)
                } else {
                    opened = try opener.openValue(sealed, field: name, stamp: stamps.text(of: register.stamp))
                }
                guard opened == register.value else { throw forged }
                fields[name] = register
                continue
            }
            if let write = writes[register] {
                guard let value = write.value(named: name) else {
                    throw RecordCipherError(
                        message:
                            "\(collection)/\(shown) field \"\(DisplayText.printable(name.prefix(80)))\" is not in the write it names (moved by the server?)"
                    )
                }
                fields[name] = StampedValue(value, stamp: register.stamp)
                continue
            }
            guard case .string(let sealed) = register.value else {
                throw RecordCipherError(
                    message:
                        "\(collection)/\(shown) field \"\(DisplayText.printable(name.prefix(80)))\": not a sealed value (a plaintext value in an encrypted account?)"
                )
            }
            let value = try opener.openValue(sealed, field: name, stamp: stamps.text(of: register.stamp))
            fields[name] = StampedValue(value, stamp: register.stamp)
        }
        return fields
    }
}
