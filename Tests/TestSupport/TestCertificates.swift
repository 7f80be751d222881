import Foundation
import Net

/// A fresh private CA and a server certificate for loopback, written as PEM
/// files into a test's folder: `ca.pem`, `server.pem`, `server.key`.
public struct TestCertificates {
    public let authority: CertificateAuthority
    public let caFile: String
    public let certificateFile: String
    public let keyFile: String

    public init(
        in directory: TemporaryDirectory, authority: CertificateAuthority? = nil,
        hosts: [String] = ["localhost", "127.0.0.1", "::1"]
    ) throws {
        let authority = try authority ?? CertificateAuthority()
        let issued = try authority.issue(hosts: hosts)
        self.authority = authority
        caFile = directory.file("ca.pem")
        certificateFile = directory.file("server.pem")
        keyFile = directory.file("server.key")
        try authority.certificatePEM.write(toFile: caFile, atomically: true, encoding: .utf8)
        try issued.certificatePEM.write(toFile: certificateFile, atomically: true, encoding: .utf8)
        try issued.privateKeyPEM.write(toFile: keyFile, atomically: true, encoding: .utf8)
    }
}
