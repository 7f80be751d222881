import Desktop

/// Reads the input as `brsync-picker` reads a request on its standard input
/// and as brsync reads the window's answer: neither may crash; a request that
/// reads writes back as text that reads as the same request; an answer never
/// names a browser it was not offered nor carries an invalid pattern.
func fuzzPickerProtocol(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let text = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
    if let request = try? WindowPicker.Request(parsing: text) {
        let again = try? WindowPicker.Request(parsing: request.json.jsonText)
        precondition(again == request, "the request \(text.debugDescription) does not read back as itself")
    }
    for count in [1, 3] {
        guard let answer = try? WindowPicker.Answer(parsing: text, choiceCount: count) else { continue }
        precondition(answer.choice >= 0 && answer.choice < count, "the answer \(text.debugDescription) names browser \(answer.choice) of \(count)")
        if let pattern = answer.remember { precondition(WindowPicker.problem(withPattern: pattern) == nil, "an invalid pattern was let through") }
    }
    return 0
}
