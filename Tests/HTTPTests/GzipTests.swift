import ContentCoding
import Testing

/// ContentCoding's gzip: what it makes inflates back; what it is given is
/// taken only as one whole, intact member, never past its limit.
@Suite struct GzipTests {
    static let text = Array(
        String(repeating: "{\"pattern\":{\"v\":\"zoom.us\",\"s\":\"000001a2-0-laptop\"}},", count: 200).utf8)

    @Test func whatItMakesInflatesBackSmaller() throws {
        let compressed = Gzip.compress(Self.text)
        #expect(compressed.count * 10 < Self.text.count, "\(compressed.count) of \(Self.text.count)")
        #expect(try Gzip.decompress(compressed, limit: Self.text.count) == Self.text)
        #expect(try Gzip.decompress(Gzip.compress([]), limit: 0) == [])
    }

    @Test func damagedOrOversizedMembersAreRefused() throws {
        let member = Gzip.compress(Self.text)
        var flipped = member
        flipped[flipped.count / 2] ^= 0x40
        var lyingSmaller = member
        lyingSmaller[lyingSmaller.count - 4] &-= 1
        var lyingLarger = member
        lyingLarger[lyingLarger.count - 4] &+= 1
        let cases: [(String, [UInt8], Int, String)] = [
            ("empty", [], 1 << 20, "not gzip data"),
            ("not gzip", Self.text, 1 << 20, "not gzip data"),
            ("past the limit", member, Self.text.count - 1, "more than the \(Self.text.count - 1) allowed"),
            (
                "a header checksum",
                Array(member[..<3]) + [member[3] | 0x02] + Array(member[4..<10]) + [0, 0] + Array(member[10...]),
                1 << 20, "FHCRC"
            ),
            ("cut short", Array(member.dropLast(12)) + Array(member.suffix(4)), 1 << 20, ""),
            ("a bit flipped", flipped, 1 << 20, ""),
            ("a trailer claiming less", lyingSmaller, 1 << 20, "damaged gzip data"), // libdeflate checks ISIZE too
            ("a trailer claiming more", lyingLarger, 1 << 20, "damaged gzip data"),
            ("bytes after it", member + member.suffix(4), 1 << 20, "4 bytes follow"),
            ("two members", member + member, 1 << 20, "follow the gzip data"),
            // Junk whose last 4 bytes claim more than the member holds, or less.
            (
                "bytes after it claiming more", member + [0x6A, 0x75, 0x6E, 0x6B, 0x00, 0x00, 0x01, 0x00], 1 << 20,
                "8 bytes follow"
            ),
            ("bytes after it claiming less", member + [0x01, 0x00, 0x00, 0x00], 1 << 20, "or bytes after it"),
        ]
        for (what, bytes, limit, words) in cases {
            #expect(throws: Gzip.Problem.self, "\(what)") { try Gzip.decompress(bytes, limit: limit) }
            do {
                _ = try Gzip.decompress(bytes, limit: limit)
            } catch {
                #expect(error.reason.contains(words), "\(what): \(error.reason)")
            }
        }
    }

    @Test(
        arguments: [
            (nil, false), ("", false), ("gzip", true), ("GZIP", true), ("deflate, gzip;q=0.5", true),
            ("gzip;q=0", false), ("gzip; q=0.000", false), ("*", true), ("*;q=0", false), ("br, *", true),
            ("gzip;q=0, *", false), ("identity", false), ("x-gzip", false), ("gzip;q=nonsense", false),
            ("gzip;q=1.5", false), ("gzip;q=0.5000", false), ("gzip;q=1.000", true), ("gzip;q=0.001", true),
        ] as [(String?, Bool)])
    func acceptEncodingIsReadAsRFC9110Says(_ field: String?, _ accepted: Bool) {
        #expect(Gzip.isAccepted(by: field) == accepted, "\(field ?? "nil")")
    }
}
