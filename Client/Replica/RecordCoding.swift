import Foundation
import Model
import SyncCore

/// The JSON stored in `records.fields`, `records.versions` and the change log.
enum RecordCoding {
    static func encode<T: Encodable>(_ value: T) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return String(decoding: try encoder.encode(value), as: UTF8.self)
    }

    static func decodeState(fields: String, versions: String) throws -> RecordState {
        let decoder = JSONDecoder()
        do {
            return RecordState(
                fields: try decoder.decode([String: StampedValue].self, from: Data(fields.utf8)),
                versions: try decoder.decode(VersionVector.self, from: Data(versions.utf8)))
        } catch {
            throw ReplicaError.notAReplica(path: "replica", reason: "a stored record is damaged: \(error)")
        }
    }
}
