import SyncCore
import Testing

/// The pull request's one writer and one reader agree, and the reader
/// refuses what is not a pull request with the item that is wrong.
@Suite struct PullRequestTests {
    /// The query items of a target as a server decodes them (nothing in a
    /// pull target needs percent-decoding).
    static func items(_ target: String) -> [String: String] {
        let query = target.split(separator: "?", maxSplits: 1).dropFirst().first.map(String.init) ?? ""
        var items: [String: String] = [:]
        for pair in query.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1).map(String.init)
            items[parts[0]] = parts.count > 1 ? parts[1] : ""
        }
        return items
    }

    @Test(arguments: [
        PullRequest(),
        PullRequest(since: 42, limit: 500),
        PullRequest(since: 7, limit: 1, full: true, keyID: "0123456789abcdef"),
        PullRequest(
            since: 9, limit: 100, keyID: "0123456789abcdef", signer: String(repeating: "A", count: 43),
            pusher: .init(device: "0123456789abcdef", pushed: 12, digest: "fedcba9876543210"), epoch: "1a2b3c4d5e6f7a8b"
        ),
    ])
    func whatAClientWritesIsWhatTheServerReads(_ request: PullRequest) throws {
        #expect(request.target.hasPrefix("/v1/pull?since="))
        #expect(try PullRequest(query: Self.items(request.target), maxLimit: 10_000) == request)
    }

    @Test(arguments: [
        ("since=-1", "since"), ("since=x", "since"), ("limit=0", "limit"), ("limit=10001", "limit"),
        ("key=xyz", "key"), ("signer=short", "signer"), ("device=0123456789abcdef", "device"),
        ("device=0123456789abcdef&pushed=1&digest=nothex", "device"),
        ("device=bad!&pushed=1&digest=fedcba9876543210", "device"),
        ("device=0123456789abcdef&pushed=-3&digest=fedcba9876543210", "device"),
        ("epoch=A%26B", "epoch"), ("epoch=", "epoch"), ("epoch=" + String(repeating: "a", count: 65), "epoch"),
    ])
    func aWrongItemIsNamed(query: String, item: String) {
        #expect { try PullRequest(query: Self.items("/v1/pull?" + query), maxLimit: 10_000) } throws: { error in
            (error as? Wire.Problem)?.message.hasPrefix(item) == true
        }
    }
}
