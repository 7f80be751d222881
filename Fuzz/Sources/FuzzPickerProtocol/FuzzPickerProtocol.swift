import Desktop

/// Reads the input as `brsync-picker` reads a request on its standard input
/// and as brsync reads the window's answer: neither may crash; a request that
/// reads writes back as text that reads as the same request; an answer never
/// names a browser it was not offered, a private window the browser has not,
/// an order that is not one, nor carries an invalid pattern; an answer that
/// reads writes back as itself.
func fuzzPickerProtocol(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let text = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
    if let request = try? WindowPicker.Request(parsing: text) {
        let again = try? WindowPicker.Request(parsing: request.json.jsonText)
        precondition(again == request, "the request \(text.debugDescription) does not read back as itself")
    }
    let offered = [
        WindowPicker.Request.Choice(id: "firefox", name: "Firefox", hasPrivateWindow: true),
        WindowPicker.Request.Choice(id: "chrome", name: "Chrome"),
        WindowPicker.Request.Choice(id: "work", name: "Work", profile: "-P work", hasPrivateWindow: true),
    ]
    for count in [1, 3] {
        let request = WindowPicker.Request(
            url: "https://example.org/", choices: Array(offered.prefix(count)), suggestedPattern: "example.org")
        guard let answer = try? WindowPicker.Answer(parsing: text, request: request) else { continue }
        precondition(
            answer.choice >= 0 && answer.choice < count,
            "the answer \(text.debugDescription) names browser \(answer.choice) of \(count)")
        precondition(
            !answer.privateWindow || request.choices[answer.choice].hasPrivateWindow,
            "a private window the browser has not")
        precondition(!answer.hidden.contains(answer.choice), "the chosen browser is hidden")
        if let order = answer.order {
            precondition((order + answer.hidden).sorted() == Array(0..<count), "an order that is not one: \(order)")
        }
        if let pattern = answer.remember {
            precondition(WindowPicker.problem(withPattern: pattern) == nil, "an invalid pattern was let through")
        }
        let again = try? WindowPicker.Answer(parsing: answer.json.jsonText, request: request)
        precondition(again == answer, "the answer \(text.debugDescription) does not read back as itself")
    }
    return 0
}
