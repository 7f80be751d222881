import SystemServices

// The caches and gates a store keeps in this process beside its data (the
// value types it reads and writes are in Store).

/// What this process last wrote of each device's `acknowledged_cursor` and
/// `last_seen`: concurrent pulls of one device then write it once, not all
/// (only to spare writes; the writes themselves only raise).
public final class Bookkeeping: Sendable {
    private struct State {
        var acknowledged: [Int64: Int64] = [:]
        var lastSeen: [Int64: Int64] = [:]
        /// The protocol written for a device, with the one it was read with
        /// then and when: concurrent pulls of a device read alike and write
        /// once. Not trusted past a minute, nor once a read shows another
        /// protocol (written elsewhere, or capped when its account turned
        /// encrypted), so a value the store changed is written again.
        var protocols: [Int64: (read: Int, wrote: Int, at: Int64)] = [:]
    }

    private let state = Locked(State())

    public init() {}

    /// Whether a pull of `device` at `cursor`, in protocol `clientProtocol`,
    /// should write its acknowledged cursor, last-seen time and protocol,
    /// claiming the write: only when something moved (a no-change pull
    /// stays a pure read), once per device and value, and last-seen at most
    /// once a minute.
    package func shouldWrite(device: Store.Device, cursor: Int64, now: Int64, protocol clientProtocol: Int) -> Bool {
        writes(device: device, cursor: cursor, now: now, protocol: clientProtocol, claim: true)
    }

    /// The protocol `device` holds as this process knows it at `now`: what
    /// it wrote for it within the last minute since `device` was read (a
    /// cached read can be older than this process's own write), else what
    /// `device` was read with.
    package func lastProtocol(of device: Store.Device, now: Int64) -> Int {
        state.withLock { Self.trusted($0.protocols[device.id], device: device, now: now)?.wrote }
            ?? device.clientProtocol
    }

    /// `known` while it still says what `device` holds: written since
    /// `device` was read with the protocol it was written over, within the
    /// last minute.
    private static func trusted(
        _ known: (read: Int, wrote: Int, at: Int64)?, device: Store.Device, now: Int64
    ) -> (read: Int, wrote: Int, at: Int64)? {
        guard let known, known.read == device.clientProtocol, now - known.at < 60_000 else { return nil }
        return known
    }

    /// Whether ``shouldWrite(device:cursor:now:protocol:)`` would write, claiming nothing.
    package func needsWrite(device: Store.Device, cursor: Int64, now: Int64, protocol clientProtocol: Int) -> Bool {
        writes(device: device, cursor: cursor, now: now, protocol: clientProtocol, claim: false)
    }

    private func writes(
        device: Store.Device, cursor: Int64, now: Int64, protocol clientProtocol: Int, claim: Bool
    )
        -> Bool
    {
        let mayWrite =
            cursor > device.acknowledgedCursor || now - (device.lastSeenMillis ?? 0) > 60_000
            || clientProtocol != device.clientProtocol
        return mayWrite
            && state.withLock { state -> Bool in
                var write = false
                if cursor > max(device.acknowledgedCursor, state.acknowledged[device.id] ?? 0) {
                    if claim { state.acknowledged[device.id] = cursor }
                    write = true
                }
                if now - (device.lastSeenMillis ?? 0) > 60_000 && now - (state.lastSeen[device.id] ?? 0) > 60_000 {
                    if claim { state.lastSeen[device.id] = now }
                    write = true
                }
                let known = state.protocols[device.id]
                let written = Self.trusted(known, device: device, now: now)?.wrote == clientProtocol
                if clientProtocol != device.clientProtocol && !written {
                    if claim { state.protocols[device.id] = (device.clientProtocol, clientProtocol, now) }
                    write = true
                }
                return write
            }
    }
}

/// Devices this process authenticated lately, by token hash, with the
/// watch hub's generation taken before they were read: a no-change pull
/// (the common one: every machine, every few minutes) is answered from
/// memory while nothing was heard of the account since
/// (``WatchHub/changed(account:since:)``: every push, key change,
/// revocation and token change of this process, and with PostgreSQL
/// every other brsyncd's `NOTIFY`) and for at most ``lifetimeMillis``,
/// and while the store shows no write another process could have made
/// (``StoreDialect/commitState()``: an administration command on
/// an SQLite store while brsyncd serves it). The lifetime bounds what
/// slips past both.
public final class TokenCache: Sendable {
    package struct Entry: Sendable {
        package let device: Store.Device
        package let storedHash: [UInt8]
        package let generation: UInt64
        /// ``StoreDialect/commitState()`` before the device was read.
        package let outsideWrites: CommitState?
        let atMillis: Int64

        package init(
            device: Store.Device, storedHash: [UInt8], generation: UInt64, outsideWrites: CommitState?, atMillis: Int64
        ) {
            self.device = device
            self.storedHash = storedHash
            self.generation = generation
            self.outsideWrites = outsideWrites
            self.atMillis = atMillis
        }
    }

    package static let lifetimeMillis: Int64 = 5_000
    /// For a watch's arrival (each machine's comes every minute or so):
    /// past its longest wait, so a remembered device serves the next one.
    /// A watch's answer carries no data, only "look" or "no change".
    package static let watchLifetimeMillis: Int64 = 65_000
    /// Tokens remembered at most (about 1 KB each); past it, forgotten all at once.
    let maxEntries: Int
    private let entries = Locked<[[UInt8]: Entry]>([:])

    public init(maxEntries: Int = 100_000) { self.maxEntries = maxEntries }

    package func entry(_ hash: [UInt8], nowMillis: Int64, lifetimeMillis: Int64 = lifetimeMillis) -> Entry? {
        entries.withLock { entries in
            guard let entry = entries[hash], nowMillis - entry.atMillis < lifetimeMillis,
                nowMillis >= entry.atMillis
            else { return nil }
            return entry
        }
    }

    package func keep(_ hash: [UInt8], _ entry: Entry) {
        entries.withLock { entries in
            if entries.count >= maxEntries, entries[hash] == nil { entries.removeAll(keepingCapacity: true) }
            entries[hash] = entry
        }
    }
}

/// The epoch as this process last read or started it, shared by a
/// store's requests (and, for PostgreSQL, its pool's identity check).
public final class EpochCache: Sendable {
    private let value: Locked<String>
    public init(_ epoch: String) { value = Locked(epoch) }
    public var current: String { value.withLock { $0 } }
    public func set(_ epoch: String) { value.withLock { $0 = epoch } }
}

/// Who starts a readable account's new timeline on a pull or push from
/// the future (a rollback: its cursor past the account's latest record,
/// or its device's changes further than the store has them): any device
/// of a readable account may, at most once per ``interval`` per account
/// in this process, and each start is logged with the device's name.
/// (An encrypted account's timeline starts only on a key holder's
/// signed request; a join code's secret never starts one.)
public final class TimelineGate: Sendable {
    /// The least time between two starts of one account's timeline
    /// (``ServerConfiguration/timelineStartIntervalMilliseconds``).
    private let interval = Locked<Int64>(60_000)
    private let lastStart = Locked<[Int64: Int64]>([:])
    private let logger = Locked<(@Sendable (String) -> Void)?>(nil)

    public init() {}

    /// Sets the least time between two starts, and where starts are logged (brsyncd's log).
    public func configure(intervalMilliseconds: Int64, log: @escaping @Sendable (String) -> Void) {
        interval.withLock { $0 = intervalMilliseconds }
        logger.withLock { $0 = log }
    }

    /// Lets `device` start its account's timeline now, or throws.
    /// - Throws: ``ServerError/timelineLimited(retryAfterSeconds:)`` within ``interval`` of the last start.
    package func admit(_ device: Store.Device, because reason: String) throws(ServerError) {
        let now = SystemServices.Clock.monotonicMillis()
        let interval = self.interval.withLock { $0 }
        let waited: Int64? = lastStart.withLock { starts in
            if let last = starts[device.accountID], now - last < interval { return interval - (now - last) }
            starts[device.accountID] = now
            return nil
        }
        if let waited { throw .timelineLimited(retryAfterSeconds: Int((waited + 999) / 1000)) }
        logger.withLock { $0 }?(
            "account \(device.accountID): device '\(device.name)' started a new timeline for it (\(reason))")
    }
}
