import Model
import SyncCore

/// Reads the input as a push, a relay and a pull page, the way the server and
/// the client read them. Whatever decodes must survive a round trip through
/// its JSON unchanged, with the same digests, and respect every wire limit.
/// The readers that skip the JSON tree (`scanned`) must agree with the tree
/// decoders: whatever they read, the tree decoders read the same, so they
/// can never take what the server would refuse.
func fuzzPushDecoder(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = UnsafeBufferPointer(start: data, count: size)
    let scannedPush = PushRequest.scanned(bytes)
    let scannedRelay = RelayRequest.scanned(bytes)
    let scannedPage = PullResponse.scanned(bytes)
    guard let json = try? JSONValue.parse(utf8: bytes) else {
        precondition(scannedPush == nil && scannedRelay == nil && scannedPage == nil, "the scanner read what is not JSON")
        return 0
    }
    let push = try? PushRequest(json: json)
    precondition(scannedPush == nil || scannedPush == push, "the scanner read a push the tree decoder reads otherwise")
    if let push {
        precondition(push.changes.count <= Wire.maxPushChanges && push.to - push.from + 1 == Int64(push.changes.count))
        for change in push.changes { precondition(Wire.problem(state: change.state) == nil && Wire.problem(key: change.key) == nil) }
        let again = try? PushRequest(json: JSONValue.parse(push.json.jsonText))
        precondition(again == push, "a push changed in a round trip")
        precondition(again?.changes.map(\.digest) == push.changes.map(\.digest))
        let body = push.body()
        precondition(body.withUnsafeBufferPointer(PushRequest.scanned) == push, "the scanner does not read a push as written")
    }
    let relay = try? RelayRequest(json: json)
    precondition(scannedRelay == nil || scannedRelay == relay, "the scanner read a relay the tree decoder reads otherwise")
    if let relay {
        precondition((try? RelayRequest(json: JSONValue.parse(relay.json.jsonText))) == relay, "a relay changed in a round trip")
        precondition(relay.body().withUnsafeBufferPointer(RelayRequest.scanned) == relay, "the scanner does not read a relay as written")
    }
    // The input as a stored record's fields (and as its versions).
    if let text = String(validUTF8: bytes) {
        let tree = try? RecordState(fields: json, versions: .object([:]), context: "fuzz")
        let scanned = RecordState.scanned(fieldsJSON: text, versionsJSON: "{}")
        precondition(scanned == nil || scanned == tree, "the scanner read stored fields the tree decoder reads otherwise")
        let treeVersions = try? RecordState(fields: .object([:]), versions: json, context: "fuzz")
        let scannedVersions = RecordState.scanned(fieldsJSON: "{}", versionsJSON: text)
        precondition(scannedVersions == nil || scannedVersions == treeVersions, "the scanner read stored versions the tree decoder reads otherwise")
    }
    let page = try? PullResponse(json: json)
    precondition(scannedPage == nil || (scannedPage == page && page?.unusable.isEmpty == true), "the scanner read a page the tree decoder reads otherwise")
    if let page {
        precondition((try? PullResponse(json: JSONValue.parse(page.json.jsonText)))?.changes == page.changes, "a page changed in a round trip")
    }
    return 0
}
