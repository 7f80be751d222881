import JSON
import Model
import SyncCore

/// Reads the input as a push, a relay, a pull page, an encrypt request (and
/// its answer), a join request, a stored record (whole, and its stamps
/// alone), a `Brsync-Signature` header
/// the
/// way the server and the client read them. The readers skip the JSON tree,
/// so they must agree with it on what JSON is: text the tree parser refuses
/// is refused as not JSON, and text it reads is never called not JSON.
/// Whatever reads must respect every wire limit and read back unchanged
/// from the text it writes, with the same digests.
func fuzzPushDecoder(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = UnsafeBufferPointer(start: data, count: size)
    let isJSON = (try? JSONValue.parse(utf8: bytes)) != nil
    func agrees<Message>(
        _ read: (UnsafeBufferPointer<UInt8>) throws(Wire.ReadError) -> Message, _ what: String
    ) -> Message? {
        do throws(Wire.ReadError) {
            let message = try read(bytes)
            precondition(isJSON, "the \(what) reader read what is not JSON")
            return message
        } catch {
            if case .notJSON = error { precondition(!isJSON, "the \(what) reader called JSON not JSON: \(error)") }
            return nil
        }
    }
    // Read in two halves (the second half "beside", here on this thread,
    // split from two changes on), a push and a relay read exactly as in order.
    let halves = SecondThread(worthSplitting: 2) { body in
        body()
        return {}
    }
    func outcome<Message>(_ read: () throws(Wire.ReadError) -> Message) -> Result<Message, Wire.ReadError> {
        Result { () throws(Wire.ReadError) in try read() }
    }
    let pushInHalves = outcome { () throws(Wire.ReadError) in try PushRequest(reading: bytes, secondThread: halves) }
    let pushInOrder = outcome { () throws(Wire.ReadError) in try PushRequest(reading: bytes) }
    switch (pushInOrder, pushInHalves) {
    case (.success(let inOrder), .success(let inHalves)):
        precondition(inOrder == inHalves, "a push read in halves differs")
    case (.failure(let inOrder), .failure(let inHalves)):
        precondition("\(inOrder)" == "\(inHalves)", "a push read in halves fails otherwise")
    default: preconditionFailure("a push read in halves reads where in order it does not, or the other way")
    }
    let relayInHalves = outcome { () throws(Wire.ReadError) in try RelayRequest(reading: bytes, secondThread: halves) }
    let relayInOrder = outcome { () throws(Wire.ReadError) in try RelayRequest(reading: bytes) }
    switch (relayInOrder, relayInHalves) {
    case (.success(let inOrder), .success(let inHalves)):
        precondition(
            inOrder.records == inHalves.records && inOrder.unreadable == inHalves.unreadable
                && inOrder.ledger == inHalves.ledger && inOrder.ledgerOf == inHalves.ledgerOf
                && inOrder.keyID == inHalves.keyID, "a relay read in halves differs")
    case (.failure(let inOrder), .failure(let inHalves)):
        precondition("\(inOrder)" == "\(inHalves)", "a relay read in halves fails otherwise")
    default: preconditionFailure("a relay read in halves reads where in order it does not, or the other way")
    }
    if let push = agrees(PushRequest.init(reading:), "push") {
        let count = push.changes.count + push.unreadable.count
        precondition(count <= Wire.maxPushChanges && push.to - push.from + 1 == Int64(count))
        for change in push.changes {
            precondition(Wire.problem(state: change.state) == nil && Wire.problem(key: change.key) == nil)
        }
        precondition(push.ledger.count <= Ledger.pendingSlots && push.ledger.allSatisfy { $0.collection == .ledger })
        // Changes over a limit are set aside numbered in the range, with a digest.
        let numbers = (push.changes.map(\.sequence) + push.unreadable.map(\.sequence)).sorted()
        precondition(numbers == Array(push.from...push.to), "a push's changes are not its range")
        for unreadable in push.unreadable {
            precondition(Wire.isDigest(unreadable.digest) && !unreadable.reason.isEmpty)
        }
        // (What was set aside is not written back.)
        if push.unreadable.isEmpty {
            let again = try? push.body().withUnsafeBufferPointer { bytes throws(Wire.ReadError) in
                try PushRequest(reading: bytes)
            }
            precondition(again == push, "a push changed in a round trip")
            precondition(again?.changes.map(\.digest) == push.changes.map(\.digest))
        }
    }
    if let relay = agrees(RelayRequest.init(reading:), "relay") {
        let again = try? relay.body().withUnsafeBufferPointer { bytes throws(Wire.ReadError) in
            try RelayRequest(reading: bytes)
        }
        precondition(
            again?.records == relay.records && again?.keyID == relay.keyID && again?.ledgerOf == relay.ledgerOf
                && again?.ledger == relay.ledger,
            "a relay changed in a round trip")
        // A relay's own pending records: one device's, never with a ledger request.
        precondition(relay.ledger.isEmpty || (relay.ledgerOf == nil && relay.ledger.count <= Ledger.pendingSlots))
        precondition(relay.ledger.isEmpty || (try? RelayRequest.pendingDevice(of: relay.ledger)) != nil)
        // A ledger request names a device and holds at most a whole ledger's shards and head.
        precondition(relay.ledgerOf.map { HLCTimestamp.isValidDevice($0) } ?? true)
        precondition(relay.ledgerOf == nil || relay.records.count + relay.unreadable.count <= Ledger.maxShards + 1)
    }
    if let page = agrees(PullResponse.init(reading:), "page") {
        let again = try? page.body.withUnsafeBufferPointer { bytes throws(Wire.ReadError) in
            try PullResponse(reading: bytes)
        }
        precondition(again?.changes == page.changes && again?.next == page.next, "a page changed in a round trip")
    }
    if let asked = agrees(EncryptRequest.init(reading:), "encrypt request") {
        let again = try? asked.body.withUnsafeBufferPointer { bytes throws(Wire.ReadError) in
            try EncryptRequest(reading: bytes)
        }
        precondition(again == asked, "an encrypt request changed in a round trip")
    }
    if let json = try? JSONValue.parse(utf8: bytes), let answer = try? EncryptResponse(json: json) {
        precondition(
            answer.signingKey.map(WriteSignature.isPublicKey) ?? true,
            "an encrypt answer took a signing key that is not a public key")
        precondition((try? EncryptResponse(json: answer.json)) == answer, "an encrypt answer changed in a round trip")
    }
    if let text = String(validUTF8: bytes) {
        if let signature = WriteSignature(headerValue: text) {
            precondition(
                WriteSignature.isPublicKey(signature.publicKey) && WriteSignature.isSignature(signature.signature))
            precondition(
                WriteSignature(headerValue: signature.headerValue) == signature,
                "a signature header changed in a round trip")
        }
    }
    if let joining = agrees(JoinRequest.init(reading:), "join request") {
        precondition(
            JoinRequest.isWellFormed(joining.token), "a join request took a token not of a device token's form")
        let again = try? joining.body.withUnsafeBufferPointer { bytes throws(Wire.ReadError) in
            try JoinRequest(reading: bytes)
        }
        precondition(again == joining, "a join request changed in a round trip")
    }
    // The input as a stored record's fields read for their stamps alone (the
    // ledger checks): never a crash, and what the whole reader reads, it reads alike.
    var reader = HLCTimestamp.Reader()
    let stamps = try? RecordState.fieldStamps(fieldsUTF8: bytes, reader: &reader)
    // The input as a stored record's fields (and as its versions).
    if let text = String(validUTF8: bytes) {
        if let state = try? RecordState(fieldsJSON: text, versionsJSON: "{}") {
            precondition(stamps == state.fields.mapValues(\.stamp), "the stamps alone read otherwise")
            precondition(
                isJSON
                    && (try? RecordState(fieldsJSON: RecordState.encodeFields(state.fields), versionsJSON: "{}"))
                        == state
            )
        }
        if let state = try? RecordState(fieldsJSON: "{}", versionsJSON: text) {
            precondition(
                isJSON
                    && (try? RecordState(fieldsJSON: "{}", versionsJSON: RecordState.encodeVersions(state.versions)))
                        == state
            )
        }
    }
    return 0
}
