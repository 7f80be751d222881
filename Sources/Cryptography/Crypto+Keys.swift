import COpenSSL
import Synchronization

/// Keys prepared once and used for many messages. OpenSSL 3 looks an
/// algorithm up by name on every one-shot call (`HMAC()`, a new
/// `EVP_CIPHER_CTX` with its AES key schedule and GHASH table), which cost
/// more than the work itself on the short values end-to-end encryption seals:
/// a push of 10,000 rules seals 70,000 of them.
extension Crypto {
    /// An HMAC-SHA256 key (RFC 2104): the key's inner and outer states are
    /// computed once; each message starts from them (`brsync_hmac_sha256`).
    public final class HMACKey: Sendable {
        /// Read-only once made where each message copies the states it starts
        /// from; the EVP_MAC fallback is one context, used under `lock`.
        private nonisolated(unsafe) let prepared: UnsafeMutablePointer<brsync_hmac_sha256_key>
        private let lock = Mutex(())

        public init(_ key: [UInt8]) {
            prepared = .allocate(capacity: 1)
            // Fails only when OpenSSL cannot allocate or lacks SHA-256; nothing can be sealed then.
            let made = key.withUnsafeBufferPointer { brsync_hmac_sha256_key_init(prepared, $0.baseAddress, $0.count) }
            precondition(made == 1, "OpenSSL cannot prepare an HMAC-SHA256 key")
        }

        deinit {
            brsync_hmac_sha256_key_clear(prepared)
            prepared.deallocate()
        }

        /// The 32-byte HMAC-SHA256 of `data`.
        public func code(_ data: [UInt8]) -> [UInt8] {
            var output = [UInt8](repeating: 0, count: 32)
            data.withUnsafeBytes { data in
                output.withUnsafeMutableBufferPointer { output in
                    code(data, UnsafeRawBufferPointer(start: nil, count: 0), into: output.baseAddress!)
                }
            }
            return output
        }

        /// Writes the 32-byte HMAC-SHA256 of `first` followed by `second` to `output`.
        public func code(
            _ first: UnsafeRawBufferPointer, _ second: UnsafeRawBufferPointer, into output: UnsafeMutablePointer<UInt8>
        ) {
            let done = lock.withLock { _ in
                brsync_hmac_sha256(prepared, first.baseAddress, first.count, second.baseAddress, second.count, output)
            }
            precondition(done == 1, "HMAC-SHA256 failed")
        }
    }

    /// An AES-256-GCM key (12-byte nonce, 16-byte tag) with its schedule
    /// computed once; each seal or open sets only the nonce.
    public final class GCMKey: Sendable {
        private struct Contexts {
            let encrypt: OpaquePointer
            let decrypt: OpaquePointer
        }

        /// Used only while `lock` is held.
        private nonisolated(unsafe) let contexts: Contexts
        private let lock = Mutex(())

        public init(_ key: [UInt8]) {
            precondition(key.count == 32, "AES-256-GCM takes a 32-byte key")
            guard let encrypt = EVP_CIPHER_CTX_new(), let decrypt = EVP_CIPHER_CTX_new(),
                EVP_EncryptInit_ex(encrypt, EVP_aes_256_gcm(), nil, key, nil) == 1,
                EVP_DecryptInit_ex(decrypt, EVP_aes_256_gcm(), nil, key, nil) == 1
            else { preconditionFailure("OpenSSL cannot make an AES-256-GCM context") }
            contexts = Contexts(encrypt: encrypt, decrypt: decrypt)
        }

        deinit {
            // Frees clear the key schedule.
            EVP_CIPHER_CTX_free(contexts.encrypt)
            EVP_CIPHER_CTX_free(contexts.decrypt)
        }

        /// `plaintext` sealed under `nonce` (12 bytes), with `authenticated`
        /// bound to it: nonce, ciphertext and tag, in that order (CryptoKit's
        /// `combined`).
        public func seal(_ plaintext: [UInt8], authenticated: [UInt8], nonce: [UInt8]) -> [UInt8] {
            precondition(nonce.count == 12, "AES-GCM takes a 12-byte nonce")
            var combined = [UInt8](repeating: 0, count: 12 + plaintext.count + 16)
            plaintext.withUnsafeBufferPointer { plaintext in
                authenticated.withUnsafeBufferPointer { authenticated in
                    nonce.withUnsafeBufferPointer { nonce in
                        combined.withUnsafeMutableBufferPointer { output in
                            seal(
                                plaintext, authenticated: authenticated, nonce: nonce.baseAddress!,
                                into: output.baseAddress!)
                        }
                    }
                }
            }
            return combined
        }

        /// As ``seal(_:authenticated:nonce:)``, written to `output`, which
        /// holds 12 + `plaintext.count` + 16 bytes.
        public func seal(
            _ plaintext: UnsafeBufferPointer<UInt8>, authenticated: UnsafeBufferPointer<UInt8>,
            nonce: UnsafePointer<UInt8>,
            into output: UnsafeMutablePointer<UInt8>
        ) {
            let done = lock.withLock { _ in
                let context = contexts.encrypt
                output.update(from: nonce, count: 12)
                var length: Int32 = 0
                guard EVP_EncryptInit_ex(context, nil, nil, nil, nonce) == 1 else { return false }
                if !authenticated.isEmpty,
                    EVP_EncryptUpdate(context, nil, &length, authenticated.baseAddress, Int32(authenticated.count)) != 1
                {
                    return false
                }
                var written = 0
                if !plaintext.isEmpty {
                    guard
                        EVP_EncryptUpdate(context, output + 12, &length, plaintext.baseAddress, Int32(plaintext.count))
                            == 1
                    else { return false }
                    written = Int(length)
                }
                guard EVP_EncryptFinal_ex(context, output + 12 + written, &length) == 1 else { return false }
                written += Int(length)
                return written == plaintext.count
                    && EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_GCM_GET_TAG, 16, output + 12 + written) == 1
            }
            precondition(done, "AES-GCM failed")
        }

        /// The plaintext of `combined` (nonce, ciphertext, tag) sealed with
        /// `authenticated`.
        /// - Throws: ``Crypto/SealingError`` when it is shorter than a nonce
        ///   and a tag, or when the key, the authenticated data, the nonce, the
        ///   ciphertext or the tag is not the one it was sealed with (nothing
        ///   of the plaintext is returned then).
        public func open(_ combined: [UInt8], authenticated: [UInt8]) throws(SealingError) -> [UInt8] {
            guard combined.count >= 28 else {
                throw SealingError(
                    message: "a sealed value is at least 28 bytes (nonce and tag); this one has \(combined.count)")
            }
            let count = combined.count - 28
            var plaintext = [UInt8](repeating: 0, count: count + 16)
            let verified = lock.withLock { _ in
                combined.withUnsafeBufferPointer { input in
                    plaintext.withUnsafeMutableBufferPointer { output in
                        let context = contexts.decrypt
                        let base = input.baseAddress!
                        var length: Int32 = 0
                        guard EVP_DecryptInit_ex(context, nil, nil, nil, base) == 1 else { return false }
                        if !authenticated.isEmpty,
                            EVP_DecryptUpdate(context, nil, &length, authenticated, Int32(authenticated.count)) != 1
                        {
                            return false
                        }
                        var written = 0
                        if count > 0 {
                            guard EVP_DecryptUpdate(context, output.baseAddress, &length, base + 12, Int32(count)) == 1
                            else { return false }
                            written = Int(length)
                        }
                        guard
                            EVP_CIPHER_CTX_ctrl(
                                context, EVP_CTRL_GCM_SET_TAG, 16, UnsafeMutableRawPointer(mutating: base + 12 + count))
                                == 1,
                            EVP_DecryptFinal_ex(context, output.baseAddress! + written, &length) == 1
                        else { return false }
                        return written + Int(length) == count
                    }
                }
            }
            guard verified else {
                // Nothing of what was decrypted leaves this function.
                plaintext.withUnsafeMutableBufferPointer { buffer in buffer.update(repeating: 0) }
                throw SealingError(
                    message: "the sealed value does not open with this key (wrong key, or changed since it was sealed)")
            }
            plaintext.removeLast(16)
            return plaintext
        }
    }
}
