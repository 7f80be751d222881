import Desktop

/// Reads the input as `brsync open` reads what an X server and an
/// Xauthority file say when hold-to-ask is set (``HeldKeys``): as an
/// Xauthority file, as a connection set-up answer (its first 8 bytes, then
/// the rest), as a QueryPointer answer, and as a DISPLAY value. Nothing may
/// crash; a cookie found is 1 to 255 bytes of the input; a root window is
/// 4 bytes of the answer; a display number is one the text spells.
func fuzzXReplies(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    for display in [0, 1, 10] {
        if let cookie = HeldKeys.cookie(inAuthority: bytes, display: display) {
            precondition(
                !cookie.isEmpty && cookie.count <= 255 && cookie.count <= bytes.count,
                "a cookie that is not one: \(cookie.count) bytes")
        }
    }
    if bytes.count >= 8 {
        let head = Array(bytes.prefix(8)), body = Array(bytes.dropFirst(8))
        _ = try? HeldKeys.setupRemainder(head: head)
        if let root = try? HeldKeys.rootWindow(head: head, body: body) {
            precondition(root.count == 4 && head[0] == 1, "a root window from an answer that is not a success")
        }
    }
    if bytes.count >= 32 {
        _ = try? HeldKeys.pointerMask(reply: Array(bytes.prefix(32)))
    }
    let text = String(decoding: bytes, as: UTF8.self)
    if let number = HeldKeys.displayNumber(text) {
        precondition(
            number >= 0 && text.contains(String(number).first ?? "?"), "display \(number) from \(text.debugDescription)"
        )
    }
    return 0
}
