import Foundation
import Model
import Replica
import TestSupport
import Testing

/// A rule that names the app a link comes from syncs as a rule of its own
/// (its key differs from the plain rule's for the same pattern) and decides
/// the same way on every machine.
@Suite struct SourceRuleSyncTests {
    @Test(arguments: StoreKind.allCases) func aSourceRuleAndThePlainRuleSyncAsTwo(_ kind: StoreKind) throws {
        let world = try SyncWorld(kind)
        let laptop = try world.machine("laptop")
        let desktop = try world.machine("desktop")
        for machine in [laptop, desktop] {
            for id in ["chrome", "firefox"] {
                _ = try machine.replica.addBrowser(id: id, name: nil, format: nil, scheme: nil, exec: "/bin/true %u")
            }
        }
        try laptop.replica.addRule(pattern: "github.com", browser: "firefox", priority: 10)
        try laptop.replica.addRule(pattern: "from:com.slack.Slack github.com", browser: "chrome", priority: 0)
        try world.sync(laptop)
        try world.sync(desktop)
        let rules = try desktop.replica.rules()
        #expect(Set(rules.map(\.pattern)) == ["github.com", "from:com.slack.Slack github.com"])
        let url = try NormalizedURL("https://github.com/org")
        #expect(try desktop.replica.resolve(url).browser?.browser.id == "firefox")
        #expect(try desktop.replica.resolve(url, from: "com.slack.Slack").browser?.browser.id == "chrome")
        // Removing one leaves the other.
        _ = try desktop.replica.removeRule(pattern: "from:com.slack.slack github.com")
        try world.sync(desktop)
        try world.sync(laptop)
        #expect(try laptop.replica.rules().map(\.pattern) == ["github.com"])
        #expect(try laptop.replica.resolve(url, from: "com.slack.Slack").browser?.browser.id == "firefox")
    }
}
