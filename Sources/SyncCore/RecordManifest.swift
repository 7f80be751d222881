import JSON

/// What a writer's record held just after one of its changes: the stamp of
/// every field (the deletion flag included) and the version vector. In an
/// end-to-end encrypted account every change carries its manifest, sealed
/// under the change's stamp (Deploy/SECURITY.md, "Records sealed as
/// records"); the server merges it like any field, so a merged record keeps
/// its newest writer's manifest, and a machine that pulls the record checks
/// that nothing that writer saw was dropped, rolled back or hidden.
///
/// An honest merge keeps, per field, the newest stamp and joins version
/// vectors, so every manifest merged into a record stays satisfied by it;
/// concurrent edits the writer did not see carry newer stamps and pass.
public struct RecordManifest: Sendable, Equatable {
    /// Field name → the stamp the writer's record held it with.
    public private(set) var stamps: [String: HLCTimestamp]
    public private(set) var versions: VersionVector

    public init(stamps: [String: HLCTimestamp], versions: VersionVector) {
        self.stamps = stamps
        self.versions = versions
    }

    /// The manifest of `state` as of `stamp`: its fields stamped at most
    /// `stamp` (a field stamped later came after the change), except those
    /// whose stamp is in `excluding` (edits not sent yet when this one is),
    /// and its version vector. Encryption's own fields (`e2e.`) are left out.
    public init(of state: RecordState, through stamp: HLCTimestamp, excluding: Set<HLCTimestamp> = []) {
        var stamps: [String: HLCTimestamp] = [:]
        for (name, register) in state.fields
        where register.stamp <= stamp && !excluding.contains(register.stamp) && !name.hasPrefix(Wire.sealedFieldPrefix)
        {
            stamps[name] = register.stamp
        }
        self.init(stamps: stamps, versions: state.versions)
    }

    // MARK: Checking

    /// Why `state` is not a record this manifest's writer could have led to
    /// (an honest server's merge always is), or nil. The problem names the
    /// field: dropped, or held with an older stamp than the writer saw (a
    /// deletion flag dropped or rolled back revives a deleted record), or a
    /// version-vector entry lower than the writer's (a hidden write).
    public func problem(with state: RecordState) -> String? {
        // Every record a pull brings is checked: the names are sorted (for
        // the message to name the first) only when something is wrong.
        let fine =
            stamps.allSatisfy { name, stamp in state.fields[name].map { $0.stamp >= stamp } == true }
            && versions.counters.allSatisfy { state.versions[$0.key] >= $0.value }
        if fine { return nil }
        for name in stamps.keys.sorted(by: { $0.utf8.lexicographicallyPrecedes($1.utf8) }) {
            let stamp = stamps[name]!
            var shown: String { DisplayText.printable(name.prefix(80)) }
            guard let held = state.fields[name] else {
                return name == RecordState.deletedField
                    ? "its deletion flag was dropped (a deleted record shown as alive?)"
                    : "field \"\(shown)\" was dropped"
            }
            if held.stamp < stamp {
                return name == RecordState.deletedField
                    ? "its deletion flag was rolled back to an older one"
                    : "field \"\(shown)\" was rolled back to an older value"
            }
        }
        for (device, counter) in versions.counters.sorted(by: { $0.key < $1.key })
        where state.versions[device] < counter {
            return "its version vector hides a write of device \(DisplayText.printable(device.prefix(64)))"
        }
        return nil
    }

    // MARK: Text

    /// The manifest as JSON text, compact for the stamp it is sealed under:
    /// `{"f":{name: other stamp},"s":[names stamped at stamp],"v":{device: counter}}`,
    /// `f` left out when empty, names in order (the same manifest always has
    /// the same text).
    public func text(at stamp: HLCTimestamp) -> String {
        var output: [UInt8] = []
        write(at: stamp, into: &output)
        return String(decoding: output, as: UTF8.self)
    }

    /// Appends ``text(at:)``.
    public func write(at stamp: HLCTimestamp, into output: inout [UInt8]) {
        let names = stamps.keys.sorted(by: { $0.utf8.lexicographicallyPrecedes($1.utf8) })
        output.append(UInt8(ascii: "{"))
        writeOthers(names.filter { stamps[$0]! != stamp }, into: &output)
        output += #""s":["#.utf8
        var first = true
        for name in names where stamps[name]! == stamp {
            if !first { output.append(UInt8(ascii: ",")) }
            first = false
            JSONValue.string(name).write(into: &output)
        }
        output += #"],"v":"#.utf8
        RecordState.writeVersions(versions, into: &output)
        output.append(UInt8(ascii: "}"))
    }

    /// The manifest as a box holds it (sealed format 2, whose box is sealed
    /// under `stamp`): `{"f":{name: stamp below it},"v":{device: counter}}`,
    /// `f` left out when empty, names in order. The fields stamped `stamp`
    /// are not written: they are the box's own (its write's fields).
    public func writeBoxed(at stamp: HLCTimestamp, into output: inout [UInt8]) {
        output.append(UInt8(ascii: "{"))
        writeOthers(
            stamps.keys.sorted(by: { $0.utf8.lexicographicallyPrecedes($1.utf8) }).filter { stamps[$0]! < stamp },
            into: &output)
        output += #""v":"#.utf8
        RecordState.writeVersions(versions, into: &output)
        output.append(UInt8(ascii: "}"))
    }

    /// Appends `"f":{NAME:STAMP,…},` for `names` (in order), nothing when there are none.
    private func writeOthers(_ names: [String], into output: inout [UInt8]) {
        guard !names.isEmpty else { return }
        output += #""f":{"#.utf8
        for (index, name) in names.enumerated() {
            if index > 0 { output.append(UInt8(ascii: ",")) }
            JSONValue.string(name).write(into: &output)
            output += #":""#.utf8
            stamps[name]!.write(into: &output)
            output.append(UInt8(ascii: "\""))
        }
        output += "},".utf8
    }

    /// Reads ``writeBoxed(at:into:)`` of the box sealed under `stamp`
    /// whose write stamped the fields `own`.
    /// - Throws: ``Wire/Problem`` saying what is wrong: not an object of
    ///   `v` and maybe `f`, a bad field name, a stamp not below the box's,
    ///   a name also among the box's own, a bad version vector.
    public init(boxed json: JSONValue, at stamp: HLCTimestamp, own: some Collection<String>) throws(Wire.Problem) {
        guard case .object(let object) = json, let versions = object["v"],
            object.count == (object["f"] == nil ? 1 : 2), case .object(let others) = object["f"] ?? .object([:])
        else {
            throw Wire.Problem("a box's manifest is an object of \"v\" and maybe \"f\"")
        }
        guard others.count + own.count <= Wire.maxFields + 1 else {
            throw Wire.Problem("a manifest names more fields than a record has")
        }
        var stamps: [String: HLCTimestamp] = [:]
        for name in own { stamps[name] = stamp }
        for (name, text) in others {
            guard Wire.problem(fieldName: name) == nil, !name.hasPrefix(Wire.sealedFieldPrefix),
                let text = text.stringValue, let other = HLCTimestamp(text: text), other < stamp,
                stamps.updateValue(other, forKey: name) == nil
            else {
                throw Wire.Problem(
                    "a manifest's field \"\(DisplayText.printable(name.prefix(80)))\" has no valid name and earlier stamp, or is the box's own"
                )
            }
        }
        self.init(stamps: stamps, versions: try Self.versions(versions))
    }

    /// Reads ``text(at:)`` of a manifest sealed under `stamp`.
    /// - Throws: ``Wire/Problem`` saying what is wrong: not an object of
    ///   `s`, `v` and maybe `f`, a bad field name or stamp, a name twice, a
    ///   bad version vector, more entries than a record may have.
    public init(json: JSONValue, at stamp: HLCTimestamp) throws(Wire.Problem) {
        guard case .object(let object) = json, case .array(let same)? = object["s"], let versions = object["v"],
            object.count == (object["f"] == nil ? 2 : 3), case .object(let others) = object["f"] ?? .object([:])
        else {
            throw Wire.Problem("a manifest is an object of \"s\", \"v\" and maybe \"f\"")
        }
        guard others.count + same.count <= Wire.maxFields + 1 else {
            throw Wire.Problem("a manifest names more fields than a record has")
        }
        var stamps: [String: HLCTimestamp] = [:]
        for (name, text) in others {
            guard Wire.problem(fieldName: name) == nil, !name.hasPrefix(Wire.sealedFieldPrefix),
                let text = text.stringValue, let other = HLCTimestamp(text: text)
            else {
                throw Wire.Problem(
                    "a manifest's field \"\(DisplayText.printable(name.prefix(80)))\" has no valid name and stamp")
            }
            stamps[name] = other
        }
        for name in same {
            guard let name = name.stringValue, Wire.problem(fieldName: name) == nil,
                !name.hasPrefix(Wire.sealedFieldPrefix),
                stamps.updateValue(stamp, forKey: name) == nil
            else {
                throw Wire.Problem("a manifest names a field twice, or a field that cannot be")
            }
        }
        self.init(stamps: stamps, versions: try Self.versions(versions))
    }

    /// A manifest's version vector (`v`).
    private static func versions(_ versions: JSONValue) throws(Wire.Problem) -> VersionVector {
        guard case .object(let entries) = versions, entries.count <= Wire.maxVersionEntries else {
            throw Wire.Problem(
                "a manifest's version vector is not an object of at most \(Wire.maxVersionEntries) devices")
        }
        var counters: [String: UInt64] = [:]
        for (device, counter) in entries {
            guard HLCTimestamp.isValidDevice(device), let value = counter.intValue, value >= 0 else {
                throw Wire.Problem(
                    "a manifest's version vector has a bad entry for \"\(DisplayText.printable(device.prefix(64)))\"")
            }
            counters[device] = UInt64(value)
        }
        return VersionVector(counters)
    }
}
