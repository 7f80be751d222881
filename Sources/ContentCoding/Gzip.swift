import CDeflate

/// gzip (RFC 1952) for HTTP bodies (`Content-Encoding: gzip`, RFC 9110
/// §8.4.1.3): the pushes, relays and pull pages of readable accounts. Never
/// an encrypted account's (sizes would tell what compression found alike;
/// sealed values do not compress anyway). Whole buffers, through libdeflate:
/// faster than zlib at the same ratio, and its decompressor writes into a
/// buffer of a size given beforehand, so no body inflates past its limit.
public enum Gzip {
    /// Why a gzip body was refused.
    public struct Problem: Error, Sendable, Equatable, CustomStringConvertible {
        public let reason: String
        public init(_ reason: String) { self.reason = reason }
        public var description: String { reason }
    }

    /// Bodies smaller than this are sent as they are: the header and
    /// trailer (18 bytes) and the work would buy nothing.
    public static let minimumBytes = 1024

    /// The content coding's name, as `Content-Encoding` and `Accept-Encoding` say it.
    public static let name = "gzip"

    /// `bytes` as one gzip member. Level 1: a pull page of rules shrinks
    /// about 7× at well over 300 MB/s; higher levels gain a few percent for
    /// several times the work.
    public static func compress(_ bytes: [UInt8], level: Int32 = 1) -> [UInt8] {
        guard let compressor = libdeflate_alloc_compressor(level) else { fatalError("out of memory (libdeflate)") }
        defer { libdeflate_free_compressor(compressor) }
        let bound = libdeflate_gzip_compress_bound(compressor, bytes.count)
        var out = [UInt8](repeating: 0, count: bound)
        let written = bytes.withUnsafeBytes { input in
            out.withUnsafeMutableBytes { output in
                libdeflate_gzip_compress(compressor, input.baseAddress, input.count, output.baseAddress, output.count)
            }
        }
        // The bound is what libdeflate promises any input fits in.
        precondition(written > 0, "libdeflate_gzip_compress did not fit its own bound")
        out.removeSubrange(written...)
        return out
    }

    /// The bytes one gzip member holds, at most `limit` of them.
    /// - Throws: ``Problem`` for anything that is not exactly one whole,
    ///   intact gzip member (a bad header or checksum, data after it), and
    ///   for a member that holds more than `limit` bytes: the output buffer
    ///   is never larger than that, whatever the member says.
    public static func decompress(_ bytes: [UInt8], limit: Int) throws(Problem) -> [UInt8] {
        // The smallest member: a 10-byte header, an empty deflate block, the 8-byte trailer.
        guard bytes.count >= 18, bytes[0] == 0x1F, bytes[1] == 0x8B else { throw Problem("not gzip data") }
        // FHCRC: a header checksum libdeflate skips unchecked; nothing
        // brsync talks to writes one, so it is refused, not taken unread.
        guard bytes[3] & 0x02 == 0 else { throw Problem("a gzip header checksum (FHCRC) is not taken") }
        // ISIZE, the trailer's last field: the size mod 2^32. A claim only:
        // what the member really holds must fill exactly that much.
        let claimed = bytes[(bytes.count - 4)...].reversed().reduce(0) { $0 << 8 | Int($1) }
        guard claimed <= limit else {
            throw Problem(
                "its trailer says it holds \(claimed) bytes, more than the \(limit) allowed (or it is not one whole gzip member)"
            )
        }
        guard let decompressor = libdeflate_alloc_decompressor() else { fatalError("out of memory (libdeflate)") }
        defer { libdeflate_free_decompressor(decompressor) }
        // One byte more than claimed: a member holding more says so (no
        // room), one holding less does not fill it.
        var out = [UInt8](repeating: 0, count: claimed + 1)
        var used = 0
        var made = 0
        let result = bytes.withUnsafeBytes { input in
            out.withUnsafeMutableBytes { output in
                libdeflate_gzip_decompress_ex(
                    decompressor, input.baseAddress, input.count, output.baseAddress, output.count, &used, &made)
            }
        }
        switch result {
        case LIBDEFLATE_SUCCESS:
            break
        case LIBDEFLATE_INSUFFICIENT_SPACE:
            // The claim is the body's last 4 bytes: a trailer that lies, or bytes after the member.
            throw Problem(
                "it holds more than the \(claimed) bytes its last 4 bytes claim (a damaged member, or bytes after it)")
        default:
            throw Problem("damaged gzip data")
        }
        // Bytes after the member first: the "trailer" read above was theirs.
        guard used == bytes.count else { throw Problem("\(bytes.count - used) bytes follow the gzip data") }
        guard made == claimed else { throw Problem("it holds \(made) bytes, not the \(claimed) its trailer says") }
        out.removeLast()
        return out
    }

    /// Whether an `Accept-Encoding` field value takes gzip: named (or `*`)
    /// with a weight other than 0 (RFC 9110 §12.5.3); nil or empty takes nothing.
    public static func isAccepted(by field: String?) -> Bool {
        guard let field else { return false }
        var star = false
        for item in field.split(separator: ",") {
            let parts = item.split(separator: ";").map { $0.trimmingSpaces.lowercased() }
            guard let coding = parts.first, coding == name || coding == "*" else { continue }
            let weight = parts.dropFirst().first { $0.hasPrefix("q=") }.map { String($0.dropFirst(2)) }
            // A weight is 0 to 1 with up to three decimals; anything else refuses.
            let refused = weight.map { isWeight($0).map { $0 == 0 } ?? true } ?? false
            if coding == "*" {
                star = !refused
            } else {
                return !refused
            }
        }
        return star
    }
}

/// A qvalue's value (RFC 9110 §12.4.2: `0[.ddd]` or `1[.000]`), nil when it is none.
private func isWeight(_ text: String) -> Double? {
    let parts = text.split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false)
    guard let whole = parts.first, whole == "0" || whole == "1" else { return nil }
    if parts.count == 2 {
        let decimals = parts[1]
        guard decimals.count <= 3, decimals.allSatisfy({ $0.isASCII && $0.isNumber }) else { return nil }
        if whole == "1", decimals.contains(where: { $0 != "0" }) { return nil }
    }
    return Double(text)
}

extension Substring {
    fileprivate var trimmingSpaces: Substring {
        var text = self
        while let first = text.first, first == " " || first == "\t" { text.removeFirst() }
        while let last = text.last, last == " " || last == "\t" { text.removeLast() }
        return text
    }
}
