import JSON
import Replica
import SyncCore

/// How a conflict and a removed record are said, the same in
/// `brsync log --conflicts`/`--removed` and in the settings window.
public enum RecordWords {
    /// What lost to what, by whom and when: "pattern: "a" (laptop, …) lost
    /// to "b" (desk, …)", or the deletion that was undone or that won.
    public static func conflict(_ conflict: Conflict, names: DeviceNames) -> String {
        func by(_ value: StampedValue) -> String {
            "(\(names.display(value.stamp.device)), \(Timestamp.iso8601(millis: value.stamp.wallMillis)))"
        }
        switch (conflict.field, conflict.lost.value, conflict.winner.value) {
        case (RecordState.deletedField, .bool(true), .bool(false)):
            return "its deletion \(by(conflict.lost)) was undone by an edit made without it \(by(conflict.winner))"
        case (RecordState.deletedField, .bool(false), .bool(true)):
            return "an edit \(by(conflict.lost)) lost to its deletion, made without it \(by(conflict.winner))"
        default:
            return
                "\(DisplayText.printable(conflict.field)): \(DisplayText.printable(conflict.lost.value.jsonText)) \(by(conflict.lost)) "
                + "lost to \(DisplayText.printable(conflict.winner.value.jsonText)) \(by(conflict.winner))"
        }
    }

    /// The record a conflict is about: "rules/github.com".
    public static func record(_ conflict: Conflict) -> String {
        "\(conflict.collection)/\(DisplayText.printable(conflict.key))"
    }

    /// A removed record's values (its deletion flag aside).
    public static func values(_ record: RemovedRecord) -> [String: JSONValue] {
        (record.state?.fields ?? [:]).filter { $0.key != RecordState.deletedField }.mapValues(\.value)
    }

    /// A removed record, its values and what became of it: "rules/a.example:
    /// browser="firefox" [set aside: …] [restored …]".
    public static func removed(_ record: RemovedRecord, heldNow: Bool) -> String {
        // A set-aside deletion is shown as one: the values it carried are not what it would bring back.
        let deletion = record.state?.isDeleted == true && record.why != nil
        let fields =
            deletion ? [] : values(record).sorted { $0.key < $1.key }.map { "\($0.key)=\(show($0.value))" }
        let notes =
            (deletion ? "(a deletion)" : "")
            + (record.why.map { " [set aside: \(DisplayText.printable($0))]" } ?? "")
            + (heldNow && record.restoredAtMillis == nil ? " [held now: it arrived since from another machine]" : "")
            + (record.restoredAtMillis.map { " [restored \(Timestamp.iso8601(millis: $0))]" } ?? "")
        return "\(record.collection)/\(DisplayText.printable(record.key)): "
            + "\(DisplayText.printable(fields.joined(separator: " ")))\(notes)"
    }

    /// A value as `log` shows it: strings quoted, the rest as JSON.
    public static func show(_ value: JSONValue) -> String {
        switch value {
        case .null: return "null"
        case .bool(let flag): return String(flag)
        case .int(let number): return String(number)
        case .double(let number): return String(number)
        case .string(let text): return "\"\(text)\""
        case .array, .object: return value.jsonText
        }
    }
}
