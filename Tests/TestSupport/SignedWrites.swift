import BrsyncServer
import Cryptography
import SyncCore

extension WriteAuthority {
    /// A write signed by `key` as brsync signs it (``WriteSignature``), for
    /// calling a store directly or building a request by hand.
    public static func signed(
        by key: Crypto.SigningKey, token: String, path: String, body: [UInt8], method: String = "POST"
    ) throws -> WriteAuthority {
        try WriteAuthority(
            clientProtocol: Wire.protocolVersion,
            signatureHeader: signatureHeader(by: key, token: token, path: path, body: body, method: method),
            token: token, method: method, path: path, body: body)
    }

    /// The `Brsync-Signature` header's value for such a write.
    public static func signatureHeader(
        by key: Crypto.SigningKey, token: String, path: String, body: [UInt8], method: String = "POST"
    ) -> String {
        let message = WriteSignature.message(
            tokenHash: Crypto.hex(Crypto.sha256(Array(token.utf8))), method: method, path: path,
            bodyDigest: Crypto.hex(Crypto.sha256(body)))
        return WriteSignature(
            publicKey: Crypto.base64URL(key.publicKey), signature: Crypto.base64URL(key.sign(message))
        ).headerValue
    }
}
