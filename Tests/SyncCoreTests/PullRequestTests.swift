import Foundation
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
        PullRequest(limit: 1, chainOf: "0123456789abcdef"),
        PullRequest(
            since: 3, pusher: .init(device: "0123456789abcdef", pushed: 2, digest: "fedcba9876543210"),
            chainOf: "0123456789abcdef"),
    ])
    func whatAClientWritesIsWhatTheServerReads(_ request: PullRequest) throws {
        #expect(request.target.hasPrefix("/v1/pull?since="))
        #expect(try PullRequest(query: Self.items(request.target), maxLimit: 10_000) == request)
    }

    static let hidden = "h1." + String(repeating: "A", count: 42) + "_"

    /// Records asked for again: the most one request may name fit the
    /// server's request line (8 KiB) with every other item.
    @Test func recordsAskedForAgainReadBack() throws {
        var request = PullRequest(keyID: "0123456789abcdef", signer: String(repeating: "A", count: 43))
        request.asked = (0..<PullRequest.maxAsked).map { index in
            PullRequest.Asked(
                collection: .settings,
                key: "h1." + String(repeating: "-", count: 40) + String(format: "%03d", index))
        }
        #expect(request.target.utf8.count < 8 * 1024 - 64)
        #expect(try PullRequest(query: Self.items(request.target), maxLimit: 10_000) == request)
        request.asked = [PullRequest.Asked(collection: .rules, key: Self.hidden)]
        #expect(
            request.target
                == "/v1/pull?keys=rules:\(Self.hidden)&key=0123456789abcdef&signer=\(String(repeating: "A", count: 43))"
        )
        #expect(try PullRequest(query: Self.items(request.target), maxLimit: 10_000) == request)
    }

    @Test(arguments: [
        "keys=", "keys=rules", "keys=rules:", "keys=people:HIDDEN", "keys=rules:h1.short", "keys=rules:HIDDEN,",
        "keys=rules:HIDDEN,,rules:HIDDEN", "keys=rules:plain.example", "keys=rules:HIDDEN:extra",
        "keys=" + Array(repeating: "rules:HIDDEN", count: PullRequest.maxAsked + 1).joined(separator: ","),
        "keys=rules:HIDDEN&since=0", "keys=rules:HIDDEN&full=1", "keys=rules:HIDDEN&limit=5",
        "keys=rules:HIDDEN&epoch=abc", "keys=rules:HIDDEN&device=0123456789abcdef&pushed=1&digest=fedcba9876543210",
        "keys=rules:HIDDEN&chain=0123456789abcdef",
    ])
    func aWrongRecordAskedForIsNamed(query: String) {
        let query = query.replacingOccurrences(of: "HIDDEN", with: Self.hidden)
        #expect { try PullRequest(query: Self.items("/v1/pull?" + query), maxLimit: 10_000) } throws: { error in
            (error as? Wire.Problem)?.message.hasPrefix("keys") == true
        }
    }

    @Test(arguments: [
        ("since=-1", "since"), ("since=x", "since"), ("limit=0", "limit"), ("limit=10001", "limit"),
        ("key=xyz", "key"), ("signer=short", "signer"), ("device=0123456789abcdef", "device"),
        ("device=0123456789abcdef&pushed=1&digest=nothex", "device"),
        ("device=bad!&pushed=1&digest=fedcba9876543210", "device"),
        ("device=0123456789abcdef&pushed=-3&digest=fedcba9876543210", "device"),
        ("chain=", "chain"), ("chain=bad!", "chain"), ("chain=" + String(repeating: "a", count: 65), "chain"),
        ("chain=0123456789abcdef&device=fedcba9876543210&pushed=1&digest=fedcba9876543210", "chain"),
        ("epoch=A%26B", "epoch"), ("epoch=", "epoch"), ("epoch=" + String(repeating: "a", count: 65), "epoch"),
    ])
    func aWrongItemIsNamed(query: String, item: String) {
        #expect { try PullRequest(query: Self.items("/v1/pull?" + query), maxLimit: 10_000) } throws: { error in
            (error as? Wire.Problem)?.message.hasPrefix(item) == true
        }
    }
}
