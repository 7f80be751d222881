import Cryptography
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

    /// A stored record as a push merges into it; `writer` as stored (NULL: none).
    static func version(
        fields: String, versions: String, sequence: Int64, writer: String?
    ) throws -> Store.RecordVersion {
        let state = try decode(fields: fields, versions: versions)
        guard let writer else { return Store.RecordVersion(state: state, sequence: sequence) }
        do {
            return Store.RecordVersion(state: state, sequence: sequence, writer: try VersionVector(json: writer))
        } catch {
            throw ServerError.storeUnusable("a stored record is damaged: \(error)")
        }
    }

    static func collection(_ text: String?) throws -> RecordCollection {
        guard let collection = text.flatMap(RecordCollection.init(rawValue:)) else {
            throw ServerError.storeUnusable("a stored record has an unknown collection")
        }
        return collection
    }

    /// A kept refusal (``StoreTransaction/refusals(account:clientDevice:from:through:)``).
    /// Its key and reason are kept as bytes (a refused key may hold a NUL).
    static func refusal(sequence: Int64, collection: String, key: [UInt8], reason: [UInt8]) throws -> RejectedChange {
        RejectedChange(
            sequence: sequence, collection: try Self.collection(collection), key: String(decoding: key, as: UTF8.self),
            reason: String(decoding: reason, as: UTF8.self))
    }

    /// A stored record version as change `sequence`.
    static func change(
        sequence: Int64?, collection: String?, key: String?, fields: String?, versions: String?
    ) throws -> ChangeRecord {
        ChangeRecord(
            sequence: sequence ?? 0, collection: try Self.collection(collection), key: key ?? "",
            state: try decode(fields: fields ?? "{}", versions: versions ?? "{}"))
    }
}

/// Device tokens: `brs_` and 43 characters of base64url (256 random bits).
/// A join code holds an enrollment secret instead: `brj_` and 43 characters,
/// which reads until `brsync join` exchanges it for a token the joining
/// machine made (see ``SyncStore/join(secret:token:)``).
public enum Tokens {
    public static let prefix = JoinRequest.tokenPrefix
    public static let joinPrefix = JoinRequest.secretPrefix

    public static func make() -> String { Crypto.token(prefix: prefix) }
    public static func makeJoinSecret() -> String { Crypto.token(prefix: joinPrefix) }
    public static func hash(_ token: String) -> [UInt8] { Crypto.sha256(Array(token.utf8)) }

    /// Whether `token` has the form of a device token (a joining machine
    /// makes its own; the server takes nothing weaker).
    public static func isWellFormed(_ token: String) -> Bool { JoinRequest.isWellFormed(token) }
}
