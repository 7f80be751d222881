import Net

extension TLSStream {
    /// What one read brings within `milliseconds` (up to 4 KB), as text: ""
    /// when the peer closed or nothing came in time.
    public func readText(milliseconds: Int = 5000) throws -> String {
        var buffer = [UInt8](repeating: 0, count: 4096)
        let count =
            try buffer.withUnsafeMutableBytes {
                try read(into: $0, deadline: .after(milliseconds: milliseconds), wakeup: nil, what: "test")
            } ?? 0
        return String(decoding: buffer[0..<count], as: UTF8.self)
    }
}
