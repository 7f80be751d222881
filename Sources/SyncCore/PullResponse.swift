import JSON

/// The answer to `GET /v1/pull?since=CURSOR&limit=N`.
public struct PullResponse: Sendable, Equatable {
    /// Records changed after the cursor, in the account's sequence order.
    public var changes: [ChangeRecord]
    /// The cursor for the next pull.
    public var next: Int64
    /// Whether more changes wait after `next`.
    public var more: Bool
    public var epoch: String
    public var clock: HLCTimestamp
    /// The account's identity.
    public var account: String
    /// Records that could not be read, each with why: the client reports them
    /// and applies the rest (one bad record never blocks an account).
    public var unusable: [(sequence: Int64, reason: String)] = []
    /// The cursor is below a tombstone the server has purged: the client
    /// pulls everything from 0 and drops what the server no longer has.
    public var reset = false
    /// The account is end-to-end encrypted: every record is sealed, and the
    /// client opens it with the account key (protocol 2).
    public var encrypted = false
    /// The id of the account key the records are sealed with (encrypted accounts).
    public var keyID: String?
    /// The signing public key the server keeps for the account (encrypted
    /// accounts, protocol 3): "" when it keeps none; left out when the
    /// client named it (`signer=`), so a no-change pull stays small. A key
    /// holder compares it with its own and stops on a mismatch.
    public var signingKey: String?
    /// The account's encryption was reset by the server's operator (it is not
    /// encrypted now): a machine holding a key stops and says so.
    public var encryptionReset = false
    /// How the encrypted account's changes are sealed: `.two` once the
    /// server marked it (`"sealedFormat": 2`, docs/sealed-format-v2.md).
    /// Not a trust boundary: both formats bind every value to the account key.
    public var sealedFormat = Wire.SealedFormat.one
    /// Where the server holds the asking replica's stream, when the pull
    /// asked (``PullRequest/chainOf``) and the server may say: nil from a
    /// server that does not, or for an id the token's device did not push under.
    public var chain: ChainEcho?

    public init(
        changes: [ChangeRecord], next: Int64, more: Bool, epoch: String, clock: HLCTimestamp, account: String = ""
    ) {
        self.changes = changes
        self.next = next
        self.more = more
        self.epoch = epoch
        self.clock = clock
        self.account = account
    }

    public static func == (lhs: PullResponse, rhs: PullResponse) -> Bool {
        lhs.changes == rhs.changes && lhs.next == rhs.next && lhs.more == rhs.more && lhs.epoch == rhs.epoch
            && lhs.clock == rhs.clock && lhs.account == rhs.account && lhs.reset == rhs.reset
            && lhs.encrypted == rhs.encrypted && lhs.keyID == rhs.keyID
            && lhs.signingKey == rhs.signingKey && lhs.encryptionReset == rhs.encryptionReset && lhs.chain == rhs.chain
            && lhs.sealedFormat == rhs.sealedFormat
            && lhs.unusable.map(\.sequence) == rhs.unusable.map(\.sequence)
            && lhs.unusable.map(\.reason) == rhs.unusable.map(\.reason)
    }

    /// The page's JSON text (members in name order).
    public var body: [UInt8] {
        var output: [UInt8] = []
        Self.write(
            account: account, clock: clock, epoch: epoch, more: more, reset: reset,
            keyID: encrypted ? keyID ?? "" : nil,
            signingKey: encrypted ? signingKey : nil, encryptionReset: encryptionReset,
            sealedFormat: encrypted ? sealedFormat : .one, chain: chain, next: next, into: &output
        ) { output in
            for (index, change) in changes.enumerated() {
                if index > 0 { output.append(UInt8(ascii: ",")) }
                change.write(into: &output)
            }
        }
        return output
    }

    /// Writes a page whose changes `writeChanges` writes (comma-separated
    /// change texts): the server splices in the records as it stores them.
    /// - Parameters:
    ///   - keyID: the account key's id; nil for an account that is not encrypted.
    ///   - signingKey: the account's registered signing public key ("" for
    ///     none), or nil to leave it out.
    ///   - encryptionReset: the operator reset the account's encryption.
    ///   - sealedFormat: how the (encrypted) account's changes are sealed;
    ///     written only when it is format 2.
    ///   - chain: the asking replica's stream as the server holds it, when asked.
    public static func write(
        account: String, clock: HLCTimestamp, epoch: String, more: Bool, reset: Bool, keyID: String?,
        signingKey: String? = nil, encryptionReset: Bool = false, sealedFormat: Wire.SealedFormat = .one,
        chain: ChainEcho? = nil, next: Int64,
        into output: inout [UInt8], changes writeChanges: (inout [UInt8]) -> Void
    ) {
        output += #"{"account":"#.utf8
        JSONValue.writeString(account, into: &output)
        if let chain {
            output += #","chain":{"digest":"#.utf8
            JSONValue.writeString(chain.digest, into: &output)
            output += #","last":"#.utf8
            output += String(chain.last).utf8
            output.append(UInt8(ascii: "}"))
        }
        output += #","changes":["#.utf8
        writeChanges(&output)
        output += #"],"clock":""#.utf8
        clock.write(into: &output)
        output += #"","epoch":"#.utf8
        JSONValue.writeString(epoch, into: &output)
        output += #","more":"#.utf8
        output += (more ? "true" : "false").utf8
        if reset { output += #","reset":true"#.utf8 }
        if let keyID {
            output += #","encrypted":true,"key":"#.utf8
            JSONValue.writeString(keyID, into: &output)
            if sealedFormat == .two { output += #","sealedFormat":2"#.utf8 }
            if let signingKey {
                output += #","signingKey":"#.utf8
                JSONValue.writeString(signingKey, into: &output)
            }
        } else if encryptionReset {
            output += #","encryptionReset":true"#.utf8
        }
        output += #","next":"#.utf8
        output += String(next).utf8
        output.append(UInt8(ascii: "}"))
    }

    /// Reads a page (see ``Wire/ReadError``); a change that is not valid is
    /// set aside in ``unusable`` (with its sequence when it has one), never
    /// applied, and the page is still read.
    public init(reading bytes: UnsafeBufferPointer<UInt8>) throws(Wire.ReadError) {
        let reading = try MessageReading.read(bytes, changesName: "changes", limit: .max, untilProblem: false)
        let object = reading.members
        guard reading.isObject, reading.hasChanges, let next = object["next"]?.intValue,
            let more = object["more"]?.boolValue,
            let epoch = object["epoch"]?.stringValue, let clockText = object["clock"]?.stringValue,
            let clock = HLCTimestamp(text: clockText)
        else { throw .invalid(Wire.Problem("not a pull response")) }
        self.init(
            changes: reading.changes, next: next, more: more, epoch: epoch, clock: clock,
            account: object["account"]?.stringValue ?? "")
        unusable = reading.problems.map { ($0.change.sequence ?? 0, $0.change.problem.message) }
        reset = object["reset"]?.boolValue ?? false
        encrypted = object["encrypted"]?.boolValue ?? false
        keyID = object["key"]?.stringValue.flatMap { Wire.isKeyID($0) ? $0 : nil }
        if let text = object["signingKey"]?.stringValue {
            guard text.isEmpty || WriteSignature.isPublicKey(text) else {
                throw .invalid(Wire.Problem("the page's signingKey is not a public key"))
            }
            signingKey = text
        }
        encryptionReset = object["encryptionReset"]?.boolValue ?? false
        if let value = object["sealedFormat"] {
            // A later format than 2 is one this client does not know: it keeps writing the newest it knows.
            guard let format = value.intValue, format >= 1 else {
                throw .invalid(Wire.Problem("the page's sealedFormat is not a format number"))
            }
            sealedFormat = format >= 2 ? .two : .one
        }
        if let value = object["chain"] {
            guard case .object(let echo) = value, let last = echo["last"]?.intValue, last >= 0,
                let digest = echo["digest"]?.stringValue,
                digest.isEmpty || Wire.isDigest(digest)
            else {
                throw .invalid(Wire.Problem("the page's chain is not a change number and its digest"))
            }
            chain = ChainEcho(last: last, digest: digest)
        }
    }
}
