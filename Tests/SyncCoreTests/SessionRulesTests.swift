import Testing

@testable import SyncCore

/// The decisions a sync makes about the timeline, from tables.
@Suite struct SessionRulesTests {
    /// Each row: the answer's account, whether the replica has a key, the
    /// account its key belongs to, and what the sync does.
    static let accounts: [(String, Bool, String?, SessionRules.AccountStep)] = [
        ("a1", false, nil, .known),
        ("a1", false, "a2", .known), // no key: any account (a new one resets the cursor elsewhere)
        ("", true, "a2", .known), // a server that names no account
        ("a1", true, nil, .adoptForKey),
        ("a1", true, "a1", .known),
        ("a1", true, "a2", .otherAccount),
    ]

    @Test(arguments: accounts) func anAccountIsChecked(
        account: String, hasKey: Bool, keyAccount: String?, step: SessionRules.AccountStep
    ) {
        #expect(SessionRules.account(account, hasKey: hasKey, keyAccount: keyAccount) == step)
    }

    @Test func anEpochIsFirstSameOrChanged() {
        #expect(SessionRules.epoch("e1", known: nil) == .first)
        #expect(SessionRules.epoch("e1", known: "e1") == .same)
        #expect(SessionRules.epoch("e2", known: "e1") == .changed)
    }

    @Test func aReplicaStartsOverWithANewKeyOnly() {
        #expect(!SessionRules.startsEncryptedSync(keyID: nil, replicaKeyID: nil))
        #expect(!SessionRules.startsEncryptedSync(keyID: nil, replicaKeyID: "k1")) // removing the key is not a start
        #expect(SessionRules.startsEncryptedSync(keyID: "k1", replicaKeyID: nil))
        #expect(!SessionRules.startsEncryptedSync(keyID: "k1", replicaKeyID: "k1"))
        #expect(SessionRules.startsEncryptedSync(keyID: "k2", replicaKeyID: "k1"))
    }

    /// Each row: the key, relay pending, pending relay is the switch's,
    /// pushed through, and what goes up first.
    static let relays: [(String?, Bool, Bool, Int64, SessionRules.Relay?)] = [
        ("k1", false, false, 0, nil),
        (nil, false, true, 0, nil),
        (nil, true, false, 7, SessionRules.Relay(encryptWith: nil, skippingOwnUnpushed: false)),
        ("k1", true, false, 0, SessionRules.Relay(encryptWith: "k1", skippingOwnUnpushed: false)),
        // Right after the switch, this device's own records go up with its push.
        ("k1", true, true, 0, SessionRules.Relay(encryptWith: "k1", skippingOwnUnpushed: true)),
        ("k1", true, true, 3, SessionRules.Relay(encryptWith: "k1", skippingOwnUnpushed: false)),
    ]

    @Test(arguments: relays) func whatGoesUpFirst(
        keyID: String?, pending: Bool, isSwitch: Bool, pushedThrough: Int64, relay: SessionRules.Relay?
    ) {
        #expect(
            SessionRules.relay(
                keyID: keyID, relayPending: pending, relayIsSwitch: isSwitch, pushedThrough: pushedThrough) == relay)
    }

    @Test func aServerKeyIsOursReplacedOrAnothers() {
        #expect(SessionRules.serverKey("k2", keyID: "k2", replaced: ["k1"]) == .same)
        #expect(SessionRules.serverKey("k1", keyID: "k2", replaced: ["k1"]) == .moveForward)
        #expect(SessionRules.serverKey("k3", keyID: "k2", replaced: ["k1"]) == .rotatedElsewhere)
        #expect(SessionRules.serverKey("k1", keyID: "k2", replaced: []) == .rotatedElsewhere)
    }

    /// A pull answer's `signingKey` to a client that named its own.
    @Test func theServersSigningKeyIsOursNoneOrAnothers() {
        #expect(SessionRules.signingKey(registered: nil, own: "pk") == .same) // left out: the one named
        #expect(SessionRules.signingKey(registered: "pk", own: "pk") == .same)
        #expect(SessionRules.signingKey(registered: "", own: "pk") == .register)
        #expect(SessionRules.signingKey(registered: "other", own: "pk") == .mismatch)
    }

    @Test func onlyPlainEpochsGoIntoAQuery() {
        #expect(SessionRules.isPlainEpoch("0f9a"))
        #expect(!SessionRules.isPlainEpoch("0F9A"))
        #expect(!SessionRules.isPlainEpoch("a&since=0"))
        #expect(!SessionRules.isPlainEpoch("é"))
    }
}
