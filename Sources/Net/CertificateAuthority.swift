import COpenSSL
import Cryptography

/// Makes a private CA and certificates signed by it, with OpenSSL: for
/// `brsyncd dev` and for tests (including deliberately bad certificates:
/// expired, for another host, from an unknown CA).
public final class CertificateAuthority {
    /// PEM text of a certificate and its private key.
    public struct Issued: Sendable {
        public let certificatePEM: String
        public let privateKeyPEM: String
    }

    public let certificatePEM: String
    private let key: OpaquePointer
    private let certificate: OpaquePointer

    deinit {
        X509_free(certificate)
        EVP_PKEY_free(key)
    }

    /// A new CA (EC P-256) named `name`, valid for `days`.
    public init(name: String = "brsync development CA", days: Int = 3650) throws(NetError) {
        key = try Self.generateKey()
        guard let certificate = X509_new() else { throw .tls(openSSLErrors("cannot create a certificate")) }
        self.certificate = certificate
        try Self.fill(
            certificate, subject: name, key: key, issuer: nil, issuerKey: key, notBeforeDays: -1, notAfterDays: days,
            extensions: [
                (NID_basic_constraints, "critical,CA:TRUE"), (NID_key_usage, "critical,keyCertSign,cRLSign"),
                (NID_subject_key_identifier, "hash"),
            ])
        certificatePEM = try Self.pem { PEM_write_bio_X509($0, certificate) }
    }

    /// A server certificate for `hosts` (DNS names and IP addresses) signed by
    /// this CA. `notBeforeDays`/`notAfterDays` are relative to now, so a
    /// negative `notAfterDays` makes an expired certificate.
    public func issue(hosts: [String], notBeforeDays: Int = -1, notAfterDays: Int = 825) throws(NetError) -> Issued {
        let serverKey = try Self.generateKey()
        defer { EVP_PKEY_free(serverKey) }
        guard let server = X509_new() else { throw .tls(openSSLErrors("cannot create a certificate")) }
        defer { X509_free(server) }
        let names = hosts.map { host in
            host.contains(":") || host.allSatisfy({ $0.isNumber || $0 == "." }) ? "IP:\(host)" : "DNS:\(host)"
        }.joined(separator: ",")
        try Self.fill(
            server, subject: hosts.first ?? "localhost", key: serverKey, issuer: certificate, issuerKey: key,
            notBeforeDays: notBeforeDays, notAfterDays: notAfterDays,
            extensions: [
                (NID_basic_constraints, "critical,CA:FALSE"), (NID_key_usage, "critical,digitalSignature"),
                (NID_ext_key_usage, "serverAuth"), (NID_subject_alt_name, names),
                (NID_authority_key_identifier, "keyid"),
            ])
        return Issued(
            certificatePEM: try Self.pem { PEM_write_bio_X509($0, server) },
            privateKeyPEM: try Self.pem { PEM_write_bio_PrivateKey($0, serverKey, nil, nil, 0, nil, nil) })
    }

    private static func generateKey() throws(NetError) -> OpaquePointer {
        guard let context = EVP_PKEY_CTX_new_id(EVP_PKEY_EC, nil) else {
            throw .tls(openSSLErrors("cannot make a key"))
        }
        defer { EVP_PKEY_CTX_free(context) }
        var key: OpaquePointer?
        guard EVP_PKEY_keygen_init(context) == 1,
            EVP_PKEY_CTX_set_ec_paramgen_curve_nid(context, NID_X9_62_prime256v1) == 1,
            EVP_PKEY_keygen(context, &key) == 1, let key
        else { throw .tls(openSSLErrors("cannot make an EC P-256 key")) }
        return key
    }

    private static func fill(
        _ certificate: OpaquePointer, subject: String, key: OpaquePointer, issuer: OpaquePointer?,
        issuerKey: OpaquePointer,
        notBeforeDays: Int, notAfterDays: Int, extensions: [(Int32, String)]
    ) throws(NetError) {
        X509_set_version(certificate, 2)
        var serial = Crypto.randomBytes(8)
        serial[0] &= 0x7F
        let serialNumber = serial.reduce(0) { $0 << 8 | Int($1) }
        ASN1_INTEGER_set(X509_get_serialNumber(certificate), serialNumber)
        X509_gmtime_adj(X509_getm_notBefore(certificate), notBeforeDays * 86_400)
        X509_gmtime_adj(X509_getm_notAfter(certificate), notAfterDays * 86_400)
        X509_set_pubkey(certificate, key)
        let name = X509_get_subject_name(certificate)
        X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, subject, -1, -1, 0)
        X509_set_issuer_name(certificate, issuer.map { X509_get_subject_name($0) } ?? name)
        var context = X509V3_CTX()
        X509V3_set_ctx(&context, issuer ?? certificate, certificate, nil, nil, 0)
        for (nid, value) in extensions {
            guard let ext = X509V3_EXT_conf_nid(nil, &context, nid, value) else {
                throw .tls(openSSLErrors("cannot add the extension \(value)"))
            }
            X509_add_ext(certificate, ext, -1)
            X509_EXTENSION_free(ext)
        }
        guard X509_sign(certificate, issuerKey, EVP_sha256()) > 0 else {
            throw .tls(openSSLErrors("cannot sign the certificate"))
        }
    }

    private static func pem(_ write: (OpaquePointer) -> Int32) throws(NetError) -> String {
        guard let bio = BIO_new(BIO_s_mem()) else { throw .tls("cannot allocate") }
        defer { BIO_free(bio) }
        guard write(bio) == 1 else { throw .tls(openSSLErrors("cannot write PEM")) }
        var output: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = BIO_read(bio, &buffer, Int32(buffer.count))
            if count <= 0 { break }
            output += buffer[0..<Int(count)]
        }
        return String(decoding: output, as: UTF8.self)
    }
}
