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
