import JSON

/// What a new machine needs to join an account in one step:
/// the server's URL, a device token, and the SHA-256 fingerprint of the
/// server's CA certificate, so no CA file needs copying and a man in the
/// middle is refused; and whether the account was end-to-end encrypted when
/// the code was made, so a server that later says it is not is refused.
/// One line, a URI a phone can take from a QR code:
///
///     brsync://join?server=https://sync.example.org:8443&token=brs_…&e2e=1&ca=64 hex digits
///
/// `e2e` is `1` (encrypted) or `0`; codes made before it existed say
/// nothing (nil), and readers that do not know it ignore it.
/// The token is a secret: the code is shown once, by `brsyncd device add`.
public struct JoinCode: Sendable, Equatable, CustomStringConvertible {
    public let server: String
    public let token: String
    /// The SHA-256 of the CA certificate (DER), 32 bytes.
    public let caFingerprint: [UInt8]
    /// Whether the account was end-to-end encrypted when the code was made;
    /// nil for a code that does not say.
    public let encrypted: Bool?

    public static let prefix = "brsync://join?"
    /// Longest code read (a real one is under 300 bytes).
    public static let maxBytes = 2048

    public struct Problem: Error, Sendable, Equatable, CustomStringConvertible {
        public let message: String
        public var description: String { message }
    }

    public init(server: String, token: String, caFingerprint: [UInt8], encrypted: Bool? = nil) throws(Problem) {
        guard server.hasPrefix("https://"), !server.contains(where: { $0 == "&" || $0 == "#" || $0 == " " }),
            server.utf8.count <= 512
        else {
            throw Problem(message: "the server of a join code is an https:// URL without '&', '#' or spaces")
        }
        guard Self.isToken(token) else {
            throw Problem(message: "the token of a join code is letters, digits, '_' and '-' (at most 256)")
        }
        guard caFingerprint.count == 32 else {
            throw Problem(message: "the CA fingerprint of a join code is 32 bytes (64 hex digits)")
        }
        self.server = server
        self.token = token
        self.caFingerprint = caFingerprint
        self.encrypted = encrypted
    }

    static func isToken(_ text: String) -> Bool {
        !text.isEmpty && text.utf8.count <= 256
            && text.utf8.allSatisfy {
                (0x30...0x39).contains($0) || (0x41...0x5A).contains($0) || (0x61...0x7A).contains($0) || $0 == 0x5F
                    || $0 == 0x2D
            }
    }

    public var fingerprintHex: String {
        let digits = Array("0123456789abcdef".utf8)
        return String(decoding: caFingerprint.flatMap { [digits[Int($0 >> 4)], digits[Int($0 & 15)]] }, as: UTF8.self)
    }

    public var description: String {
        "\(Self.prefix)server=\(server)&token=\(token)" + (encrypted.map { "&e2e=\($0 ? 1 : 0)" } ?? "")
            + "&ca=\(fingerprintHex)"
    }

    /// Reads a code as pasted: spaces and line breaks around it are ignored.
    /// - Throws: ``Problem`` saying what is wrong (not a join code, a part
    ///   missing or given twice, a fingerprint that is not 64 hex digits).
    public init(parsing input: String) throws(Problem) {
        let blank: (Character) -> Bool = { $0 == " " || $0 == "\t" || $0 == "\n" || $0 == "\r" }
        let text = String(input.drop(while: blank).reversed().drop(while: blank).reversed())
        guard text.utf8.count <= Self.maxBytes else {
            throw Problem(message: "a join code is at most \(Self.maxBytes) bytes")
        }
        guard text.hasPrefix(Self.prefix) else {
            throw Problem(message: "not a join code (it starts with \(Self.prefix); 'brsyncd device add' prints one)")
        }
        var parts: [String: String] = [:]
        for item in text.dropFirst(Self.prefix.count).split(separator: "&", omittingEmptySubsequences: false) {
            guard let equals = item.firstIndex(of: "=") else {
                throw Problem(message: "a join code's parts are NAME=VALUE")
            }
            let name = String(item[..<equals]), value = String(item[item.index(after: equals)...])
            guard parts[name] == nil else {
                throw Problem(message: "a join code names '\(DisplayText.printable(name.prefix(20)))' twice")
            }
            parts[name] = value
        }
        guard let server = parts["server"], let token = parts["token"], let ca = parts["ca"] else {
            throw Problem(message: "a join code needs server, token and ca")
        }
        let bytes = Array(ca.utf8)
        guard bytes.count == 64, let fingerprint = Self.hexBytes(bytes) else {
            throw Problem(message: "the ca of a join code is a SHA-256 fingerprint: 64 hex digits")
        }
        let encrypted: Bool?
        switch parts["e2e"] {
        case nil: encrypted = nil
        case "1": encrypted = true
        case "0": encrypted = false
        default: throw Problem(message: "the e2e of a join code is 1 (the account is end-to-end encrypted) or 0")
        }
        try self.init(server: server, token: token, caFingerprint: fingerprint, encrypted: encrypted)
    }

    static func hexBytes(_ digits: [UInt8]) -> [UInt8]? {
        func value(_ digit: UInt8) -> UInt8? {
            switch digit {
            case 0x30...0x39: return digit - 0x30
            case 0x61...0x66: return digit - 0x61 + 10
            case 0x41...0x46: return digit - 0x41 + 10
            default: return nil
            }
        }
        var bytes: [UInt8] = []
        var index = 0
        while index + 1 < digits.count {
            guard let high = value(digits[index]), let low = value(digits[index + 1]) else { return nil }
            bytes.append(high << 4 | low)
            index += 2
        }
        return bytes
    }
}
