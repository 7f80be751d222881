import Cryptography
import ServerStore
import SyncCore

/// What a write request brings to prove it comes from a holder of the
/// account key (Deploy/SECURITY.md, "Who may do what"): its protocol, its
/// ``WriteSignature`` if any, and the bytes that signature must cover. Built
/// by the API from the request, outside any transaction; checked by
/// ``SyncEngine/authorize(_:account:)`` inside the write transaction, after
/// the account is locked, against the signing key as stored then (no cache:
/// several brsyncd processes share a PostgreSQL store).
public struct WriteAuthority: Sendable {
    public var clientProtocol: Int
    public var signature: WriteSignature?
    /// ``WriteSignature/message(tokenHash:method:path:bodyDigest:)`` of the request.
    public var message: [UInt8]

    public init(clientProtocol: Int, signature: WriteSignature?, message: [UInt8]) {
        self.clientProtocol = clientProtocol
        self.signature = signature
        self.message = message
    }

    /// A request of this build's protocol that signs nothing (tests and
    /// administration write to accounts that are not encrypted with it).
    public static let unsigned = WriteAuthority(clientProtocol: Wire.protocolVersion, signature: nil, message: [])

    /// The authority a request brings.
    /// - Parameters:
    ///   - token: the bearer token (the signature covers its hash).
    ///   - body: the request body (the signature covers its hash).
    public init(
        clientProtocol: Int, signatureHeader: String?, token: String, method: String, path: String, body: [UInt8]
    ) throws(ServerError) {
        guard let signatureHeader else {
            self.init(clientProtocol: clientProtocol, signature: nil, message: [])
            return
        }
        guard let signature = WriteSignature(headerValue: signatureHeader) else {
            throw .badRequest(
                "\(WriteSignature.header) must be an Ed25519 public key and signature, in base64url, separated by a space"
            )
        }
        let message = WriteSignature.message(
            tokenHash: Crypto.hex(Tokens.hash(token)), method: method, path: path,
            bodyDigest: Crypto.hex(Crypto.sha256(body)))
        self.init(clientProtocol: clientProtocol, signature: signature, message: message)
    }

    /// Whether the request is signed by `publicKey` (base64url) over its message.
    func isSigned(by publicKey: String) -> Bool {
        guard let signature, signature.publicKey == publicKey else { return false }
        return Self.verifies(signature: signature.signature, message: message, publicKey: publicKey)
    }

    static func verifies(signature: String, message: [UInt8], publicKey: String) -> Bool {
        guard let key = Crypto.base64URLDecode(publicKey), let signature = Crypto.base64URLDecode(signature) else {
            return false
        }
        return Crypto.verifyEd25519(signature: signature, message: message, publicKey: key)
    }
}

extension SyncEngine {
    /// Who may push or relay to `account`: anyone with a device token when
    /// it is not encrypted; when it is, only a request of protocol 3 signed
    /// with the account's signing key. An encrypted account whose signing
    /// key is not known yet (encrypted before signed writes) takes the
    /// first one that signs a valid request: trust on first use, made
    /// visible to every key holder (each compares the key every pull
    /// answer names with its own and stops on a mismatch).
    /// - Returns: the public key to register (first use), or nil.
    /// - Throws: ``ServerError/upgradeRequired`` for an older client,
    ///   `signature_required`, `signing_key_mismatch` or `bad_signature`.
    static func authorize(_ authority: WriteAuthority, account: Store.AccountCounters) throws(ServerError) -> String? {
        guard account.encrypted else { return nil }
        guard authority.clientProtocol >= Wire.signedWritesProtocol else { throw .upgradeRequired }
        try SyncEngine.checkSealedFormat(authority.clientProtocol, account: account)
        guard let signature = authority.signature else { throw .signatureRequired }
        if !account.signingKey.isEmpty, signature.publicKey != account.signingKey { throw .signingKeyMismatch }
        guard authority.isSigned(by: signature.publicKey) else {
            throw .badSignature("the request's signature does not verify")
        }
        return account.signingKey.isEmpty ? signature.publicKey : nil
    }

    /// What a key change (`POST /v1/account/encrypt`) does.
    enum KeyChange: Equatable {
        /// Nothing: done already (a retry), or encrypted with another key
        /// (the answer names it; the client compares).
        case none
        /// The account's key stays; its signing key is registered (first use).
        case register(String)
        /// The account takes this encryption; its records are deleted.
        case change(Store.Encryption)
    }

    /// Decides a key change. Every one is signed by the new key (the asker
    /// holds it) with protocol 3; encrypting an account that is not (or was
    /// reset) is trust on first use; a rotation is authorised by a chain of
    /// ``KeyCertificate``s from the account's current signing key to the new
    /// key, so a token alone can neither rotate, nor roll a rotation back;
    /// a key the account was rotated away from is never taken again.
    /// - Parameters:
    ///   - accountUID: the account's identity, which certificates name.
    static func keyChange(
        _ request: EncryptRequest, authority: WriteAuthority, account: Store.AccountCounters,
        accountUID: String
    ) throws(ServerError) -> KeyChange {
        guard authority.clientProtocol >= Wire.signedWritesProtocol else {
            throw .badRequest(
                "a key change needs a client of protocol \(Wire.signedWritesProtocol) (signed writes): upgrade brsync")
        }
        if account.encrypted { try SyncEngine.checkSealedFormat(authority.clientProtocol, account: account) }
        guard let publicKey = request.publicKey else {
            throw .badRequest(#"a key change names the new key's signing public key ("publicKey")"#)
        }
        guard authority.signature != nil else { throw .signatureRequired }
        guard authority.isSigned(by: publicKey) else {
            throw .badSignature(
                "a key change is signed with the new key's signing key, and this signature does not verify with \"publicKey\""
            )
        }
        if account.encrypted {
            if request.keyID == account.keyID {
                // A retried rotation, or a key holder registering the signing key.
                if request.replacing == nil, account.signingKey.isEmpty { return .register(publicKey) }
                return .none
            }
            guard let replacing = request.replacing else { return .none }
            if account.retiredKeys.contains(request.keyID) { throw .keyRetired }
            guard replacing == account.keyID else {
                throw .keyRotated(retired: account.retiredKeys.contains(replacing))
            }
            let retired = try checkChain(
                request.certificates, from: account, to: request.keyID, publicKey: publicKey, accountUID: accountUID)
            try checkSeen(request.seen, account: account)
            // Every key the account left, for good: 17 bytes each, and only a key holder adds one.
            let kept = account.retiredKeys.filter { !retired.contains($0) } + retired
            return .change(Store.Encryption(keyID: request.keyID, signingKey: publicKey, retiredKeys: kept))
        }
        // A reset account is encrypted again only on purpose, never by a
        // machine's own sync (which would re-encrypt it with a retired key).
        if account.encryptionReset && !request.afterReset { throw .encryptionReset }
        if account.retiredKeys.contains(request.keyID) { throw .keyRetired }
        try checkSeen(request.seen, account: account)
        return .change(Store.Encryption(keyID: request.keyID, signingKey: publicKey, retiredKeys: account.retiredKeys))
    }

    /// A key change is a compare-and-swap: it is refused while the account
    /// holds records after `seen` (they would be deleted before anyone with
    /// the key holds them). A cursor past the account's latest record did not
    /// come from this account's pages either.
    private static func checkSeen(_ seen: Int64?, account: Store.AccountCounters) throws(ServerError) {
        if let seen, seen != account.nextSequence - 1 {
            throw .accountMoved(seen: seen, latest: account.nextSequence - 1)
        }
    }

    /// Checks a rotation's certificates: a chain from the account's key,
    /// the first signed by its registered signing key, each next one by the
    /// key the one before named, ending at `keyID` with `publicKey`.
    /// - Returns: the key ids the account leaves (the current one and any in between).
    private static func checkChain(
        _ chain: [KeyCertificate], from account: Store.AccountCounters, to keyID: String, publicKey: String,
        accountUID: String
    ) throws(ServerError) -> [String] {
        guard !account.signingKey.isEmpty else {
            // the account's signing key is not known yet: a key holder's sync registers it first
            throw .signatureRequired
        }
        guard !chain.isEmpty else {
            throw .badSignature("a rotation carries a certificate signed by the account's current key")
        }
        var (current, signer) = (account.keyID, account.signingKey)
        var left: [String] = []
        for certificate in chain {
            guard certificate.from == current,
                WriteAuthority.verifies(
                    signature: certificate.signature, message: certificate.statement(account: accountUID),
                    publicKey: signer)
            else {
                throw .badSignature(
                    "the rotation's certificates are not signed by the account's current key, each by the one before")
            }
            if account.retiredKeys.contains(certificate.to) { throw .keyRetired }
            left.append(current)
            (current, signer) = (certificate.to, certificate.publicKey)
        }
        guard current == keyID, signer == publicKey else {
            throw .badSignature("the rotation's certificates do not end at the key it names")
        }
        return left
    }
}
