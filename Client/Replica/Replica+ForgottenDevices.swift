import Storage
import SyncCore

/// Devices this machine no longer checks (`brsync device forget`,
/// Deploy/SECURITY.md, "What fails, and how it ends"): a device that will
/// never sync again (a lost laptop whose last push was cut short) leaves a
/// ledger that names writes nobody will send, and its failure would stand
/// for good. Forgetting it stops its checks for the ledger held now, and
/// ends its failure. Checks start again by themselves when any of its
/// ledger records arrives newer than what was held then: the device synced
/// again after all, and a server cannot keep it forgotten by writing for it
/// (only the device's key holders seal its ledger records).
public struct ForgottenDevice: Sendable, Equatable {
    public var device: String
    /// The newest stamp among its ledger records held when it was forgotten.
    public var ledgerHigh: HLCTimestamp
    /// When it was forgotten (this machine's clock).
    public var atMillis: Int64
}

extension Replica {
    /// The other devices whose ledger records this replica holds, each with
    /// the newest stamp among them.
    public func heldLedgerDevices() throws -> [String: HLCTimestamp] {
        var high: [String: HLCTimestamp] = [:]
        for (key, state) in try records(.ledger) {
            guard let device = Ledger.Key(key)?.device, device != deviceID else { continue }
            for register in state.fields.values where high[device].map({ register.stamp > $0 }) ?? true {
                high[device] = register.stamp
            }
        }
        return high
    }

    /// Stops checking `device`'s ledger as long as none of its ledger
    /// records held is newer than `ledgerHigh` (what is held now), and ends
    /// its failure, in one transaction.
    @discardableResult
    public func forgetDevice(_ device: String, ledgerHigh: HLCTimestamp, now: Int64) throws -> ForgottenDevice {
        guard device != deviceID else {
            throw ReplicaError.invalidInput("\(device) is this device: its own ledger is not checked here")
        }
        return try transaction {
            try database.run(
                "INSERT OR REPLACE INTO forgotten_devices (device, ledger_high, at) VALUES (?, ?, ?)",
                [.text(device), .text(ledgerHigh.description), .integer(now)])
            try database.run("DELETE FROM ledger_failures WHERE device = ?", [.text(device)])
            try database.run("DELETE FROM ledger_checked WHERE device = ?", [.text(device)])
            return ForgottenDevice(device: device, ledgerHigh: ledgerHigh, atMillis: now)
        }
    }

    /// The devices forgotten here, by device id. A row that does not read
    /// (a damaged file) forgets nothing: that device is checked.
    public func forgottenDevices() throws -> [String: ForgottenDevice] {
        try read {
            let rows = try database.query("SELECT device, ledger_high, at FROM forgotten_devices") { row in
                (row.string(0) ?? "", row.string(1).flatMap(HLCTimestamp.init(text:)), row.int64(2) ?? 0)
            }
            var forgotten: [String: ForgottenDevice] = [:]
            for (device, high, at) in rows {
                guard let high else { continue }
                forgotten[device] = ForgottenDevice(device: device, ledgerHigh: high, atMillis: at)
            }
            return forgotten
        }
    }

    /// Checks `device` again (a newer ledger record of it arrived).
    public func rememberDevice(_ device: String) throws {
        try transaction { try database.run("DELETE FROM forgotten_devices WHERE device = ?", [.text(device)]) }
    }
}
