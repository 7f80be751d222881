import ArgumentParser
import BrsyncServer
import Glibc
import JSON
import Net
import QRCode
import ServerStore
import SyncCore
import SystemServices

/// The join code of `brsyncd device add` and `device token`: the server's
/// URL, an enrollment secret (used once, by `brsync join`, before it
/// expires) and the fingerprint of the CA that issued the server's
/// certificate, in one line (and as a QR code with `--qr`).
struct JoinOptions: ParsableArguments {
    @Option(
        help: ArgumentHelp(
            "The server's URL as devices reach it, for a join code (default: $BRSYNCD_URL).",
            valueName: "https://host:port"))
    var url: String?
    @Option(
        help: ArgumentHelp(
            "The CA certificate (PEM) that issued the server's certificate, for a join code's fingerprint (default: $BRSYNCD_CA).",
            valueName: "file"))
    var ca: String?
    @Flag(help: "Also draw the join code as a QR code in the terminal (for the phone).") var qr = false
    @Option(
        help: ArgumentHelp(
            "How long the join code works, if it is not used first: 90s, 30m, 24h or 7d; at most 30d (default: 24h).",
            valueName: "duration"))
    var expires: String?

    /// `--expires` in milliseconds (checked before anything is written).
    func validMilliseconds() throws -> Int64 {
        guard let expires else { return Self.defaultValidMilliseconds }
        guard let milliseconds = Self.duration(expires) else {
            throw CLIFailure(
                message:
                    "--expires: '\(DisplayText.printable(expires.prefix(40)))' is not a duration: a number and s, m, h or d (90s, 30m, 24h, 7d)"
            )
        }
        guard milliseconds >= 60_000, milliseconds <= 30 * 86_400_000 else {
            throw CLIFailure(message: "--expires: a join code works for at least a minute and at most 30 days")
        }
        return milliseconds
    }

    static let defaultValidMilliseconds: Int64 = 24 * 3_600_000

    /// A duration such as `90s`, `30m`, `24h` or `7d`, in milliseconds.
    static func duration(_ text: String) -> Int64? {
        guard let unit = text.last, let number = Int64(text.dropLast()), number > 0, number <= 1_000_000 else {
            return nil
        }
        switch unit {
        case "s": return number * 1000
        case "m": return number * 60_000
        case "h": return number * 3_600_000
        case "d": return number * 86_400_000
        default: return nil
        }
    }

    /// The URL and CA fingerprint of the join code, checked before anything
    /// is written; nil when no join code was asked for.
    func prepare() throws -> (url: String, fingerprint: [UInt8])? {
        let url = self.url ?? ProcessEnvironment.value("BRSYNCD_URL")
        let ca = self.ca ?? ProcessEnvironment.value("BRSYNCD_CA")
        guard let url, let ca else {
            if qr || self.url != nil || self.ca != nil || expires != nil {
                throw CLIFailure(
                    message:
                        "a join code needs the server's URL and its CA: give --url and --ca (or set BRSYNCD_URL and BRSYNCD_CA)"
                )
            }
            return nil
        }
        let certificates: [[UInt8]]
        do { certificates = try CertificatePinning.certificates(pemFile: ca) } catch {
            throw CLIFailure(message: "--ca: \(error)")
        }
        let fingerprint = CertificatePinning.fingerprint(der: certificates[0])
        // The URL is checked as the code will be.
        do { _ = try JoinCode(server: url, token: "check", caFingerprint: fingerprint) } catch {
            throw CLIFailure(message: "--url: \(error)")
        }
        return (url, fingerprint)
    }

    /// When a join code was asked for (checked before anything is written):
    /// makes it for the device (added, or existing) and prints it.
    /// - Returns: whether a join code was made (false: the caller issues a token).
    func enroll(_ store: StoreOptions, account: String, device: String, adding: Bool) throws -> Bool {
        guard let parts = try prepare() else { return false }
        let valid = try validMilliseconds()
        let enrollment = try store.open().enroll(
            account: account, device: device, adding: adding, validMilliseconds: valid)
        Swift.print(
            adding
                ? "added device \(device) to account \(account)."
                : "made a new join code for device \(device) of account \(account); its old token no longer works.")
        try print(url: parts.url, fingerprint: parts.fingerprint, enrollment: enrollment, validMilliseconds: valid)
        return true
    }

    /// Prints the join code for `enrollment` (and its QR code).
    func print(url: String, fingerprint: [UInt8], enrollment: Store.JoinSecret, validMilliseconds: Int64) throws {
        let code = try JoinCode(
            server: url, token: enrollment.secret, caFingerprint: fingerprint, encrypted: enrollment.accountEncrypted)
        if qr {
            Swift.print("its join code as a QR code (scan it with the phone):")
            Swift.print(try QRText.render(code.description), terminator: "")
        }
        Swift.print(
            "its join code ('brsync join' on the new machine; it works once, within \(Self.describe(validMilliseconds)); shown only now):"
        )
        Swift.print(code.description)
    }

    static func describe(_ milliseconds: Int64) -> String {
        if milliseconds % 86_400_000 == 0 { return "\(milliseconds / 86_400_000) day(s)" }
        if milliseconds % 3_600_000 == 0 { return "\(milliseconds / 3_600_000) hour(s)" }
        if milliseconds % 60_000 == 0 { return "\(milliseconds / 60_000) minute(s)" }
        return "\(milliseconds / 1000) second(s)"
    }
}

/// A QR code drawn with Unicode half blocks, two module rows per line, white
/// on black forced with ANSI colours (so it scans on light and dark
/// terminals alike), with the four-module quiet zone the standard asks for.
enum QRText {
    static func render(_ text: String) throws -> String {
        guard let modules = QRCode.modules(text) else {
            throw CLIFailure(message: "cannot draw the join code as a QR code: \(SystemError.text())")
        }
        let size = modules.count
        func dark(_ row: Int, _ column: Int) -> Bool { modules[row][column] }
        var output = ""
        for row in stride(from: 0, to: size, by: 2) {
            output += "\u{1B}[97;40m" // white blocks on black: light modules are drawn
            for column in 0..<size {
                let top = !dark(row, column), bottom = row + 1 < size && !dark(row + 1, column)
                output += top && bottom ? "█" : top ? "▀" : bottom ? "▄" : " "
            }
            output += "\u{1B}[0m\n"
        }
        return output
    }
}
