import COpenSSL
import Glibc
import SystemServices

/// OpenSSL's error queue in words (and emptied).
func openSSLErrors(_ fallback: String) -> String {
    var messages: [String] = []
    while true {
        let code = ERR_get_error()
        if code == 0 { break }
        var buffer = [CChar](repeating: 0, count: 256)
        ERR_error_string_n(code, &buffer, buffer.count)
        messages.append(String(nullTerminated: buffer))
    }
    return messages.isEmpty ? fallback : messages.joined(separator: "; ")
}

/// The `http/1.1` ALPN protocol list, allocated once for the process.
// nonisolated(unsafe): initialised once (Swift globals are lazily initialised
// exactly once) and only read afterwards.
nonisolated(unsafe) private let alpnHTTP11: UnsafeMutableBufferPointer<UInt8> = {
    let bytes: [UInt8] = [8] + Array("http/1.1".utf8)
    let buffer = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: bytes.count)
    _ = buffer.initialize(from: bytes)
    return buffer
}()

/// Server ALPN: select `http/1.1`; a client that offers only other protocols is refused.
private let selectALPN:
    @convention(c) (
        OpaquePointer?, UnsafeMutablePointer<UnsafePointer<UInt8>?>?, UnsafeMutablePointer<UInt8>?,
        UnsafePointer<UInt8>?, UInt32, UnsafeMutableRawPointer?
    ) -> Int32 = { _, out, outLength, offered, offeredLength, _ in
        var selected: UnsafeMutablePointer<UInt8>?
        var selectedLength: UInt8 = 0
        let status = SSL_select_next_proto(
            &selected, &selectedLength, UnsafePointer(alpnHTTP11.baseAddress), UInt32(alpnHTTP11.count), offered,
            offeredLength)
        guard status == OPENSSL_NPN_NEGOTIATED, let selected else { return brsync_SSL_TLSEXT_ERR_ALERT_FATAL() }
        out?.pointee = UnsafePointer(selected)
        outLength?.pointee = selectedLength
        return brsync_SSL_TLSEXT_ERR_OK()
    }

/// Key-exchange groups, in order of preference.
let keyExchangeGroups = "X25519:P-256:P-384"

/// TLS 1.2 cipher suites: forward secrecy and AEAD only (Mozilla "intermediate").
/// TLS 1.3 suites are OpenSSL's defaults, all modern.
let modernTLS12Ciphers =
    "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305"

/// An OpenSSL context: a server's (certificate chain and key) or a client's
/// (trusted CAs). Immutable once made, so it is shared by every connection.
public final class TLSContext: @unchecked Sendable {
    // @unchecked: the SSL_CTX is configured in init and only read afterwards;
    // OpenSSL allows SSL_new on one context from many threads.
    let context: OpaquePointer

    private init(context: OpaquePointer) {
        self.context = context
    }

    /// A new context for `method` (server or client), TLS 1.2 at least.
    private convenience init(method: OpaquePointer?) throws(NetError) {
        ERR_clear_error()
        guard let context = SSL_CTX_new(method) else { throw .tls(openSSLErrors("cannot create a TLS context")) }
        self.init(context: context)
        brsync_SSL_CTX_set_min_proto_version(context, TLS1_2_VERSION)
    }

    deinit { SSL_CTX_free(context) }

    /// A server context: TLS 1.2 minimum, modern ciphers, no compression, no
    /// renegotiation, ALPN `http/1.1`, the chain and key from PEM files.
    /// - Throws: ``NetError/tls(_:)`` saying which file is wrong, or that the
    ///   key does not match the certificate.
    public static func server(certificateChainFile: String, privateKeyFile: String) throws(NetError) -> TLSContext {
        let tls = try TLSContext(method: TLS_server_method())
        let context = tls.context
        brsync_SSL_CTX_set_server_options(context)
        guard SSL_CTX_set_cipher_list(context, modernTLS12Ciphers) == 1 else {
            throw .tls(openSSLErrors("cannot set the cipher list"))
        }
        // X25519, P-256 and P-384 only (Mozilla "intermediate"): the finite-field
        // groups OpenSSL also offers in TLS 1.3 cost a client nothing to ask for
        // and the server up to ~140× an X25519 handshake (ffdhe8192).
        guard brsync_SSL_CTX_set1_groups_list(context, keyExchangeGroups) == 1 else {
            throw .tls(openSSLErrors("cannot set the key-exchange groups"))
        }
        for file in [certificateChainFile, privateKeyFile] where access(file, R_OK) != 0 {
            throw .tls("cannot read \(file): \(SystemError.text())")
        }
        guard SSL_CTX_use_certificate_chain_file(context, certificateChainFile) == 1 else {
            throw .tls("\(certificateChainFile) is not a PEM certificate chain (\(openSSLErrors("unreadable")))")
        }
        guard SSL_CTX_use_PrivateKey_file(context, privateKeyFile, SSL_FILETYPE_PEM) == 1 else {
            let errors = openSSLErrors("unreadable")
            if errors.contains("mismatch") {
                throw .tls("the key in \(privateKeyFile) does not match the certificate in \(certificateChainFile)")
            }
            throw .tls("\(privateKeyFile) is not a PEM private key (\(errors))")
        }
        guard SSL_CTX_check_private_key(context) == 1 else {
            throw .tls("the key in \(privateKeyFile) does not match the certificate in \(certificateChainFile)")
        }
        SSL_CTX_set_alpn_select_cb(context, selectALPN, nil)
        return tls
    }

    /// A client context that verifies servers against `caFile`, or the system's
    /// CA store when nil; TLS 1.2 minimum, ALPN `http/1.1`.
    public static func client(caFile: String?) throws(NetError) -> TLSContext {
        try client(caFile: caFile, loadSystemStore: true)
    }

    static func client(caFile: String?, loadSystemStore: Bool) throws(NetError) -> TLSContext {
        let tls = try TLSContext(method: TLS_client_method())
        let context = tls.context
        brsync_SSL_CTX_set_client_options(context)
        SSL_CTX_set_verify(context, SSL_VERIFY_PEER, nil)
        if let caFile {
            guard access(caFile, R_OK) == 0 else {
                throw .tls("cannot read the CA file \(caFile): \(SystemError.text())")
            }
            guard SSL_CTX_load_verify_locations(context, caFile, nil) == 1 else {
                throw .tls("\(caFile) holds no PEM certificate (\(openSSLErrors("unreadable")))")
            }
        } else if loadSystemStore {
            guard SSL_CTX_set_default_verify_paths(context) == 1 else {
                throw .tls(openSSLErrors("cannot load the system CA store"))
            }
        }
        _ = SSL_CTX_set_alpn_protos(context, alpnHTTP11.baseAddress, UInt32(alpnHTTP11.count))
        return tls
    }
}

/// TLS over a non-blocking socket; every operation waits with `poll` until a deadline.
public final class TLSStream: ByteStream {
    public let socket: Socket
    let ssl: OpaquePointer
    private var isClosed = false

    private init(socket: Socket, ssl: OpaquePointer) {
        self.socket = socket
        self.ssl = ssl
    }

    deinit {
        SSL_free(ssl)
    }

    /// Runs the server side of the handshake before the deadline.
    public static func accept(socket: Socket, context: TLSContext, deadline: Deadline) throws(NetError) -> TLSStream {
        let stream = try beginAccept(socket: socket, context: context)
        try stream.retry("in the TLS handshake", deadline: deadline) { SSL_accept(stream.ssl) }
        return stream
    }

    /// The server side of a connection whose handshake an event loop runs
    /// step by step (``acceptStep()``), never waiting.
    public static func beginAccept(socket: Socket, context: TLSContext) throws(NetError) -> TLSStream {
        guard let ssl = SSL_new(context.context) else { throw .tls(openSSLErrors("cannot create a TLS session")) }
        let stream = TLSStream(socket: socket, ssl: ssl)
        SSL_set_fd(ssl, socket.descriptor)
        brsync_SSL_set_modes(ssl)
        // A request (its TLS record's header and body) in one read(2), not two.
        SSL_set_read_ahead(ssl, 1)
        return stream
    }

    /// What a handshake step needs next.
    public enum HandshakeStep: Sendable, Equatable {
        case done
        /// Wait until the socket is readable, then step again.
        case wantRead
        /// Wait until the socket is writable, then step again.
        case wantWrite
    }

    /// Runs the server handshake as far as it goes without waiting.
    /// - Throws: ``NetError/closed`` when the peer hung up, ``NetError/tls(_:)``
    ///   when the handshake failed.
    public func acceptStep() throws(NetError) -> HandshakeStep {
        ERR_clear_error()
        let result = SSL_accept(ssl)
        if result > 0 { return .done }
        switch SSL_get_error(ssl, result) {
        case SSL_ERROR_WANT_READ: return .wantRead
        case SSL_ERROR_WANT_WRITE: return .wantWrite
        case SSL_ERROR_ZERO_RETURN: throw .closed
        case SSL_ERROR_SYSCALL:
            if errno == EPIPE || errno == ECONNRESET || errno == 0 || errno == EAGAIN { throw .closed }
            throw .system("TLS in the TLS handshake", errno)
        default:
            if brsync_SSL_error_is_unexpected_eof() == 1 { ERR_clear_error(); throw .closed }
            throw .tls(openSSLErrors("failed in the TLS handshake"))
        }
    }

    /// Whether TLS holds bytes not read yet, decrypted or not (the socket may
    /// be quiet: with read-ahead, a read takes what the socket has).
    public var hasBufferedInput: Bool { SSL_has_pending(ssl) == 1 }

    /// Runs the client side of the handshake: verifies the chain and that the
    /// certificate is for `serverName`.
    /// - Throws: ``NetError/tls(_:)`` saying why the server is not trusted
    ///   (expired, wrong host, unknown CA, …).
    public static func connect(
        socket: Socket, context: TLSContext, serverName: String, deadline: Deadline
    ) throws(NetError) -> TLSStream {
        guard let ssl = SSL_new(context.context) else { throw .tls(openSSLErrors("cannot create a TLS session")) }
        let stream = TLSStream(socket: socket, ssl: ssl)
        SSL_set_fd(ssl, socket.descriptor)
        brsync_SSL_set_modes(ssl)
        let isAddress = serverName.contains(":") || serverName.allSatisfy { $0.isNumber || $0 == "." }
        if !isAddress { brsync_SSL_set_tlsext_host_name(ssl, serverName) }
        guard SSL_set1_host(ssl, serverName) == 1 else { throw .tls("cannot check the host name \(serverName)") }
        do {
            try stream.retry("in the TLS handshake", deadline: deadline) { SSL_connect(ssl) }
        } catch {
            let verify = SSL_get_verify_result(ssl)
            if verify != X509_V_OK {
                throw .tls(
                    "the server's certificate is not trusted: \(String(cString: X509_verify_cert_error_string(verify)))"
                )
            }
            throw error
        }
        return stream
    }

    /// Retries an OpenSSL call that wants to read or write until it succeeds
    /// or the deadline passes.
    @discardableResult
    private func retry(
        _ what: String, deadline: Deadline, wakeup: Int32? = nil, _ call: () -> Int32
    ) throws(NetError) -> Int32 {
        while true {
            ERR_clear_error()
            let result = call()
            if result > 0 { return result }
            let error = SSL_get_error(ssl, result)
            switch error {
            case SSL_ERROR_WANT_READ:
                try socket.wait(for: Int16(POLLIN), until: deadline, what: what)
            case SSL_ERROR_WANT_WRITE:
                try socket.wait(for: Int16(POLLOUT), until: deadline, what: what)
            case SSL_ERROR_ZERO_RETURN:
                throw .closed
            case SSL_ERROR_SYSCALL:
                if errno == EPIPE || errno == ECONNRESET || errno == 0 { throw .closed }
                throw .system("TLS \(what)", errno)
            default:
                // The peer hung up mid-handshake: a closed connection, not a trust failure.
                if brsync_SSL_error_is_unexpected_eof() == 1 { ERR_clear_error(); throw .closed }
                throw .tls(openSSLErrors("failed \(what)"))
            }
        }
    }

    public func read(
        into buffer: UnsafeMutableRawBufferPointer, deadline: Deadline, wakeup: Int32?, what: String
    ) throws(NetError) -> Int? {
        // Read first and wait only when nothing is there: a waiting request
        // costs no poll(2).
        while true {
            switch try readStep(into: buffer, what: what) {
            case .bytes(let count): return count
            case .closed: return 0
            case .nothing:
                guard try socket.wait(for: Int16(POLLIN), until: deadline, wakeup: wakeup, what: what) else {
                    return nil
                }
            case .needsWait: try socket.wait(for: Int16(POLLOUT), until: deadline, what: what)
            }
        }
    }

    public func readNow(into buffer: UnsafeMutableRawBufferPointer) throws(NetError) -> ReadNow {
        try readStep(into: buffer, what: "reading a request")
    }

    /// One `SSL_read`; errors name `what` was being read.
    private func readStep(into buffer: UnsafeMutableRawBufferPointer, what: String) throws(NetError) -> ReadNow {
        ERR_clear_error()
        let result = SSL_read(ssl, buffer.baseAddress, Int32(clamping: buffer.count))
        if result > 0 { return .bytes(Int(result)) }
        switch SSL_get_error(ssl, result) {
        case SSL_ERROR_WANT_READ: return .nothing
        case SSL_ERROR_WANT_WRITE: return .needsWait
        case SSL_ERROR_ZERO_RETURN: return .closed
        case SSL_ERROR_SYSCALL:
            if errno == EPIPE || errno == ECONNRESET || errno == 0 { return .closed }
            throw .system("TLS \(what)", errno)
        default:
            // The peer closed without a TLS close: the end of what it sends.
            if brsync_SSL_error_is_unexpected_eof() == 1 { ERR_clear_error(); return .closed }
            throw .tls(openSSLErrors("failed \(what)"))
        }
    }

    public func write(_ bytes: [UInt8], deadline: Deadline) throws(NetError) {
        var offset = 0
        while offset < bytes.count {
            let result = bytes.withUnsafeBytes { buffer in
                Result<Int32, NetError> { () throws(NetError) in
                    // baseAddress is non-nil: offset < count, so the buffer is not empty.
                    try retry("writing", deadline: deadline) {
                        SSL_write(ssl, buffer.baseAddress! + offset, Int32(clamping: buffer.count - offset))
                    }
                }
            }
            offset += Int(try result.get())
        }
    }

    private var sentCloseNotify = false

    /// Sends close_notify (best effort) and closes the socket.
    public func close() {
        guard !isClosed else { return }
        isClosed = true
        if !sentCloseNotify { SSL_shutdown(ssl) }
        socket.close()
    }

    public func finishWriting() {
        if !sentCloseNotify {
            sentCloseNotify = true
            SSL_shutdown(ssl)
        }
        socket.shutdownWrite()
    }

    /// The negotiated protocol version (`TLSv1.3`) and ALPN protocol.
    public var negotiated: (version: String, alpn: String?) {
        let version = String(cString: SSL_get_version(ssl))
        var data: UnsafePointer<UInt8>?
        var length: UInt32 = 0
        SSL_get0_alpn_selected(ssl, &data, &length)
        let alpn = data.map { String(decoding: UnsafeBufferPointer(start: $0, count: Int(length)), as: UTF8.self) }
        return (version, alpn)
    }
}
