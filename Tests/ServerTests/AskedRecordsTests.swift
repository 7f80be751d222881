import HTTP
import JSON
import SyncCore
import TestSupport
import Testing

@testable import BrsyncServer

/// Records asked for again by hidden key (`/v1/pull?keys=`): a machine asks
/// for the records its pulls set aside, and gets each as it is now.
@Suite struct AskedRecordsTests {
    static func ask(_ device: TestDevice, _ items: [String]) throws -> HTTPResponseParser.ParsedResponse {
        let target = "/v1/pull?key=\(EncryptedAccountTests.firstKey)&keys=" + items.joined(separator: ",")
        return try device.client.send(method: "GET", target: target, headers: device.authorization)
    }

    /// The answer holds the records asked for that the account has (one
    /// not there, or asked twice, adds nothing), in change-number order, as
    /// they are now; it moves no cursor and changes nothing on the server.
    /// Another account's device asking for the same keys gets none of them.
    /// A wrong `keys` is refused with 400, naming it; a stranger learns nothing.
    @Test(arguments: StoreKind.allCases) func recordsAreAnsweredByHiddenKeyInTheirOwnAccountOnly(
        _ kind: StoreKind
    )
        throws
    {
        let fixture = try ServerFixture(kind)
        let (laptop, _) = try EncryptedAccountTests.encryptedAccount(fixture)
        let records = ["one", "two", "three"].map { EncryptedAccountTests.sealed(laptop, $0) }
        #expect(try laptop.push(records).status == 200)
        // two changes again: its newest version is the one answered.
        let twoAgain = EncryptedAccountTests.sealed(laptop, "two", deleted: true)
        #expect(try laptop.push([twoAgain]).status == 200)
        let before = try laptop.pullAll()

        let hidden = records.map(\.key)
        let missing = "h1." + String(repeating: "Z", count: 43)
        let answer = try Self.ask(
            laptop, ["rules:\(hidden[2])", "rules:\(missing)", "rules:\(hidden[1])", "rules:\(hidden[2])"])
        #expect(answer.status == 200, "\(answer.text)")
        let page = try Wire.read(answer.text, PullResponse.init(reading:))
        #expect(page.changes.map(\.key) == [hidden[2], hidden[1]], "\(answer.text)")
        #expect(page.changes.last?.state.isDeleted == true && !page.more && page.encrypted)
        #expect(page.next == before.cursor)
        #expect(try laptop.pullAll().cursor == before.cursor)
        #expect(try fixture.store.records(account: "alice").count == 3)

        // Another account's device, asking for alice's keys, gets nothing of hers.
        let bob = try fixture.device("bob", "phone", protocol: Wire.protocolVersion)
        bob.keyID = EncryptedAccountTests.firstKey
        bob.signingKey = EncryptedAccountTests.secondSigner
        #expect(try EncryptedAccountTests.encrypt(bob, signer: EncryptedAccountTests.secondSigner).status == 200)
        let theirs = try Self.ask(bob, hidden.map { "rules:\($0)" })
        #expect(theirs.status == 200, "\(theirs.text)")
        #expect(try Wire.read(theirs.text, PullResponse.init(reading:)).changes.isEmpty, "\(theirs.text)")

        // Wrong items are named; a stranger gets 401 before any of that.
        for items in [
            ["rules:plain.example"], ["people:\(hidden[0])"], ["rules:\(hidden[0])", ""],
            Array(repeating: "rules:\(hidden[0])", count: PullRequest.maxAsked + 1),
        ] {
            let refused = try Self.ask(laptop, items)
            #expect(
                refused.status == 400 && refused.errorCode == .badRequest && refused.errorMessage.hasPrefix("keys"),
                "\(items.prefix(2)): \(refused.text)")
        }
        for query in [
            "keys=rules:\(hidden[0])&since=0", "keys=rules:\(hidden[0])&full=1", "keys=rules:\(hidden[0])%",
            "keys=rules:\(hidden[0])&keys=rules:\(hidden[1])", "keys=%zz", "since=%zz", "key=a&key=b",
        ] {
            let refused = try laptop.client.send(
                method: "GET", target: "/v1/pull?" + query, headers: laptop.authorization)
            #expect(refused.status == 400 && refused.errorCode == .badRequest, "\(query): \(refused.text)")
        }
        let stranger = try laptop.client.send(
            method: "GET", target: "/v1/pull?keys=rules:\(hidden[0])", headers: ["Authorization": "Bearer nope"])
        #expect(stranger.status == 401)
    }

    /// An answer keeps to the page byte budget, as a pull's page does: the
    /// first record always, then as many as fit; `more` says some were left out.
    @Test func anAnswerKeepsToThePageBudget() throws {
        let fixture = try ServerFixture(.sqlite)
        let (laptop, _) = try EncryptedAccountTests.encryptedAccount(fixture)
        let records = ["one", "two", "three"].map { EncryptedAccountTests.sealed(laptop, $0) }
        #expect(try laptop.push(records).status == 200)
        let asked = records.map { PullRequest.Asked(collection: .rules, key: $0.key) }
        for (budget, count, more) in [(1, 1, true), (1 << 20, 3, false)] {
            let text = try fixture.store.pullAskedText(
                token: laptop.token, asked: asked, clientProtocol: Wire.protocolVersion, clientKeyID: nil,
                clientSigningKey: nil, maxBytes: budget)
            let page = try Wire.read(String(decoding: text, as: UTF8.self), PullResponse.init(reading:))
            #expect(page.changes.count == count && page.more == more, "\(budget)")
        }
    }
}
