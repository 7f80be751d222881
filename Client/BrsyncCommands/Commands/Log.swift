import ArgumentParser
import JSON
import Model
import Replica
import SyncCore

public struct Log: ParsableCommand {

    public init() {}
    public static let configuration = CommandConfiguration(
        commandName: "log",
        abstract: "Show what changed here, newest first: this device's edits and what pulls brought.")
    @OptionGroup var global: GlobalOptions
    @Option(help: "How many entries.") var limit = 50
    @Flag(help: "Show the values that lost to concurrent edits (restore one with 'brsync restore ID').") var conflicts =
        false
    @Flag(
        help:
            "Show the records a sync removed because the server no longer had them (restore one with 'brsync restore --removed ID')."
    )
    var removed = false
    @Flag(help: "Print JSON (an array, newest first).") var json = false

    public func validate() throws {
        guard limit > 0 else { throw ValidationError("--limit must be at least 1") }
        guard !(conflicts && removed) else {
            throw ValidationError("--conflicts and --removed show two different lists: give one")
        }
    }

    public func run() throws {
        let replica = try global.openReplica()
        let names = try replica.deviceNames()
        func nameJSON(_ device: String) -> JSONValue { names.name(of: device).map { .string($0) } ?? .null }
        if conflicts {
            let found = try replica.conflicts(limit: limit)
            if json {
                Output.json(
                    JSONValue.array(
                        found.map { conflict in
                            func register(_ value: StampedValue) -> JSONValue {
                                .object([
                                    "value": value.value, "device": .string(value.stamp.device),
                                    "deviceName": nameJSON(value.stamp.device),
                                    "at": .string(Timestamp.iso8601(millis: value.stamp.wallMillis)),
                                ])
                            }
                            return .object([
                                "id": .int(conflict.id),
                                "recordedAt": .string(Timestamp.iso8601(millis: conflict.recordedAtMillis)),
                                "collection": .string(conflict.collection), "key": .string(conflict.key),
                                "field": .string(conflict.field),
                                "lost": register(conflict.lost), "winner": register(conflict.winner),
                                "restoredAt": conflict.restoredAtMillis.map { .string(Timestamp.iso8601(millis: $0)) }
                                    ?? .null,
                            ])
                        }))
                return
            }
            if found.isEmpty { print("no conflicts") }
            for conflict in found {
                let restored = conflict.restoredAtMillis.map { " [restored \(Timestamp.iso8601(millis: $0))]" } ?? ""
                print(
                    "#\(conflict.id) \(Timestamp.iso8601(millis: conflict.recordedAtMillis)) \(RecordWords.record(conflict)) "
                        + "\(RecordWords.conflict(conflict, names: names))\(restored)")
            }
            return
        }
        if removed {
            try showRemoved(replica)
            return
        }
        let entries = try replica.changeLog(limit: limit)
        if json {
            Output.json(
                JSONValue.array(
                    entries.map { entry in
                        var object: [String: JSONValue] = [
                            "seq": .int(entry.sequence),
                            "recordedAt": .string(Timestamp.iso8601(millis: entry.recordedAtMillis)),
                            "device": .string(entry.device), "deviceName": nameJSON(entry.device),
                            "thisDevice": .bool(entry.device == replica.deviceID),
                            "kind": .string(entry.kind),
                            "collection": .string(entry.collection), "key": .string(entry.key),
                            "fields": .object(entry.fields.mapValues(\.value)),
                        ]
                        if let refused = entry.refused { object["refusedByServer"] = .string(refused) }
                        return .object(object)
                    }))
            return
        }
        if entries.isEmpty {
            print("no changes yet")
            return
        }
        for entry in entries {
            let fields = entry.fields.sorted { $0.key < $1.key }.map { "\($0.key)=\(RecordWords.show($0.value.value))" }
            let number = entry.isPulled ? "#p\(entry.sequence)" : "#\(entry.sequence)"
            let refused =
                entry.refused.map { " (refused by the server, never applied: \(DisplayText.printable($0)))" } ?? ""
            print(
                "\(number) \(Timestamp.iso8601(millis: entry.recordedAtMillis)) \(names.display(entry.device)) [\(entry.kind)] \(entry.collection)/\(entry.key): \(fields.joined(separator: " "))\(refused)"
            )
        }
    }

    /// `--removed`: each record with its values as it was dropped, or set aside (with why).
    private func showRemoved(_ replica: Replica) throws {
        let found = try replica.removedRecords(limit: limit)
        if json {
            Output.json(
                JSONValue.array(
                    found.map { record in
                        .object([
                            "id": .int(record.id),
                            "removedAt": .string(Timestamp.iso8601(millis: record.removedAtMillis)),
                            "collection": .string(record.collection), "key": .string(record.key),
                            "fields": .object(RecordWords.values(record)),
                            "restoredAt": record.restoredAtMillis.map { .string(Timestamp.iso8601(millis: $0)) }
                                ?? .null,
                            "setAside": record.why.map { .string($0) } ?? .null,
                            "deletion": .bool(record.state?.isDeleted == true),
                            "heldNow": .bool((try? replica.isHeldNow(record)) == true),
                        ])
                    }))
            return
        }
        if found.isEmpty { print("no removed records") }
        for record in found {
            let held = (try? replica.isHeldNow(record)) == true
            print(
                "#\(record.id) \(Timestamp.iso8601(millis: record.removedAtMillis)) "
                    + RecordWords.removed(record, heldNow: held))
        }
    }
}
