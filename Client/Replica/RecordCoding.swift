import Model
import SyncCore

/// The JSON stored in `records.fields`, `records.versions` and the change log:
/// fields as `{"name": {"s": "HLC stamp", "v": value}}`, versions as
/// `{"device": counter}`. Read and written with ``JSONValue``'s own reader and
/// writer: resolving a link decodes records and must not pay for reflection.
enum RecordCoding {
    static func encode(_ fields: [String: StampedValue]) -> String {
        RecordState.encodeFields(fields)
    }

    static func encode(_ versions: VersionVector) -> String {
        RecordState.encodeVersions(versions)
    }

    static func decodeState(fields: String, versions: String) throws -> RecordState {
        RecordState(fields: try decodeFields(fields), versions: try decodeVersions(versions))
    }

    static func decodeFields(_ text: String) throws -> [String: StampedValue] {
        guard case .object(let members) = try parse(text) else { throw damaged("fields are not an object") }
        var fields: [String: StampedValue] = [:]
        for (name, register) in members {
            guard case .object(let parts) = register, let value = parts["v"],
                  let stampText = parts["s"]?.stringValue, let stamp = HLCTimestamp(text: stampText)
            else { throw damaged("field '\(name)' has no value or stamp") }
            fields[name] = StampedValue(value, stamp: stamp)
        }
        return fields
    }

    static func decodeVersions(_ text: String) throws -> VersionVector {
        guard case .object(let members) = try parse(text) else { throw damaged("versions are not an object") }
        var counters: [String: UInt64] = [:]
        for (device, counter) in members {
            guard let value = counter.intValue, value >= 0 else { throw damaged("version of '\(device)' is not a count") }
            counters[device] = UInt64(value)
        }
        return VersionVector(counters)
    }

    private static func parse(_ text: String) throws -> JSONValue {
        do { return try JSONValue.parse(text) } catch { throw damaged(error.description) }
    }

    private static func damaged(_ reason: String) -> ReplicaError {
        ReplicaError.notAReplica(path: "replica", reason: "a stored record is damaged: \(reason)")
    }
}
