import Cryptography
import Testing

/// Ed25519 against RFC 8032's test vectors (section 7.1, tests 1–3; checked
/// against the RFC's own Python code as well as OpenSSL).
@Suite struct CryptoSigningTests {
    static let vectors: [(seed: String, publicKey: String, message: String, signature: String)] = [
        (
            "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60",
            "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a", "",
            "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b"
        ),
        (
            "4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb",
            "3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c", "72",
            "92a009a9f0d4cab8720e820b5f642540a2b27b5416503f8fb3762223ebdb69da085ac1e43e15996e458f3613d0f11d8c387b2eaeb4302aeeb00d291612bb0c00"
        ),
        (
            "c5aa8df43f9f837bedb7442f31dcb7b166d38535076f094b85ce3a2e0b4458f7",
            "fc51cd8e6218a1a38da47ed00230f0580816ed13ba3303ac5deb911548908025", "af82",
            "6291d657deec24024827e69c3abe01a30ce548a284743a445e3680d7db5ac3ac18ff9b538d16f290ae67f760984dc6594a7c15e9716ed28dc027beceea1ec40a"
        ),
    ]

    static let bytes = CryptoSealingTests.bytes

    @Test(arguments: vectors) func signaturesMatchRFC8032(
        seed: String, publicKey: String, message: String, signature: String
    ) {
        let key = Crypto.SigningKey(seed: Self.bytes(seed))
        #expect(Crypto.hex(key.publicKey) == publicKey)
        #expect(Crypto.hex(key.sign(Self.bytes(message))) == signature)
        #expect(
            Crypto.verifyEd25519(
                signature: Self.bytes(signature), message: Self.bytes(message), publicKey: Self.bytes(publicKey)))
    }

    /// Anything changed is refused: a bit of the message, of the signature
    /// or of the key, another key's signature, and sizes that are not Ed25519's.
    @Test func verificationRefusesWhatWasNotSigned() {
        let key = Crypto.SigningKey(seed: Self.bytes(Self.vectors[2].seed))
        let message: [UInt8] = Array("POST /v1/push".utf8)
        let signature = key.sign(message)
        #expect(Crypto.verifyEd25519(signature: signature, message: message, publicKey: key.publicKey))
        var changedMessage = message
        changedMessage[0] ^= 1
        #expect(!Crypto.verifyEd25519(signature: signature, message: changedMessage, publicKey: key.publicKey))
        for index in [0, 31, 32, 63] {
            var changed = signature
            changed[index] ^= 0x10
            #expect(
                !Crypto.verifyEd25519(signature: changed, message: message, publicKey: key.publicKey), "byte \(index)")
        }
        let other = Crypto.SigningKey(seed: Self.bytes(Self.vectors[0].seed))
        #expect(!Crypto.verifyEd25519(signature: other.sign(message), message: message, publicKey: key.publicKey))
        #expect(
            !Crypto.verifyEd25519(signature: Array(signature.dropLast()), message: message, publicKey: key.publicKey))
        #expect(!Crypto.verifyEd25519(signature: signature + [0], message: message, publicKey: key.publicKey))
        #expect(
            !Crypto.verifyEd25519(signature: signature, message: message, publicKey: Array(key.publicKey.dropLast())))
        #expect(!Crypto.verifyEd25519(signature: signature, message: message, publicKey: []))
        // All zeros is no key that signed this (a small-order point at best).
        #expect(
            !Crypto.verifyEd25519(signature: signature, message: message, publicKey: [UInt8](repeating: 0, count: 32)))
        #expect(
            !Crypto.verifyEd25519(
                signature: [UInt8](repeating: 0, count: 64), message: message, publicKey: key.publicKey))
    }
}
