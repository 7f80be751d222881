import Storage
import SyncCore

/// Everything a request or a command can fail with. ``httpStatus`` and ``code``
/// are the one place errors become HTTP answers; ``description`` is the one line
/// a command prints.
public enum ServerError: Error, Sendable, CustomStringConvertible {
    case unauthorized(String)
    case revoked
    case badRequest(String)
    case notFound(String)
    /// 405, with the methods the endpoint takes (its `Allow`, RFC 9110 §15.5.6).
    case methodNotAllowed(String, allow: [String])
    case gap(expected: Int64, got: Int64, digest: String)
    /// The device's change numbers were reused for other content (a copied home
    /// or one restored from an older copy): the client takes a new device id.
    case diverged(acknowledged: Int64, digest: String)
    /// With the device's last applied change and its digest when known (so the
    /// client re-stamps only changes the server does not have).
    case clockSkew(
        aheadMilliseconds: Int64, maximumMilliseconds: Int64, acknowledged: Int64? = nil, digest: String? = nil)
    case foreignStamp(String)
    case conflict(String)
    /// A readable change for an end-to-end encrypted account.
    case encryptionRequired(String)
    /// A sealed change, or a request only an encrypted account takes, for
    /// an account that is not encrypted; the text says what (after "and").
    case notEncrypted(String)
    /// A client of protocol 1 for an encrypted account: it cannot read it.
    case upgradeRequired
    /// A client older than ``Wire/sealedFormatProtocol`` for an encrypted
    /// account marked format 2 (since that day, `YYYY-MM-DD`, when known):
    /// it would not read its records, nor write as its machines do.
    case sealedFormatUpgrade(since: String?)
    /// Changes, a pull or a rotation under an account key the account no
    /// longer uses (it was rotated on another machine). `retired`: the
    /// request's key is one the account was rotated away from, so its
    /// holder never seals with it again.
    case keyRotated(retired: Bool)
    /// A key change from a device that has not pulled the account's latest
    /// records: they would be deleted with the old key's data unseen.
    case accountMoved(seen: Int64, latest: Int64)
    /// A key change naming another account than the device's: a replica's
    /// key belongs to the account it was made for.
    case otherAccount
    /// A write to an encrypted account without a signature.
    case signatureRequired
    /// A signature or certificate that does not verify.
    case badSignature(String)
    /// Signed with another key than the account's registered signing key.
    case signingKeyMismatch
    /// A key change to a key the account was rotated away from.
    case keyRetired
    /// A request naming a key to an account whose encryption the operator reset.
    case encryptionReset
    /// A pull from the future by a credential that may not start a timeline (see ``WireError/Code/rollbackUnconfirmed``).
    case rollbackUnconfirmed(encrypted: Bool)
    /// A readable account's timeline started anew less than `retryAfterSeconds` ago.
    case timelineLimited(retryAfterSeconds: Int)
    /// A push or relay that would take the account past one of its limits
    /// (records or bytes), or a device past its device limit.
    case quotaExceeded(what: String, would: Int64, limit: Int64)
    /// ``quotaExceeded(what:would:limit:)`` met by a part of a relay after
    /// `applied` records of the parts before it were merged (``Store/relayPartBytes``).
    case quotaExceededInRelay(what: String, would: Int64, limit: Int64, applied: Int)
    /// Another refusal (the device revoked, its token replaced) met by a
    /// part of a relay after `applied` records of the parts before it were
    /// merged: its status and code, its message saying so.
    indirect case inRelay(ServerError, applied: Int)
    case unavailable(String)
    case database(DatabaseError)
    case storeUnusable(String)
    case newerSchema(found: Int, supported: Int)

    public var httpStatus: Int {
        switch self {
        case .inRelay(let refusal, _): return refusal.httpStatus
        case .unauthorized, .revoked: return 401
        case .badRequest: return 400
        case .notFound: return 404
        case .methodNotAllowed: return 405
        case .gap, .diverged, .conflict, .encryptionRequired, .notEncrypted, .upgradeRequired, .sealedFormatUpgrade,
            .keyRotated, .accountMoved, .otherAccount:
            return 409
        case .clockSkew, .foreignStamp: return 422
        case .signatureRequired, .badSignature, .signingKeyMismatch: return 403
        case .quotaExceeded, .quotaExceededInRelay: return 507
        case .keyRetired, .encryptionReset, .rollbackUnconfirmed: return 409
        case .timelineLimited: return 429
        case .unavailable: return 503
        case .database(let error) where error.isBusy: return 503
        case .database, .storeUnusable, .newerSchema: return 500
        }
    }

    /// Stable error codes clients rely on.
    public var code: WireError.Code {
        switch self {
        case .inRelay(let refusal, _): return refusal.code
        case .unauthorized: return .unauthorized
        case .revoked: return .revoked
        case .badRequest: return .badRequest
        case .notFound: return .notFound
        case .methodNotAllowed: return .methodNotAllowed
        case .gap: return .gap
        case .diverged: return .diverged
        case .clockSkew: return .clockSkew
        case .foreignStamp: return .foreignStamp
        case .conflict: return .conflict
        case .encryptionRequired: return .encryptionRequired
        case .notEncrypted: return .notEncrypted
        case .upgradeRequired, .sealedFormatUpgrade: return .upgradeRequired
        case .keyRotated: return .keyRotated
        case .accountMoved: return .accountMoved
        case .otherAccount: return .otherAccount
        case .signatureRequired: return .signatureRequired
        case .badSignature: return .badSignature
        case .signingKeyMismatch: return .signingKeyMismatch
        case .keyRetired: return .keyRetired
        case .encryptionReset: return .encryptionReset
        case .rollbackUnconfirmed: return .rollbackUnconfirmed
        case .timelineLimited: return .timelineLimited
        case .quotaExceeded, .quotaExceededInRelay: return .quotaExceeded
        case .unavailable: return .unavailable
        case .database(let error) where error.isBusy: return .busy
        case .database, .storeUnusable, .newerSchema: return .`internal`
        }
    }

    public var description: String {
        switch self {
        case .unauthorized(let message), .badRequest(let message), .notFound(let message),
            .methodNotAllowed(let message, _),
            .foreignStamp(let message), .conflict(let message), .unavailable(let message), .storeUnusable(let message),
            .badSignature(let message):
            return message
        case .encryptionRequired(let what):
            return
                "this account is end-to-end encrypted and takes sealed records only (\(what)): add the account's recovery code with 'brsync key add'"
        case .notEncrypted(let what):
            return "this account is not end-to-end encrypted, and \(what)"
        case .keyRotated:
            return
                "this account's key was rotated on another machine: add the new recovery code with 'brsync key add' (this machine's edits are kept and go up then)"
        case .accountMoved(let seen, let latest):
            return
                "the account changed since this machine last pulled (it has seen up to #\(seen), the account is at #\(latest)): sync and try again (nothing was changed)"
        case .otherAccount:
            return
                "this machine's account key belongs to another account than this device's (nothing was changed): add this account's recovery code with 'brsync key add'"
        case .upgradeRequired:
            return
                "this account is end-to-end encrypted: this brsync is too old to sync it; upgrade brsync, then add the recovery code with 'brsync key add'"
        case .sealedFormatUpgrade(let since):
            let date = since.map { " since \($0)" } ?? ""
            return
                "this account's records are sealed in format 2\(date), which this brsync (or app) does not read: upgrade it on this machine"
        case .signatureRequired:
            return
                "writes to an end-to-end encrypted account are signed with the account key's signing key: a device token alone only reads"
        case .signingKeyMismatch:
            return
                "this request is signed with another key than the one this server keeps for the account: a device token was used "
                + "without the key to claim the account, or the server lies. Ask the server's operator to reset the account's encryption"
        case .keyRetired:
            return
                "the account was rotated away from this key: it is never taken again (add the current recovery code with 'brsync key add')"
        case .quotaExceeded(let what, let would, let limit) where what == "devices":
            // Said to the operator (`brsyncd device add`), not to a machine.
            return
                "the account has \(would - 1) devices, its limit of \(limit) (revoked devices count): revoke one and give its name "
                + "to the new machine ('brsyncd device token ACCOUNT NAME'), or raise the limit ('brsyncd account limits ACCOUNT --devices N')"
        case .quotaExceeded(let what, _, let limit) where what.hasPrefix("replica streams"):
            return
                "this account has pushed under \(limit) device ids, the server's limit: nothing of this request was applied (the edits "
                + "stay on the machine). A copied home or a key change takes a new id; so many mean something pushes under invented ones: "
                + "ask the server's operator"
        case .quotaExceeded(let what, let would, let limit):
            return
                "this account would hold \(would) \(what), past its limit of \(limit): nothing of this request was applied (the edits "
                + "stay on the machine). Ask the server's operator to raise the limit (removing rules frees nothing until the server purges their deletions, after its retention) "
                + "('brsyncd account limits ACCOUNT --\(what == "bytes" ? "bytes" : "records") N')"
        case .quotaExceededInRelay(let what, let would, let limit, let applied):
            return
                "this account would hold \(would) \(what), past its limit of \(limit): this relay was merged in parts, and "
                + "\(applied) record(s) of the parts before this one were applied; the rest were not (they stay on the machine). "
                + "Ask the server's operator to raise the limit (removing rules frees nothing until the server purges their deletions, after its retention) "
                + "('brsyncd account limits ACCOUNT --\(what == "bytes" ? "bytes" : "records") N')"
        case .encryptionReset:
            return
                "the server's operator reset this account's end-to-end encryption: nothing is taken sealed until a machine "
                + "encrypts it again ('brsync key init')"
        case .rollbackUnconfirmed(let encrypted):
            return encrypted
                ? "this cursor is past the account's latest record: the server was rolled back, or the cursor is wrong. In an end-to-end "
                    + "encrypted account a new timeline starts only when a key holder confirms it (a signed POST /v1/account/timeline); nothing was changed"
                : "this cursor is past the account's latest record: a join code's secret does not start a new timeline (nothing was changed)"
        case .timelineLimited(let seconds):
            return
                "this account's timeline was started anew moments ago: another start waits \(seconds) s (nothing was changed)"
        case .revoked: return "this device's token was revoked"
        case .inRelay(let refusal, let applied):
            return
                "\(refusal.description) (this relay was merged in parts: \(applied) record(s) of the parts before this one "
                + "were applied, the rest were not)"
        case .gap(let expected, let got, _):
            return
                "the push starts at device sequence \(got), but the server expects \(expected): push the changes in between first"
        case .diverged(let acknowledged, _):
            return
                "change \(acknowledged) of this device differs from the one the server applied: this replica was copied or restored from an older copy, and needs a device id of its own"
        case .clockSkew(let ahead, let maximum, _, _):
            return
                "a stamp is \(Double(ahead) / 1000) s ahead of the server's clock (at most \(maximum / 1000) s allowed): this machine's clock, or the server's, is off by about that much"
        case .database(let error): return "database error: \(error)"
        case .newerSchema(let found, let supported):
            return
                "the database has schema version \(found), newer than this brsyncd supports (\(supported)); upgrade brsyncd. The file was left untouched"
        }
    }

    /// What the client sees: internal details stay in the server log.
    public var wire: WireError {
        switch self {
        case .database(let error) where error.isBusy: return WireError(code: code, message: "the server is busy; retry")
        case .database, .storeUnusable, .newerSchema: return WireError(code: code, message: "internal server error")
        case .gap(let expected, _, let digest):
            return WireError(code: code, message: description, acknowledged: expected - 1, digest: digest)
        case .diverged(let acknowledged, let digest):
            return WireError(code: code, message: description, acknowledged: acknowledged, digest: digest)
        case .clockSkew(_, _, let acknowledged, let digest):
            return WireError(code: code, message: description, acknowledged: acknowledged, digest: digest)
        case .keyRotated(let retired): return WireError(code: code, message: description, retired: retired)
        default: return WireError(code: code, message: description)
        }
    }
}
