import COpenSSL

/// Ed25519 signatures (RFC 8032) through OpenSSL's EVP interface: a key pair
/// made from a 32-byte seed, so every holder of an account key derives the
/// same pair (the phone with CryptoKit's
/// `Curve25519.Signing.PrivateKey(rawRepresentation:)` too). RFC 8032's
/// signatures are deterministic; CryptoKit's are not, and both verify
/// alike: nothing may depend on a signature's bytes being the same twice.
extension Crypto {
    /// An Ed25519 private key and its public key.
    public final class SigningKey: Sendable {
        /// The 32-byte public key.
        public let publicKey: [UInt8]
        /// The EVP_PKEY; only read once made (signing takes a context of its own).
        private nonisolated(unsafe) let key: OpaquePointer

        /// - Parameter seed: 32 bytes (RFC 8032's private key).
        public init(seed: [UInt8]) {
            precondition(seed.count == 32, "an Ed25519 seed is 32 bytes")
            // Fails only when OpenSSL cannot allocate or lacks Ed25519; nothing can be signed then.
            guard
                let key = seed.withUnsafeBufferPointer({
                    EVP_PKEY_new_raw_private_key(EVP_PKEY_ED25519, nil, $0.baseAddress, 32)
                })
            else {
                preconditionFailure("OpenSSL cannot make an Ed25519 key")
            }
            self.key = key
            var publicKey = [UInt8](repeating: 0, count: 32)
            var length = 32
            let read = publicKey.withUnsafeMutableBufferPointer {
                EVP_PKEY_get_raw_public_key(key, $0.baseAddress, &length)
            }
            precondition(read == 1 && length == 32, "OpenSSL cannot give an Ed25519 public key")
            self.publicKey = publicKey
        }

        deinit { EVP_PKEY_free(key) }

        /// The 64-byte signature of `message`.
        public func sign(_ message: [UInt8]) -> [UInt8] {
            guard let context = EVP_MD_CTX_new() else {
                preconditionFailure("OpenSSL cannot allocate a signing context")
            }
            defer { EVP_MD_CTX_free(context) }
            var signature = [UInt8](repeating: 0, count: 64)
            var length = 64
            let signed =
                EVP_DigestSignInit(context, nil, nil, nil, key) == 1
                && signature.withUnsafeMutableBufferPointer { output in
                    message.withUnsafeBufferPointer {
                        EVP_DigestSign(context, output.baseAddress, &length, $0.baseAddress, $0.count)
                    }
                } == 1
            precondition(signed && length == 64, "Ed25519 signing failed")
            return signature
        }
    }

    /// Whether `signature` is `publicKey`'s Ed25519 signature of `message`.
    /// A public key or signature of the wrong length, or a public key that
    /// is not a curve point, is false.
    public static func verifyEd25519(signature: [UInt8], message: [UInt8], publicKey: [UInt8]) -> Bool {
        guard signature.count == 64, publicKey.count == 32,
            let key = publicKey.withUnsafeBufferPointer({
                EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, nil, $0.baseAddress, 32)
            })
        else { return false }
        defer { EVP_PKEY_free(key) }
        guard let context = EVP_MD_CTX_new() else { return false }
        defer { EVP_MD_CTX_free(context) }
        guard EVP_DigestVerifyInit(context, nil, nil, nil, key) == 1 else { return false }
        return signature.withUnsafeBufferPointer { signature in
            message.withUnsafeBufferPointer {
                EVP_DigestVerify(context, signature.baseAddress, 64, $0.baseAddress, $0.count)
            }
        } == 1
    }
}
