import JSON
import Model
import Storage
import SyncCore

/// The JSON stored in `records.fields`, `records.versions` and the change log:
/// fields as `{"name": {"s": "HLC stamp", "v": value}}`, versions as
/// `{"device": counter}`. Read and written with ``JSONValue``'s own reader and
/// writer: resolving a link decodes records and must not pay for reflection.
enum RecordCoding {
    /// The state of a row whose column `fields` holds a record's fields
    /// (read in place), with no versions: what listing needs.
    static func decodeFields(_ row: Row, column fields: Int) throws -> RecordState {
        do {
            return try row.withText(fields) { bytes throws(Wire.Problem) in
                try RecordState(fieldsUTF8: bytes, versionsJSON: "{}")
            }
        } catch {
            throw ReplicaError.notAReplica(path: "replica", reason: "a stored record is damaged: \(error)")
        }
    }

    static func decodeState(fields: String, versions: String) throws -> RecordState {
        do { return try RecordState(fieldsJSON: fields, versionsJSON: versions) } catch {
            throw ReplicaError.notAReplica(path: "replica", reason: "a stored record is damaged: \(error)")
        }
    }
}
