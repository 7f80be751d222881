import Replica
import SyncCore
import TestSupport
import Testing

/// An honest server restored from a copy raises no ledger alarm
/// (Deploy/SECURITY.md, "A device's own writes, counted"): whatever a device's
/// writes come back with, what counts them comes back too.
@Suite struct LedgerRestoreTests {
    /// A server restored from a copy older than a device's last head: the
    /// device relays its own ledger records as the server confirmed them,
    /// after the records they count, so a machine that pulls those writes
    /// again holds what counts them (a device that never wrote again would
    /// otherwise leave them uncounted for good).
    @Test(arguments: StoreKind.allCases)
    func aDevicesLedgerComesBackWithItsWritesAfterARestore(_ kind: StoreKind) throws {
        let world = try SyncWorld(kind)
        let (a, b) = (try world.machine("a"), try world.machine("b"))
        try LyingServerTests.rules(a, ["one.example"])
        _ = try KeyChangeTests.shareNewKey(world, from: a, with: [b])
        try world.sync(b)
        let copy = try world.backupServer()
        try LyingServerTests.rules(a, ["two.example"])
        try world.sync(a)
        #expect(
            try a.replica.record(.ledger, key: Ledger.Key.head(device: a.replica.deviceID).description) != nil,
            "a confirmed head is kept where it was written")
        try world.restoreServer(copy)
        try world.sync(a)
        try world.sync(b)
        #expect(try SyncWorld.rules(b.replica).keys.sorted() == ["one.example", "two.example"])
        let failures = try b.replica.ledgerFailures()
        #expect(failures.isEmpty, "\(failures)")
    }
}
