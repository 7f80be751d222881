import Glibc
import Replica
import SyncClient
import SyncCore
import TestSupport
import Testing

/// What `brsync log --conflicts` holds: values that really lost, and
/// nothing a machine overwrote knowingly.
@Suite struct ConflictLogTests {
    /// a deletes a rule; b, which had not seen the deletion, moves it to
    /// chrome later. The deletion lost: b (whose push overwrote it) logs
    /// that, but not the browser it had seen and changed on purpose; and a,
    /// whose deletion it was, is told at its next sync too (the pulled
    /// record names the vector its winning writer had: without a's deletion).
    /// Plain and end-to-end encrypted (where the writer's vector comes from
    /// the sealed manifest, not from the server).
    @Test(arguments: StoreKind.allCases, [false, true]) func aMachineLogsOnlyWhatItHadNotSeen(
        _ kind: StoreKind, encrypted: Bool
    ) throws {
        let world = try SyncWorld(kind)
        let (a, b) = (try world.machine("a"), try world.machine("b"))
        try KeyChangeTests.rule(a, "zoom.us")
        _ = try a.replica.addBrowser(id: "chrome", name: nil, format: nil, scheme: nil, exec: nil)
        try world.sync(a)
        if encrypted {
            try KeyChangeTests.shareNewKey(world, from: a, with: [b])
        } else {
            try world.sync(b)
        }
        _ = try a.replica.removeRule(pattern: "zoom.us")
        usleep(5_000) // b's edit is the later one, whatever the clock's resolution
        _ = try b.replica.addRule(pattern: "zoom.us", browser: "chrome", priority: nil)
        try world.sync(a)
        let pushed = try world.sync(b)
        let told = try world.sync(a)
        let expected = ["zoom.us deleted: bool(true) -> bool(false)"]
        for machine in [a, b] {
            let logged = try machine.replica.conflicts(limit: 10).map {
                "\($0.key) \($0.field): \($0.lost.value) -> \($0.winner.value)"
            }
            #expect(logged == expected, "\(machine.name): \(logged)")
        }
        #expect(pushed.conflicts == 1 && told.conflicts == 1, "b's sync \(pushed.conflicts), a's \(told.conflicts)")
        #expect(
            try SyncWorld.rules(a.replica) == ["zoom.us": "chrome"]
                && (try SyncWorld.rules(b.replica)) == ["zoom.us": "chrome"])
        // Told once: the next syncs, and a third machine that never wrote the
        // rule, log nothing more.
        #expect(try world.sync(a).conflicts == 0 && (try world.sync(b)).conflicts == 0)
        let c = try world.machine("c")
        if encrypted {
            try AccountKeyFile.add(try #require(try AccountKeyFile.read(home: a.replica.home)), home: c.replica.home)
        }
        #expect(try world.sync(c).conflicts == 0)
        #expect(try c.replica.conflicts(limit: 10).isEmpty)
    }

    /// A value that lost is kept on both machines; one of them restores
    /// it. The other, pulling the value back, marks its own entry as
    /// written back too, and refuses to restore it again. Plain and encrypted.
    @Test(arguments: [false, true]) func aValueRestoredOnOneMachineIsMarkedOnTheOther(_ encrypted: Bool) throws {
        let (world, a, b) = try Self.aValueKeptOnBoth(encrypted: encrypted)
        let kept = try #require(try a.replica.conflicts(limit: 10).first)
        let other = try #require(try b.replica.conflicts(limit: 10).first)
        #expect(kept.lost.value == .int(10) && other.lost.value == .int(10) && other.restoredAtMillis == nil)
        try a.replica.restore(conflict: kept.id)
        try world.sync(a)
        try world.sync(b)
        #expect(try b.replica.rule(pattern: "shared.example")?.priority == 10)
        #expect(try b.replica.conflicts(limit: 10).first?.restoredAtMillis != nil, "marked on b too")
        #expect(throws: ReplicaError.self) { try b.replica.restore(conflict: other.id) }
        // A value that came back marks only the entries of that value.
        #expect(try a.replica.conflicts(limit: 10).count == 1)
    }

    /// a and b each make the rule zoom.us, to different browsers, before
    /// either syncs: the browser that lost is logged on both machines, the
    /// rule's provenance (its createdAt and origin, which differ as both
    /// made it) on neither, pulled or pushed.
    @Test(arguments: StoreKind.allCases, [false, true]) func aRuleMadeTwiceLogsNoProvenance(
        _ kind: StoreKind, encrypted: Bool
    ) throws {
        let world = try SyncWorld(kind)
        let (a, b) = (try world.machine("a"), try world.machine("b"))
        for machine in [a, b] {
            _ = try machine.replica.addBrowser(id: "chrome", name: nil, format: nil, scheme: nil, exec: nil)
        }
        try KeyChangeTests.rule(a, "other.example")
        try world.sync(a)
        if encrypted {
            try KeyChangeTests.shareNewKey(world, from: a, with: [b])
        } else {
            try world.sync(b)
        }
        try KeyChangeTests.rule(a, "zoom.us")
        usleep(5_000) // b's rule is the later one
        _ = try b.replica.addRule(pattern: "zoom.us", browser: "chrome", priority: nil)
        for machine in [a, b, a] { try world.sync(machine) }
        for machine in [a, b] {
            let fields = try machine.replica.conflicts(limit: 10).filter { $0.key == "zoom.us" }.map(\.field)
            #expect(!fields.contains("createdAt") && !fields.contains("origin"), "\(machine.name): \(fields)")
            #expect(fields.contains("browser"), "\(machine.name): \(fields)")
        }
    }

    /// a's priority 10 lost to b's 20, kept on both (encrypted or not).
    static func aValueKeptOnBoth(encrypted: Bool) throws -> (SyncWorld, SimulatedMachine, SimulatedMachine) {
        let (world, a, b) = try KeyChangeTests.twoMachinesWithARule(.sqlite)
        if encrypted { try KeyChangeTests.shareNewKey(world, from: a, with: [b]) }
        try a.replica.addRule(pattern: "shared.example", browser: "firefox", priority: 10)
        try world.sync(a)
        usleep(5_000) // b's edit is the later one
        try b.replica.addRule(pattern: "shared.example", browser: "firefox", priority: 20)
        try world.sync(b)
        try world.sync(a)
        return (world, a, b)
    }

    /// A value kept on both machines is restored on a; b, before pulling
    /// that, sets the field again. The restored value then loses to b's
    /// newer edit (a conflict of its own, on both), and b's first entry is
    /// still marked restored: b cannot write that old value back a second
    /// time over its own newer edit (outside check, F3). Plain and encrypted.
    @Test(arguments: [false, true]) func aRestoredValueOverwrittenBeforeItArrivesIsMarkedToo(
        _ encrypted: Bool
    ) throws {
        let (world, a, b) = try Self.aValueKeptOnBoth(encrypted: encrypted)
        let first = try #require(try b.replica.conflicts(limit: 10).first)
        try a.replica.restore(conflict: try #require(try a.replica.conflicts(limit: 10).first).id)
        try world.sync(a)
        usleep(5_000)
        try b.replica.addRule(pattern: "shared.example", browser: "firefox", priority: 30)
        try world.sync(b)
        try world.sync(a)
        let entries = { (machine: SimulatedMachine) in
            try machine.replica.conflicts(limit: 10).map {
                "\($0.lost.value) \($0.restoredAtMillis == nil ? "open" : "done")"
            }
            .sorted()
        }
        let onB = try entries(b)
        #expect(onB == ["int(10) done", "int(10) open"], "the first marked, the second new: \(onB)")
        #expect(throws: ReplicaError.self) { try b.replica.restore(conflict: first.id) }
        #expect(try b.replica.rule(pattern: "shared.example")?.priority == 30)
        #expect(try a.replica.rule(pattern: "shared.example")?.priority == 30)
    }

    /// A machine that edits a field twice between syncs, while another
    /// machine edited it too: the other machine's value lost (logged); the
    /// machine's own first value, replaced by its own second, is no conflict.
    /// Readable, and encrypted in each sealed format (the lost value the
    /// push answer names is opened from its register, or from its write's box).
    @Test(arguments: StoreKind.allCases, [Wire.SealedFormat?.none, .one, .two])
    func aMachinesOwnEarlierValueIsNoConflict(_ kind: StoreKind, sealed: Wire.SealedFormat?) throws {
        let world = try SyncWorld(kind)
        if sealed == .one { world.protocolVersion = SealedFormat2Tests.older }
        let (a, b) = (try world.machine("a"), try world.machine("b"))
        try KeyChangeTests.rule(a, "qux.com")
        for id in ["edge", "opera", "chrome"] {
            _ = try a.replica.addBrowser(id: id, name: nil, format: nil, scheme: nil, exec: nil)
        }
        try world.sync(a)
        if sealed != nil {
            try KeyChangeTests.shareNewKey(world, from: a, with: [b])
            try world.sync(a)
            #expect(try a.replica.sealedFormat() == sealed && b.replica.sealedFormat() == sealed)
        }
        try world.sync(b)
        _ = try a.replica.addRule(pattern: "qux.com", browser: "chrome", priority: nil)
        try world.sync(a)
        usleep(5_000)
        _ = try b.replica.addRule(pattern: "qux.com", browser: "edge", priority: nil)
        usleep(5_000)
        _ = try b.replica.addRule(pattern: "qux.com", browser: "opera", priority: nil)
        let synced = try world.sync(b)
        let logged = try b.replica.conflicts(limit: 10).map {
            "\($0.field): \($0.lost.value) \($0.lost.stamp.device == b.replica.deviceID ? "b" : "a")"
        }
        #expect(logged == ["browser: string(\"chrome\") a"], "\(logged)")
        #expect(synced.conflicts == 1 && synced.problems.isEmpty, "\(synced.problems)")
        #expect(try SyncWorld.rules(b.replica) == ["qux.com": "opera"])
    }

    /// A write that had seen this machine's value and replaced it is no
    /// conflict here, even when an older concurrent write was merged into
    /// the record after it (the record then carries its writer's vector).
    @Test(arguments: StoreKind.allCases) func aValueReplacedKnowinglyIsNoConflict(_ kind: StoreKind) throws {
        let world = try SyncWorld(kind)
        let (a, b, c) = (try world.machine("a"), try world.machine("b"), try world.machine("c"))
        try KeyChangeTests.rule(a, "zoom.us")
        _ = try a.replica.addBrowser(id: "chrome", name: nil, format: nil, scheme: nil, exec: nil)
        for machine in [a, b, c] { try world.sync(machine) }
        _ = try a.replica.removeRule(pattern: "zoom.us")
        try world.sync(a)
        // c edits without having seen the deletion; b sees it and brings
        // the rule back later; c's older edit reaches the server last.
        _ = try c.replica.addRule(pattern: "zoom.us", browser: "firefox", priority: 7)
        usleep(5_000)
        try world.sync(b)
        _ = try b.replica.addRule(pattern: "zoom.us", browser: "chrome", priority: nil)
        try world.sync(b)
        try world.sync(c)
        #expect(try world.sync(a).conflicts == 0)
        #expect(
            try a.replica.conflicts(limit: 10).isEmpty,
            "a's deletion was seen by b, which brought the rule back on purpose")
        #expect(try SyncWorld.rules(a.replica) == ["zoom.us": "chrome"])
    }

    /// a moves a rule to chrome and syncs; b, which had not seen that,
    /// moves it to brave (then, with `twoEdits`, changes its priority too)
    /// and syncs; c, which pulled both, changes another field and syncs;
    /// then a syncs. chrome lost to a write that had not seen it: b, whose
    /// push overwrote it, keeps it, and so does a where the record says who
    /// wrote each field (sealed format 2: the manifest of b's own box),
    /// though c's later write had seen a's value. Readable, the record
    /// names only its newest writer (c), which had seen it: a keeps nothing
    /// (docs/sync.md, a known limit).
    @Test(arguments: StoreKind.allCases, [Wire.SealedFormat?.none, .two])
    func aValueLostToAWriteThatHadNotSeenItIsKeptWhereItWasWrittenAfterALaterWrite(
        _ kind: StoreKind, sealed: Wire.SealedFormat?
    ) throws {
        for twoEdits in [false, true] {
            let world = try SyncWorld(kind)
            let (a, b, c) = (try world.machine("a"), try world.machine("b"), try world.machine("c"))
            try KeyChangeTests.rule(a, "x.com")
            for id in ["chrome", "brave"] {
                _ = try a.replica.addBrowser(id: id, name: nil, format: nil, scheme: nil, exec: nil)
            }
            try world.sync(a)
            if sealed != nil {
                try KeyChangeTests.shareNewKey(world, from: a, with: [b, c])
                try world.sync(a)
                #expect(try a.replica.sealedFormat() == sealed)
            }
            for machine in [b, c] { try world.sync(machine) }
            _ = try a.replica.addRule(pattern: "x.com", browser: "chrome", priority: nil)
            try world.sync(a)
            usleep(5_000) // b's edit is the later one
            _ = try b.replica.addRule(pattern: "x.com", browser: "brave", priority: nil)
            if twoEdits {
                usleep(5_000)
                _ = try b.replica.addRule(pattern: "x.com", browser: "brave", priority: 3)
            }
            try world.sync(b)
            try world.sync(c)
            _ = try c.replica.addRule(pattern: "x.com", browser: "brave", priority: 3, keepTracking: true)
            try world.sync(c)
            let told = try world.sync(a)
            let lost = "browser: string(\"chrome\") -> string(\"brave\")"
            let logged = { (machine: SimulatedMachine) in
                try machine.replica.conflicts(limit: 10).map { "\($0.field): \($0.lost.value) -> \($0.winner.value)" }
            }
            #expect(try logged(b) == [lost], "two edits: \(twoEdits)")
            #expect(try logged(c).isEmpty)
            if sealed == .two {
                #expect(try logged(a) == [lost] && told.conflicts == 1, "two edits: \(twoEdits)")
            } else {
                #expect(try logged(a).isEmpty && told.conflicts == 0, "the known limit, or a fix: docs/sync.md")
            }
            #expect(try SyncWorld.rules(a.replica) == ["x.com": "brave"])
        }
    }
}
