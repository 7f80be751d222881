import ContentCoding

/// Reads the input as a gzip body (what a push or relay of a readable
/// account, or a pull page, may come as): refused, or inflated to no more
/// than its limit; what inflates compresses and inflates back the same.
/// The input read as an `Accept-Encoding` field never traps either.
func fuzzGzip(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    let limit = 1 << 16
    if let plain = try? Gzip.decompress(bytes, limit: limit) {
        precondition(plain.count <= limit, "inflated past its limit")
        let again = Gzip.compress(plain)
        precondition((try? Gzip.decompress(again, limit: limit)) == plain, "a round trip changed the bytes")
    }
    _ = Gzip.isAccepted(by: String(decoding: bytes, as: UTF8.self))
    return 0
}
