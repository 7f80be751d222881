import Foundation
import HTTP
import JSON
import SyncCore
import TestSupport
import Testing

@testable import BrsyncServer

/// A readable account's server refuses, record by record, a browser profile
/// whose arguments other machines would run and synced data may not choose:
/// machines that predate their own check never get one. Deleting it is
/// always taken; an encrypted account's server cannot look, and its machines check.
@Suite struct SyncedProfileRefusalTests {
    static func profile(_ device: TestDevice, _ id: String, base: String, arguments: [String]) -> ChangeRecord {
        device.change(
            id,
            [
                "name": .string(id), "profileOf": .string(base), "profileArgs": .array(arguments.map(JSONValue.string)),
                "deleted": .bool(false),
            ], collection: .browsers)
    }

    static func rejected(_ response: HTTPResponseParser.ParsedResponse) -> [String] {
        guard case .object(let answer)? = response.json, case .array(let items)? = answer["rejected"] else { return [] }
        return items.compactMap { item in
            guard case .object(let rejection) = item else { return nil }
            return rejection["key"]?.stringValue
        }
    }

    @Test(arguments: StoreKind.allCases) func aReadableAccountRefusesProfilesThatWouldRunOtherArguments(
        _ kind: StoreKind
    ) throws {
        let fixture = try ServerFixture(kind)
        let laptop = try fixture.device("alice", "laptop", protocol: Wire.protocolVersion)
        let pushed = try laptop.push([
            Self.profile(laptop, "work", base: "chromium", arguments: ["--renderer-cmd-prefix=touch /tmp/pwned"]),
            Self.profile(laptop, "home", base: "chromium", arguments: ["--profile-directory=Home"]),
            Self.profile(laptop, "fx", base: "firefox", arguments: ["-P", "work"]),
            Self.profile(laptop, "path", base: "firefox", arguments: ["--profile", "/tmp/prepared"]),
            Self.profile(laptop, "mine", base: "my-browser", arguments: ["--new-window"]),
        ])
        #expect(pushed.status == 200 && Self.rejected(pushed) == ["work", "path", "mine"], "\(pushed.text)")
        #expect(
            pushed.text.contains("--renderer-cmd-prefix")
                && pushed.text.contains("is not a browser whose command line brsync knows"))
        #expect(try fixture.store.records(account: "alice").map(\.key).sorted() == ["fx", "home"])
        // A field changed later cannot make an ordinary profile run something else.
        let edit = laptop.change(
            "home", ["profileArgs": .array([.string("--gpu-launcher=/bin/sh")])], collection: .browsers,
            versions: VersionVector([laptop.deviceID: 2]))
        let refused = try laptop.push([edit])
        #expect(Self.rejected(refused) == ["home"], "\(refused.text)")
        // Deleting is always taken.
        let gone = laptop.change(
            "home", ["deleted": .bool(true), "profileArgs": .array([.string("--gpu-launcher=/bin/sh")])],
            collection: .browsers, versions: VersionVector([laptop.deviceID: 3]))
        let deleted = try laptop.push([gone])
        #expect(deleted.status == 200 && Self.rejected(deleted).isEmpty, "\(deleted.text)")
        // Relays are held to the same.
        let relay = try laptop.post(
            "/v1/relay",
            body: RelayRequest(records: [Self.profile(laptop, "work", base: "chromium", arguments: ["--no-sandbox"])])
                .body())
        #expect(Self.rejected(relay) == ["work"], "\(relay.text)")
    }
}
