import Testing

@testable import SyncCore

/// The pull's decisions before a page is applied, from tables.
@Suite struct PullMachineTests {
    static func page(reset: Bool = false, encrypted: Bool = false, encryptionReset: Bool = false) -> PullResponse {
        var page = PullResponse(
            changes: [], next: 5, more: false, epoch: "e",
            clock: HLCTimestamp(wallMillis: 1, counter: 0, device: "server"))
        page.reset = reset
        page.encrypted = encrypted
        page.encryptionReset = encryptionReset
        return page
    }

    /// Each row: the page, what noting its account and epoch found, whether
    /// this replica has a key, its cursor, and what the pull does.
    static let rows: [(PullResponse, Bool, Bool, Bool, Int64, PullMachine.Action)] = [
        (page(), false, false, false, 9, .apply),
        (page(encrypted: true), false, false, true, 9, .apply),
        // Another account or a new epoch: push everything, then from zero.
        (page(), true, false, false, 9, .pushThenStartOver(fullResync: true)),
        (page(), false, true, false, 9, .pushThenStartOver(fullResync: false)),
        // The timeline wins over a reset, and over an encryption mismatch, on the same page.
        (page(reset: true, encrypted: true), false, true, true, 9, .pushThenStartOver(fullResync: false)),
        (page(reset: true), false, true, true, 9, .pushThenStartOver(fullResync: false)),
        // But nothing of a replica without the key goes up to an encrypted account, on any timeline.
        (page(encrypted: true), true, false, false, 9, .needKey),
        (page(reset: true, encrypted: true), false, true, false, 9, .needKey),
        // A purge this replica did not see: reconcile (said only when it had pulled before).
        (page(reset: true), false, false, false, 9, .reconcile(fullResync: true)),
        (page(reset: true), false, false, false, 0, .reconcile(fullResync: false)),
        // A readable account for a replica with a key: restored from before the switch.
        (page(), false, false, true, 9, .encryptAgainAndStartOver),
        // ...unless the operator reset its encryption: stop, never readable on the server's word.
        (page(encryptionReset: true), false, false, true, 9, .encryptionWasReset),
        // A replica without a key syncs a reset account readable.
        (page(encryptionReset: true), false, false, false, 9, .apply),
        // An encrypted account for a replica without one.
        (page(encrypted: true), false, false, false, 9, .needKey),
    ]

    @Test(arguments: rows) func aPageIsDecided(
        page: PullResponse, accountChanged: Bool, epochChanged: Bool, hasKey: Bool, cursor: Int64,
        action: PullMachine.Action
    ) {
        var machine = PullMachine()
        #expect(
            machine.decide(
                page, accountChanged: accountChanged, epochChanged: epochChanged, hasKey: hasKey, cursor: cursor)
                == action)
    }

    /// A server that keeps starting over stops the pull after three times,
    /// counted together whatever the reason; a missing key never counts.
    @Test func startingOverIsBounded() {
        var machine = PullMachine()
        #expect(
            machine.decide(Self.page(), accountChanged: false, epochChanged: true, hasKey: false, cursor: 1)
                == .pushThenStartOver(fullResync: false))
        #expect(
            machine.decide(Self.page(reset: true), accountChanged: false, epochChanged: false, hasKey: false, cursor: 1)
                == .reconcile(fullResync: true))
        #expect(
            machine.decide(
                Self.page(encrypted: true), accountChanged: false, epochChanged: false, hasKey: false, cursor: 1)
                == .needKey)
        #expect(
            machine.decide(Self.page(), accountChanged: false, epochChanged: false, hasKey: true, cursor: 1)
                == .encryptAgainAndStartOver)
        #expect(
            machine.decide(Self.page(), accountChanged: false, epochChanged: false, hasKey: true, cursor: 1)
                == .stop("the server keeps its account readable after it was encrypted (4 times during one pull)"))
        var epochs = PullMachine()
        for _ in 0..<3 {
            _ = epochs.decide(Self.page(), accountChanged: true, epochChanged: false, hasKey: false, cursor: 1)
        }
        #expect(
            epochs.decide(Self.page(), accountChanged: true, epochChanged: false, hasKey: false, cursor: 1)
                == .stop("the server changed its epoch or account 4 times during one pull"))
        var resets = PullMachine()
        for _ in 0..<3 {
            _ = resets.decide(
                Self.page(reset: true), accountChanged: false, epochChanged: false, hasKey: false, cursor: 1)
        }
        #expect(
            resets.decide(Self.page(reset: true), accountChanged: false, epochChanged: false, hasKey: false, cursor: 1)
                == .stop("the server asked to start over 4 times during one pull"))
    }
}
