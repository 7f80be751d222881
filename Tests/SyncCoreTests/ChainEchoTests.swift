import SyncCore
import Testing

/// The server's echo of a replica's own stream: what a page carries, what
/// a page may not carry, and what the replica makes of it.
@Suite struct ChainEchoTests {
    /// This replica's chain: changes 1 to 5, each digest named by its number.
    static func ours(_ sequence: Int64) -> String? {
        (1...5).contains(sequence) ? String(repeating: "\(sequence)", count: 16) : nil
    }

    @Test(arguments: [
        // The server holds nothing of this id, and neither did it acknowledge any.
        (ChainEcho(last: 0, digest: ""), Int64(0), ChainEcho.Standing.ours),
        (ChainEcho(last: 3, digest: "3333333333333333"), 3, .ours),
        // Restored from before this replica's last pushes (or from before its first).
        (ChainEcho(last: 2, digest: "2222222222222222"), 3, .behind(last: 2)),
        (ChainEcho(last: 0, digest: ""), 3, .behind(last: 0)),
        // A push's answer was lost: the server took more than it said.
        (ChainEcho(last: 5, digest: "5555555555555555"), 3, .ahead(last: 5)),
        // Another home's changes under this id: another digest at a number
        // this replica made, or a number it never made.
        (ChainEcho(last: 3, digest: "abcdefabcdefabcd"), 3, .another),
        (ChainEcho(last: 2, digest: "abcdefabcdefabcd"), 3, .another),
        (ChainEcho(last: 6, digest: "6666666666666666"), 3, .another),
        (ChainEcho(last: 1, digest: "1111111111111111"), 0, .ahead(last: 1)),
        // A stream kept from before servers kept digests: nothing can be told.
        (ChainEcho(last: 3, digest: ""), 3, .unknown),
    ])
    func theReplicaComparesTheServersChainWithItsOwn(
        echo: ChainEcho, pushedThrough: Int64, standing: ChainEcho.Standing
    ) {
        #expect(echo.standing(pushedThrough: pushedThrough, ourChain: Self.ours) == standing)
    }

    static func read(_ text: String) throws -> PullResponse {
        try Array(text.utf8).withUnsafeBufferPointer { bytes throws(Wire.ReadError) in
            try PullResponse(reading: bytes)
        }
    }

    static let page = #"{"changes":[],"clock":"000001a22667f600-00000004-server","epoch":"e","more":false,"next":0"#

    /// A page without the echo (an older server, or an id not the token's
    /// own) reads as unknown; one with it reads it back.
    @Test func aPageCarriesTheEchoOnlyWhenTheServerSaysIt() throws {
        #expect(try Self.read(Self.page + "}").chain == nil)
        #expect(
            try Self.read(Self.page + #","chain":{"digest":"0123456789abcdef","last":7}}"#).chain
                == ChainEcho(last: 7, digest: "0123456789abcdef"))
        #expect(try Self.read(Self.page + #","chain":{"digest":"","last":0}}"#).chain == ChainEcho(last: 0, digest: ""))
    }

    @Test(arguments: [
        #""chain":1"#, #""chain":null"#, #""chain":{}"#, #""chain":{"last":7}"#,
        #""chain":{"digest":"0123456789abcdef"}"#, #""chain":{"digest":"0123456789abcdef","last":-1}"#,
        #""chain":{"digest":"0123456789ABCDEF","last":7}"#, #""chain":{"digest":"0123","last":7}"#,
        #""chain":{"digest":7,"last":7}"#, #""chain":{"digest":"0123456789abcdef","last":"7"}"#,
    ])
    func aDamagedEchoRefusesThePage(member: String) {
        #expect { try Self.read(Self.page + "," + member + "}") } throws: { error in
            "\(error)".contains("chain")
        }
    }
}
