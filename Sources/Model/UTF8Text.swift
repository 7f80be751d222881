extension String {
    /// `bytes` as text when they are valid UTF-8, else nil.
    ///
    /// (`String(validating:as:)` does this from iOS 18 and macOS 15; Model
    /// builds for the phone's iOS 17. Decoding replaces each invalid sequence
    /// with U+FFFD, so the text reads back as the same bytes exactly when
    /// there was none.)
    public init?<Bytes: Collection<UInt8>>(validUTF8 bytes: Bytes) {
        let text = String(decoding: bytes, as: UTF8.self)
        guard text.utf8.elementsEqual(bytes) else { return nil }
        self = text
    }
}
