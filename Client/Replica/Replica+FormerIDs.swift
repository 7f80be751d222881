import SyncCore

/// The ids this replica went by before its current one, under the current
/// key (Deploy/SECURITY.md, "Writes every holder lost"): a home restored
/// from an older copy, or copied, takes a new id, and may later withdraw
/// writes of the old one that it finds nowhere. Each keeps a slot of its
/// own (``Ledger/Key/withdrawal(device:slot:)``); at most
/// ``Ledger/maxFormerIDs``, the oldest giving way. A key change forgets them
/// with the ledgers.
extension Replica {
    static let formerIDsMeta = "former_ids"

    /// The earlier ids, oldest first, each with its withdrawal slot.
    public func formerDeviceIDs() throws -> [(id: String, slot: Int)] {
        guard let text = try meta(Self.formerIDsMeta) else { return [] }
        return text.split(separator: "\n").compactMap { line in
            let parts = line.split(separator: " ", maxSplits: 1)
            guard parts.count == 2, let slot = Int(parts[0]), slot >= 0, slot < Ledger.maxFormerIDs else { return nil }
            return (String(parts[1]), slot)
        }
    }

    /// Notes `old` as an id this replica went by (inside the caller's
    /// transaction): the slot after the newest one's, in turn.
    func noteFormerID(_ old: String) throws {
        var ids = try formerDeviceIDs().filter { $0.id != old }
        let slot = ids.last.map { ($0.slot + 1) % Ledger.maxFormerIDs } ?? 0
        ids.removeAll { $0.slot == slot }
        ids.append((old, slot))
        // A slot taken by another id starts without the last one's setbacks.
        try forgetWithdrawalSetbacks(slot: slot)
        try setMeta(Self.formerIDsMeta, ids.map { "\($0.slot) \($0.id)" }.joined(separator: "\n"))
    }

    /// When sending this machine's withdrawal in `slot` last met `setback`
    /// (this machine's clock), nil for never: it waits before the next try
    /// (``WithdrawalSetback``).
    public func withdrawalSetback(_ setback: WithdrawalSetback, slot: Int) throws -> Int64? {
        Int64(try meta(setback.metaKey(slot: slot)) ?? "")
    }

    /// Forgets every slot's setbacks (the former ids are forgotten with them).
    func forgetWithdrawalSetbacks() throws {
        for slot in 0..<Ledger.maxFormerIDs { try forgetWithdrawalSetbacks(slot: slot) }
    }

    /// Forgets `slot`'s setbacks, of every kind (its withdrawal was taken, or the slot has a new id).
    public func forgetWithdrawalSetbacks(slot: Int) throws {
        for setback in WithdrawalSetback.allCases { try noteWithdrawalSetback(setback, slot: slot, at: nil) }
    }

    /// Notes that sending this machine's withdrawal in `slot` met `setback`
    /// now (nil: it was taken, or tried again).
    public func noteWithdrawalSetback(_ setback: WithdrawalSetback, slot: Int, at millis: Int64?) throws {
        try setMeta(setback.metaKey(slot: slot), millis.map(String.init))
    }

    /// The devices whose withdrawals (``Ledger/Key/withdrawal(device:slot:)``)
    /// this replica holds, each with how many, by id: `brsync status` names
    /// them, since a withdrawal ends checks (only a key holder can write one).
    public func withdrawingDevices() throws -> [(device: String, count: Int)] {
        var counts: [String: Int] = [:]
        for row in try ledgerRows() {
            if case .withdrawal(let device, _)? = Ledger.Key(row.key) { counts[device, default: 0] += 1 }
        }
        return counts.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
    }

    /// The writes this replica made itself under `device`: each change its
    /// log keeps under that id (pushed changes keep their device after a
    /// fork), as its record and the stamps of its fields.
    public func writesLoggedHere(
        device: String
    ) throws -> [(
        collection: RecordCollection, key: String, stamps: [HLCTimestamp]
    )] {
        try read {
            try database.query(
                "SELECT collection, key, fields FROM changes WHERE device = ? AND kind = 'local'", [.text(device)]
            ) { row -> (collection: RecordCollection, key: String, stamps: [HLCTimestamp])? in
                guard let name = row.string(0), let collection = RecordCollection(rawValue: name),
                    let key = row.string(1)
                else { return nil }
                let state = try RecordCoding.decodeState(fields: row.string(2) ?? "{}", versions: "{}")
                return (collection, key, state.fields.values.map(\.stamp))
            }.compactMap { $0 }
        }
    }
}

extension Replica {
    static let withdrawalsReadMeta = "withdrawals_read"
    static let withdrawalsAskedMeta = "withdrawals_asked_at"

    /// Whether pulls may have passed withdrawals this replica was never
    /// sent: a brsync older than ``Wire/withdrawalProtocol`` pulled it (the
    /// server sent it none, and its cursor went past them). Replica schema
    /// 29 notes a replica that had pulled nothing as having them all; one
    /// that had pulled is noted once it asked.
    public func withdrawalsMayBeMissed() throws -> Bool { try meta(Self.withdrawalsReadMeta) == nil }

    /// Notes that this replica has every withdrawal its pulls passed.
    public func noteWithdrawalsRead() throws {
        try transaction {
            try setMeta(Self.withdrawalsReadMeta, "1")
            try setMeta(Self.withdrawalsAskedMeta, nil)
        }
    }

    /// When this replica last asked for the withdrawals it may lack (this
    /// machine's clock), nil for never.
    public func withdrawalsAskedAt() throws -> Int64? { Int64(try meta(Self.withdrawalsAskedMeta) ?? "") }

    /// Notes that this replica asks for the withdrawals it may lack now.
    public func noteWithdrawalsAsked(at millis: Int64) throws {
        try setMeta(Self.withdrawalsAskedMeta, String(millis))
    }
}

/// What stopped this machine's withdrawal from reaching the server, which
/// decides how long the next try waits.
public enum WithdrawalSetback: String, Sendable, CaseIterable {
    /// The server answered no (an older server, which knows no withdrawal).
    case refused
    /// No answer came (a dropped connection, an answer that did not read).
    case failed

    func metaKey(slot: Int) -> String { "withdrawal_\(rawValue)_\(slot)" }
}
