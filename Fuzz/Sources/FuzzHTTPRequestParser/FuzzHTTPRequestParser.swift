import HTTP
import SyncCore

/// Feeds the input to `HTTPRequestParser` whole and split at a point chosen by
/// the first byte, with small limits so every limit is reachable. Checks that
/// nothing crashes and that the split makes no difference. A request's
/// query, read as a pull request, either is refused or writes a target
/// that reads back to the same request.
func fuzzHTTPRequestParser(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size > 0 else { return 0 }
    let input = Array(UnsafeBufferPointer(start: data + 1, count: size - 1))
    var limits = HTTPLimits()
    limits.maxRequestLineBytes = 256
    limits.maxHeaderBytes = 512
    limits.maxHeaderCount = 8
    limits.maxBodyBytes = 1024
    var whole = HTTPRequestParser(limits: limits)
    let expected = whole.feed(input)
    let split = input.isEmpty ? 0 : Int(data[0]) % (input.count + 1)
    var parts = HTTPRequestParser(limits: limits)
    let events = parts.feed(input[..<split]) + parts.feed(input[split...])
    precondition(events == expected, "splitting the input changed the events")
    var byByte = HTTPRequestParser(limits: limits)
    var oneAtATime: [HTTPRequestParser.Event] = []
    for byte in input.prefix(512) { oneAtATime += byByte.feed([byte]) }
    if input.count <= 512 { precondition(oneAtATime == expected, "byte-by-byte feeding changed the events") }
    for event in expected {
        guard case .request(let request) = event else { continue }
        precondition(request.body.count <= limits.maxBodyBytes)
        precondition(
            (try? request.queryItems()) == referenceQueryItems(request.target),
            "the query of \(request.target) reads otherwise than by characters")
        if let items = try? request.queryItems(), let pull = try? PullRequest(query: items, maxLimit: 1000) {
            let again = HTTPRequest(method: "GET", target: pull.target)
            precondition(
                (try? PullRequest(query: again.queryItems(), maxLimit: 1000)) == pull,
                "\(pull.target) does not read back"
            )
        }
    }
    return 0
}

/// The query read the plain way, by characters (`split`, then `%` and `+`
/// decoded): what `queryItems()`, which cuts an ASCII query by bytes, must
/// agree with. Nil where it refuses.
func referenceQueryItems(_ target: String) -> [String: String]? {
    guard let mark = target.firstIndex(of: "?") else { return [:] }
    var items: [String: String] = [:]
    for pair in target[target.index(after: mark)...].split(separator: "&") {
        let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
        func decoded(_ text: Substring) -> String? {
            var bytes: [UInt8] = []
            var iterator = text.utf8.makeIterator()
            while let byte = iterator.next() {
                if byte == UInt8(ascii: "+") {
                    bytes.append(UInt8(ascii: " "))
                } else if byte == UInt8(ascii: "%") {
                    let digits = Array("0123456789abcdef".utf8)
                    let lowered = { (byte: UInt8) in
                        (UInt8(ascii: "A")...UInt8(ascii: "F")).contains(byte) ? byte + 32 : byte
                    }
                    guard let high = iterator.next().flatMap({ digits.firstIndex(of: lowered($0)) }),
                        let low = iterator.next().flatMap({ digits.firstIndex(of: lowered($0)) })
                    else { return nil }
                    let value = UInt8(high << 4 | low)
                    bytes.append(value)
                } else {
                    bytes.append(byte)
                }
            }
            return String(validating: bytes, as: UTF8.self)
        }
        guard let name = decoded(parts[0]), let value = parts.count > 1 ? decoded(parts[1]) : "",
            items.updateValue(value, forKey: name) == nil
        else { return nil }
    }
    return items
}
