import JSON
import SyncCore

/// JSON text as brsyncd writes it, for tests that change what a server
/// stores or sends: members sorted, except that a fields object's boxes
/// (``RecordState/boxesMember``) come first, as sealed format 2 requires
/// (a test server that moved them would spoil the whole record, not the
/// one thing the test means to change).
public enum WireText {
    public static func of(_ value: JSONValue) -> String {
        switch value {
        case .object(let object):
            let names = object.keys.sorted { a, b in
                a == RecordState.boxesMember || (b != RecordState.boxesMember && a < b)
            }
            return "{" + names.map { JSONValue.string($0).jsonText + ":" + of(object[$0]!) }.joined(separator: ",")
                + "}"
        case .array(let items): return "[" + items.map(of).joined(separator: ",") + "]"
        default: return value.jsonText
        }
    }
}
