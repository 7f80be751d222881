import Model
import Net
import SyncCore

/// Reading stored record JSON (the wire's shape; written with RecordState.encodeFields/encodeVersions).
enum StoredRecord {
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
