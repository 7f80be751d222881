import JSON
import Model
import SyncCore

/// The JSON stored in `records.fields`, `records.versions` and the change log:
/// fields as `{"name": {"s": "HLC stamp", "v": value}}`, versions as
/// `{"device": counter}`. Read and written with ``JSONValue``'s own reader and
/// writer: resolving a link decodes records and must not pay for reflection.
enum RecordCoding {
    static func decodeState(fields: String, versions: String) throws -> RecordState {
        do { return try RecordState(fieldsJSON: fields, versionsJSON: versions) } catch {
            throw ReplicaError.notAReplica(path: "replica", reason: "a stored record is damaged: \(error)")
        }
    }
}
