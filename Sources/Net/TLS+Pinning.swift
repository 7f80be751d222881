import COpenSSL
import Cryptography
import Glibc
import SystemServices

/// Trusting a server by the fingerprint of its CA certificate (one-step
/// pairing): a join code carries the SHA-256 of the CA's
/// certificate, so no CA file needs copying, and a man in the middle, who
/// cannot present a chain ending in that CA, is refused.
public enum CertificatePinning {
    /// The SHA-256 fingerprint of a DER certificate.
    public static func fingerprint(der: [UInt8]) -> [UInt8] { Crypto.sha256(der) }

    /// The certificates of a PEM file, as DER, in order.
    /// - Throws: ``NetError/tls(_:)`` for a file that cannot be read or holds none.
    public static func certificates(pemFile: String) throws(NetError) -> [[UInt8]] {
        ERR_clear_error()
        guard access(pemFile, R_OK) == 0 else { throw .tls("cannot read \(pemFile): \(SystemError.text())") }
        guard let bio = BIO_new_file(pemFile, "r") else {
            throw .tls("cannot open \(pemFile): \(openSSLErrors("unreadable"))")
        }
        defer { BIO_free(bio) }
        var certificates: [[UInt8]] = []
        while let certificate = PEM_read_bio_X509(bio, nil, nil, nil) {
            defer { X509_free(certificate) }
            certificates.append(der(certificate))
        }
        ERR_clear_error() // the end of the file reads as an error
        guard !certificates.isEmpty else { throw .tls("\(pemFile) holds no PEM certificate") }
        return certificates
    }

    static func der(_ certificate: OpaquePointer) -> [UInt8] {
        let length = i2d_X509(certificate, nil)
        guard length > 0 else { return [] }
        var bytes = [UInt8](repeating: 0, count: Int(length))
        bytes.withUnsafeMutableBufferPointer { buffer in
            var pointer = buffer.baseAddress
            _ = i2d_X509(certificate, &pointer)
        }
        return bytes
    }

    /// A certificate as PEM text.
    public static func pem(der: [UInt8]) -> String {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
        var encoded: [UInt8] = []
        var index = 0
        while index < der.count {
            let chunk = Array(der[index..<min(index + 3, der.count)])
            let value = chunk.enumerated().reduce(UInt32(0)) { $0 | UInt32($1.element) << (16 - 8 * UInt32($1.offset)) }
            for position in 0..<4 {
                encoded.append(
                    position <= chunk.count
                        ? alphabet[Int(value >> (18 - 6 * UInt32(position)) & 63)] : UInt8(ascii: "="))
            }
            index += 3
        }
        var lines = "-----BEGIN CERTIFICATE-----\n"
        var start = 0
        while start < encoded.count {
            lines += String(decoding: encoded[start..<min(start + 64, encoded.count)], as: UTF8.self) + "\n"
            start += 64
        }
        return lines + "-----END CERTIFICATE-----\n"
    }

    /// Connects to `address` and returns the certificate (DER) of the CA
    /// whose SHA-256 is `fingerprint`: one the server presents in its chain
    /// (checked: the chain must verify to it and name `serverName`), else the
    /// root of the chain verified against the system's CA store.
    /// - Throws: ``NetError/tls(_:)`` when no such CA vouches for the server
    ///   (a man in the middle, or the wrong code); connection errors as
    ///   ``NetError``.
    public static func fetchCA(
        address: SocketAddress, serverName: String, fingerprint: [UInt8],
        timeoutMilliseconds: Int = 10_000
    ) throws(NetError) -> [UInt8] {
        // 1. The chain the server presents, not verified yet: only certificates are read.
        let presented = try handshake(
            address: address, serverName: serverName, context: try TLSContext.clientForFetching(),
            timeoutMilliseconds: timeoutMilliseconds
        ) { $0.peerChain() }
        if let candidate = presented.first(where: { Self.fingerprint(der: $0) == fingerprint }) {
            // 2. Trusted only if the server's chain verifies to it, for this name.
            let pinned = try TLSContext.client(trusting: [candidate])
            _ = try handshake(
                address: address, serverName: serverName, context: pinned, timeoutMilliseconds: timeoutMilliseconds
            ) { _ in () }
            return candidate
        }
        // 3. A public CA: the chain verified by the system store ends in it.
        let verified: [[UInt8]]
        do {
            verified = try handshake(
                address: address, serverName: serverName, context: try TLSContext.client(caFile: nil),
                timeoutMilliseconds: timeoutMilliseconds
            ) { $0.verifiedChain() }
        } catch .tls {
            verified = []
        }
        if let root = verified.last, Self.fingerprint(der: root) == fingerprint { return root }
        throw .tls(
            "no certificate of the server's chain has the join code's CA fingerprint: a man in the middle, or a code for another server (nothing was saved)"
        )
    }

    private static func handshake<T>(
        address: SocketAddress, serverName: String, context: TLSContext, timeoutMilliseconds: Int,
        _ body: (TLSStream) -> T
    ) throws(NetError) -> T {
        let deadline = Deadline.after(milliseconds: timeoutMilliseconds)
        let socket = try Socket.connect(to: address, deadline: deadline)
        let stream = try TLSStream.connect(socket: socket, context: context, serverName: serverName, deadline: deadline)
        defer { stream.close() }
        return body(stream)
    }
}

extension TLSContext {
    /// A client context that does not verify the server: only for reading
    /// the certificates it presents, never for sending anything.
    static func clientForFetching() throws(NetError) -> TLSContext {
        let context = try client(caFile: nil)
        SSL_CTX_set_verify(context.context, SSL_VERIFY_NONE, nil)
        return context
    }

    /// A client context trusting only `certificates` (DER).
    public static func client(trusting certificates: [[UInt8]]) throws(NetError) -> TLSContext {
        let context = try client(caFile: nil, loadSystemStore: false)
        let store = SSL_CTX_get_cert_store(context.context)
        for der in certificates {
            let certificate = der.withUnsafeBufferPointer { buffer -> OpaquePointer? in
                var pointer = buffer.baseAddress
                return d2i_X509(nil, &pointer, buffer.count)
            }
            guard let certificate else { throw .tls("a pinned certificate is not DER") }
            defer { X509_free(certificate) }
            guard X509_STORE_add_cert(store, certificate) == 1 else {
                throw .tls(openSSLErrors("cannot trust a pinned certificate"))
            }
        }
        return context
    }
}

extension TLSStream {
    /// The certificates the server presented (DER), leaf first.
    func peerChain() -> [[UInt8]] {
        guard let chain = SSL_get_peer_cert_chain(ssl) else { return [] }
        return (0..<brsync_sk_X509_num(chain)).compactMap {
            brsync_sk_X509_value(chain, $0).map(CertificatePinning.der)
        }
    }

    /// The chain OpenSSL verified (DER), leaf first, root last.
    func verifiedChain() -> [[UInt8]] {
        guard let chain = SSL_get0_verified_chain(ssl) else { return [] }
        return (0..<brsync_sk_X509_num(chain)).compactMap {
            brsync_sk_X509_value(chain, $0).map(CertificatePinning.der)
        }
    }
}
