import JSON
import Model
import SyncClient
import SyncCore

/// One fixed account key (the fuzzer cannot forge a seal; it can send
/// anything a hostile server could).
let cipher = RecordCipher(try! AccountKey(bytes: Array(repeating: 7, count: 32)))

/// Reads the input three ways. First as a change, the way the client reads a
/// pulled record: as a sealed record, opening it must refuse or succeed
/// without crashing, and what opens must seal back to a record that opens to
/// the same change; as a readable change, sealing it (unless it uses the
/// cipher's own field names) must open back to it unchanged (unless it has
/// no field: nothing to open). Then as a hostile server's moves over records
/// a key holder really sealed (``hostileServer(_:)``); and as a manifest's
/// text (``manifest(_:)``).
func fuzzRecordCipher(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = UnsafeBufferPointer(start: data, count: size)
    hostileServer(bytes)
    manifest(bytes)
    guard let change = try? ChangeRecord(reading: bytes) else { return 0 }
    for format in [Wire.SealedFormat.one, .two] {
        if let opened = try? cipher.open(change) {
            let again = try? cipher.open(try cipher.seal(opened, format: format))
            precondition(again == opened, "an opened record did not survive sealing again in format \(format)")
        }
        if let sealed = try? cipher.seal(change, format: format) {
            let back = try? sealed.jsonBytes.withUnsafeBufferPointer { bytes throws(Wire.ReadError) in
                try ChangeRecord(reading: bytes)
            }
            precondition(back == sealed, "a sealed change changed in a round trip through its JSON (format \(format))")
            // A change with no field (re-stamping took them all) has no sealed key
            // to open by; the client skips such a record, holding nothing.
            precondition(
                change.state.fields.isEmpty || (try? cipher.open(sealed)) == change,
                "a sealed change did not open to itself in format \(format)")
        }
    }
    return 0
}

// MARK: - A hostile server with valid seals

func stamp(_ millis: Int64, _ device: String) -> HLCTimestamp {
    HLCTimestamp(wallMillis: 1_790_000_000_000 + millis, counter: 0, device: device)
}

func version(
    _ key: String, _ fields: [String: JSONValue], at millis: Int64, by device: String, counter: UInt64
) -> ChangeRecord {
    let at = stamp(millis, device)
    return ChangeRecord(
        sequence: 1, collection: .rules, key: key,
        state: RecordState(
            fields: fields.mapValues { StampedValue($0, stamp: at) }, versions: VersionVector([device: counter])))
}

/// What key holders wrote: two records, each in several versions (an edit,
/// a deletion, a revival), sealed in both formats (a value by itself, and
/// one box per write). Every register of every version is a real seal the
/// server holds and may replay anywhere.
let written: [ChangeRecord] = [
    version(
        "zoom.us", ["browser": .string("firefox"), "priority": .int(3), "deleted": .bool(false)], at: 1, by: "laptop",
        counter: 1),
    version("zoom.us", ["browser": .string("tor-browser"), "deleted": .bool(false)], at: 5, by: "desktop", counter: 1),
    version("zoom.us", ["deleted": .bool(true)], at: 9, by: "laptop", counter: 2),
    version(
        "bank.example", ["browser": .string("chromium"), "priority": .int(1), "deleted": .bool(false)], at: 2,
        by: "desktop", counter: 2),
    version("bank.example", ["browser": .string("firefox"), "deleted": .bool(false)], at: 7, by: "laptop", counter: 3),
]
let sealedVersions = written.map { try! cipher.seal($0) } + written.map { try! cipher.seal($0, format: .two) }

/// Every (record, field, stamp) a key holder sealed, and the value it sealed.
let genuine: [String: JSONValue] = {
    var values: [String: JSONValue] = [:]
    for change in written {
        for (name, register) in change.state.fields {
            values["\(change.key)|\(name)|\(register.stamp)"] = register.value
        }
    }
    return values
}()

/// The input drives what a server that holds only these seals serves as
/// one record: which version's record it starts from, then moves (replay a
/// register of any version under its own stamp, drop a field, copy a field
/// to another name, change a stamp, set the readable deletion flag, change
/// the version vector). Whatever it serves, a record that opens holds only
/// values a key holder sealed for that record, field and stamp, and a
/// deletion flag its twin vouches for: nothing forged opens.
func hostileServer(_ bytes: UnsafeBufferPointer<UInt8>) {
    guard bytes.count >= 1 else { return }
    var input = bytes.makeIterator()
    let start = Int(input.next()!) % sealedVersions.count
    var served = sealedVersions[start]
    let registers = sealedVersions.flatMap { version in version.state.fields.map { (version.key, $0.key, $0.value) } }
    while let move = input.next(), let argument = input.next() {
        let names = served.state.fields.keys.sorted()
        switch move % 6 {
        case 0: // replay any register of this record's key under its name and stamp
            let candidates = registers.filter { $0.0 == served.key }
            let (_, name, register) = candidates[Int(argument) % candidates.count]
            served.state.fields[name] = register
        case 1: // drop a field
            if !names.isEmpty { served.state.fields[names[Int(argument) % names.count]] = nil }
        case 2: // a field's register under another field's name
            if names.count >= 2 {
                served.state.fields[names[Int(argument) % names.count]] =
                    served.state.fields[names[Int(argument / 2 + 1) % names.count]]
            }
        case 3: // another stamp on a register
            if !names.isEmpty, var register = served.state.fields[names[Int(argument) % names.count]] {
                register.stamp = stamp(Int64(argument % 12), argument % 2 == 0 ? "laptop" : "desktop")
                served.state.fields[names[Int(argument) % names.count]] = register
            }
        case 4: // the readable deletion flag
            served.state.fields["deleted"] = StampedValue(
                .bool(argument % 2 == 0), stamp: stamp(Int64(argument % 12), "laptop"))
        default: // the version vector
            served.state.versions = VersionVector(["laptop": UInt64(argument % 4), "server": UInt64(argument / 4)])
        }
    }
    guard let opened = try? cipher.open(served, requiringManifest: false) else { return }
    precondition(
        opened.key == written.first { cipher.hiddenKey(collection: "rules", key: $0.key) == served.key }?.key,
        "a record opened under another key")
    for (name, register) in opened.state.fields {
        let sealed = genuine["\(opened.key)|\(name)|\(register.stamp)"]
        precondition(
            sealed == register.value, "a value no key holder sealed opened: \(opened.key) \(name) at \(register.stamp)")
    }
    // Where every writer seals manifests, a record that opens is never one
    // its newest writer's version was cut from or rolled back in.
    guard let strict = try? cipher.open(served, requiringManifest: true),
        let newest = strict.state.fields.values.map(\.stamp).max(),
        let writer = written.first(where: {
            $0.key == strict.key && $0.state.fields.values.contains { $0.stamp == newest }
        })
    else { return }
    for (name, register) in writer.state.fields {
        precondition(
            strict.state.fields[name].map { $0.stamp >= register.stamp } == true,
            "a record opened without \(name) as its newest writer sealed it")
    }
    precondition(
        strict.state.versions.compare(to: writer.state.versions) != .before,
        "a record opened hiding a write its newest writer saw")
}

// MARK: - A manifest's text

/// The input as a manifest's text (what a key holder sealed; a parser like
/// any other): it is read or refused without crashing, and what is read
/// reads back the same from its own text, sealed under any stamp.
func manifest(_ bytes: UnsafeBufferPointer<UInt8>) {
    guard let json = try? JSONValue.parse(utf8: bytes) else { return }
    let at = stamp(5, "desktop")
    boxedManifest(json, at: at)
    guard let manifest = try? RecordManifest(json: json, at: at) else { return }
    precondition(
        (try? RecordManifest(json: JSONValue.parse(manifest.text(at: at)), at: at)) == manifest,
        "a manifest changed through its text")
    let other = stamp(7, "laptop")
    precondition(
        (try? RecordManifest(json: JSONValue.parse(manifest.text(at: other)), at: other)) == manifest,
        "a manifest changed under another stamp")
}

/// The input as the manifest a box of sealed format 2 holds (its own
/// fields are the box's): what reads writes back to the same text's
/// meaning, never naming a stamp at or above the box's but its own fields.
func boxedManifest(_ json: JSONValue, at: HLCTimestamp) {
    let own = ["browser", "deleted"]
    guard let manifest = try? RecordManifest(boxed: json, at: at, own: own) else { return }
    precondition(own.allSatisfy { manifest.stamps[$0] == at }, "a boxed manifest lost the box's own fields")
    precondition(
        manifest.stamps.allSatisfy { own.contains($0.key) || $0.value < at },
        "a boxed manifest names a stamp not below its box")
    var text: [UInt8] = []
    manifest.writeBoxed(at: at, into: &text)
    precondition(
        (try? RecordManifest(boxed: JSONValue.parse(String(decoding: text, as: UTF8.self)), at: at, own: own))
            == manifest,
        "a boxed manifest changed through its text")
}
