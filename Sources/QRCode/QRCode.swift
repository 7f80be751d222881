import CQRencode

/// A QR code's modules, by libqrencode (error correction M, byte mode), for
/// `brsyncd device add --qr` (drawn with text) and the settings window's
/// recovery code (drawn as an image). Only those two binaries link it.
public enum QRCode {
    /// The blank border the standard asks for, in modules, on each side.
    public static let quietZone = 4

    /// The modules of `text`'s code, true for dark, with the quiet zone
    /// around them; nil when libqrencode cannot encode it (too long).
    public static func modules(_ text: String) -> [[Bool]]? {
        guard let code = QRcode_encodeString8bit(text, 0, QR_ECLEVEL_M) else { return nil }
        defer { QRcode_free(code) }
        let width = Int(code.pointee.width)
        let data = UnsafeBufferPointer(start: code.pointee.data, count: width * width)
        let size = width + 2 * quietZone
        return (0..<size).map { row in
            (0..<size).map { column in
                let r = row - quietZone, c = column - quietZone
                return r >= 0 && r < width && c >= 0 && c < width && data[r * width + c] & 1 == 1
            }
        }
    }
}
