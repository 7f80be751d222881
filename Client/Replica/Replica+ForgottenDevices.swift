import Storage
import SyncCore

/// Devices this machine no longer checks (`brsync device forget`,
/// Deploy/SECURITY.md, "What fails, and how it ends"): a device that will
/// never sync again (a lost laptop whose last push was cut short) leaves a
/// ledger that names writes nobody will send, and its failure would stand
/// for good. Forgetting it ends the failure and stops its checks for the
/// ledger and the writes held now. Checks start again by themselves when a
/// newer ledger record or a newer write of it arrives: the device synced
/// again after all. A server that shows its new writes and hides its new
/// ledger records therefore gets it checked again, and named.
public struct ForgottenDevice: Sendable, Equatable {
    public var device: String
    /// The newest stamp among its ledger records held when it was forgotten.
    public var ledgerHigh: HLCTimestamp
    /// The newest of its writes held then (``DeviceWrites``), if any.
    public var writesHigh: HLCTimestamp?
    /// The failure forgetting it ended, in words.
    public var what: String
    /// When it was forgotten (this machine's clock).
    public var atMillis: Int64

    public init(device: String, ledgerHigh: HLCTimestamp, writesHigh: HLCTimestamp?, what: String, atMillis: Int64) {
        self.device = device
        self.ledgerHigh = ledgerHigh
        self.writesHigh = writesHigh
        self.what = what
        self.atMillis = atMillis
    }

    /// Whether `device` showed itself since: a ledger record newer than
    /// ``ledgerHigh``, or a write newer than ``writesHigh``.
    public func wroteSince(ledgerHigh ledger: HLCTimestamp?, writesHigh writes: HLCTimestamp?) -> Bool {
        if let ledger, ledger > ledgerHigh { return true }
        guard let writes else { return false }
        return writesHigh.map { writes > $0 } ?? true
    }
}

extension Replica {
    /// The other devices whose ledger records this replica holds, each with
    /// the newest stamp among them.
    public func heldLedgerDevices() throws -> [String: HLCTimestamp] {
        Self.ledgerHighs(try ledgerRows(), except: deviceID)
    }

    /// Of ledger records `held`, each device's newest stamp (but `except`'s).
    public static func ledgerHighs(_ held: [LedgerRow], except: String) -> [String: HLCTimestamp] {
        var high: [String: HLCTimestamp] = [:]
        for row in held {
            guard let newest = row.fields.newest, let device = Ledger.Key(row.key)?.device, device != except else {
                continue
            }
            if high[device].map({ newest > $0 }) ?? true { high[device] = newest }
        }
        return high
    }

    /// Stops checking `device`, whose check fails here, as long as neither a
    /// ledger record newer than `ledgerHigh` nor a write newer than the
    /// newest of its held now arrives; ends its failure, in one transaction.
    /// - Throws: ``ReplicaError/invalidInput(_:)`` for this device, or one
    ///   whose check does not fail here (nothing to forget).
    @discardableResult
    public func forgetDevice(_ device: String, ledgerHigh: HLCTimestamp, now: Int64) throws -> ForgottenDevice {
        guard device != deviceID else {
            throw ReplicaError.invalidInput("\(device) is this device: its own ledger is not checked here")
        }
        return try transaction {
            guard let failure = try ledgerFailures(now: now).first(where: { $0.device == device }) else {
                throw ReplicaError.invalidInput(
                    "the check of device \(device) does not fail here: there is nothing to forget (nothing changed)")
            }
            let writes = try deviceWrites().filter { $0.device == device }.map(\.newest).max()
            let forgotten = ForgottenDevice(
                device: device, ledgerHigh: ledgerHigh, writesHigh: writes, what: String(failure.what.prefix(1_000)),
                atMillis: now)
            try database.run(
                "INSERT OR REPLACE INTO forgotten_devices (device, ledger_high, writes_high, what, at) VALUES (?, ?, ?, ?, ?)",
                [
                    .text(device), .text(ledgerHigh.description), writes.map { .text($0.description) } ?? .null,
                    .text(forgotten.what), .integer(now),
                ])
            try database.run("DELETE FROM ledger_failures WHERE device = ?", [.text(device)])
            try database.run("DELETE FROM ledger_unmet WHERE device = ?", [.text(device)])
            try database.run("DELETE FROM ledger_checked WHERE device = ?", [.text(device)])
            return forgotten
        }
    }

    /// The devices forgotten here, by device id. A row that does not read
    /// (a damaged file) forgets nothing: that device is checked.
    public func forgottenDevices() throws -> [String: ForgottenDevice] {
        try read {
            let rows = try database.query("SELECT device, ledger_high, writes_high, what, at FROM forgotten_devices") {
                row -> ForgottenDevice? in
                guard let device = row.string(0), let high = row.string(1).flatMap(HLCTimestamp.init(text:)) else {
                    return nil
                }
                let writes = row.string(2).map(HLCTimestamp.init(text:))
                guard writes != .some(nil) else { return nil }
                return ForgottenDevice(
                    device: device, ledgerHigh: high, writesHigh: writes ?? nil, what: row.string(3) ?? "",
                    atMillis: row.int64(4) ?? 0)
            }
            return Dictionary(rows.compactMap { $0 }.map { ($0.device, $0) }, uniquingKeysWith: { first, _ in first })
        }
    }

    /// Checks `device` again (a newer ledger record or write of it arrived).
    public func rememberDevice(_ device: String) throws {
        try transaction { try database.run("DELETE FROM forgotten_devices WHERE device = ?", [.text(device)]) }
    }
}
