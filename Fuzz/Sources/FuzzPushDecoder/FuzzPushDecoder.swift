import Model
import SyncCore

/// Reads the input as a push, a relay and a pull page, the way the server and
/// the client read them. Whatever decodes must survive a round trip through
/// its JSON unchanged, with the same digests, and respect every wire limit.
func fuzzPushDecoder(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard let json = try? JSONValue.parse(utf8: UnsafeBufferPointer(start: data, count: size)) else { return 0 }
    if let push = try? PushRequest(json: json) {
        precondition(push.changes.count <= Wire.maxPushChanges && push.to - push.from + 1 == Int64(push.changes.count))
        for change in push.changes { precondition(Wire.problem(state: change.state) == nil && Wire.problem(key: change.key) == nil) }
        let again = try? PushRequest(json: JSONValue.parse(push.json.jsonText))
        precondition(again == push, "a push changed in a round trip")
        precondition(again?.changes.map(\.digest) == push.changes.map(\.digest))
    }
    if let relay = try? RelayRequest(json: json) {
        precondition((try? RelayRequest(json: JSONValue.parse(relay.json.jsonText))) == relay, "a relay changed in a round trip")
    }
    if let page = try? PullResponse(json: json) {
        precondition((try? PullResponse(json: JSONValue.parse(page.json.jsonText)))?.changes == page.changes, "a page changed in a round trip")
    }
    return 0
}
