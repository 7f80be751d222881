import Model
import Net
import SyncCore

/// The JSON of stored record fields and versions (the same shape as on the wire).
enum StoredRecord {
    static func encode(_ fields: [String: StampedValue]) -> String {
        RecordState.encodeFields(fields)
    }

    static func encode(_ versions: VersionVector) -> String {
        RecordState.encodeVersions(versions)
    }

    static func decode(fields: String, versions: String) throws -> RecordState {
        do { return try RecordState(fieldsJSON: fields, versionsJSON: versions) } catch {
            throw ServerError.storeUnusable("a stored record is damaged: \(error)")
        }
    }
}

/// Device tokens: `brs_` and 43 characters of base64url (256 random bits).
public enum Tokens {
    public static func make() -> String { "brs_" + Crypto.base64URL(Crypto.randomBytes(32)) }
    public static func hash(_ token: String) -> [UInt8] { Crypto.sha256(Array(token.utf8)) }
}
