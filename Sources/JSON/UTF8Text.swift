extension String {
    /// `bytes` as text when they are valid UTF-8 (RFC 3629: no overlong
    /// forms, no surrogates, nothing above U+10FFFF), else nil.
    ///
    /// (`String(validating:as:)` does this from iOS 18 and macOS 15, but Model
    /// builds for the phone's iOS 17, and it is not specialized for a byte
    /// buffer: every string a parser reads went through it.)
    public init?<Bytes: Collection<UInt8>>(validUTF8 bytes: Bytes) {
        let valid =
            bytes.withContiguousStorageIfAvailable(Self.isValidUTF8)
            ?? Array(bytes).withUnsafeBufferPointer(Self.isValidUTF8)
        guard valid else { return nil }
        self = String(decoding: bytes, as: UTF8.self)
    }

    /// Whether `bytes` are well-formed UTF-8 (the Unicode Standard's table 3-7).
    static func isValidUTF8(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        var index = 0
        let count = bytes.count
        while index < count {
            // ASCII eight bytes at a time.
            while index + 8 <= count {
                let word = UnsafeRawPointer(bytes.baseAddress! + index).loadUnaligned(as: UInt64.self)
                guard word & 0x8080_8080_8080_8080 == 0 else { break }
                index += 8
            }
            guard index < count else { return true }
            let lead = bytes[index]
            if lead < 0x80 {
                index += 1
                continue
            }
            func continuation(_ offset: Int, _ range: ClosedRange<UInt8> = 0x80...0xBF) -> Bool {
                index + offset < count && range.contains(bytes[index + offset])
            }
            switch lead {
            case 0xC2...0xDF:
                guard continuation(1) else { return false }
                index += 2
            case 0xE0:
                guard continuation(1, 0xA0...0xBF), continuation(2) else { return false }
                index += 3
            case 0xE1...0xEC, 0xEE...0xEF:
                guard continuation(1), continuation(2) else { return false }
                index += 3
            case 0xED:
                guard continuation(1, 0x80...0x9F), continuation(2) else { return false }
                index += 3
            case 0xF0:
                guard continuation(1, 0x90...0xBF), continuation(2), continuation(3) else { return false }
                index += 4
            case 0xF1...0xF3:
                guard continuation(1), continuation(2), continuation(3) else { return false }
                index += 4
            case 0xF4:
                guard continuation(1, 0x80...0x8F), continuation(2), continuation(3) else { return false }
                index += 4
            default:
                return false
            }
        }
        return true
    }
}
