import Replica
import SyncCore

/// What the sync client reads from and writes to the replica: its sync
/// facts, the change log as the server sees it, and the writes a sync
/// makes. Nothing else of the replica (rules, browsers, settings) is the
/// client's business; ``Replica`` is the one implementation.
public protocol SyncReplica: AnyObject {
    /// The folder holding the replica (its lock and key files live there).
    var home: String { get }
    var deviceID: String { get }
    func transaction<T>(_ body: () throws -> T) throws -> T

    // MARK: Facts
    func syncState() throws -> SyncState
    func encryptionState() throws -> Replica.EncryptionState
    func isReconciling() throws -> Bool
    func keyAccount() throws -> String?
    func replacedKeyIDs() throws -> Set<String>
    func keyCertificates() throws -> [KeyCertificate]
    /// The server's wall clock as this machine last learned it (ms).
    func serverTime() throws -> Int64
    /// The furthest wall time (ms) a stamp the server holds can have (``Replica/stampCeiling(ahead:)``).
    func stampCeiling(ahead: Int64) throws -> Int64

    // MARK: The timeline (account, epoch, device id, encryption)
    func takeNewDeviceIDIfCopied() throws -> String?
    func forkDeviceID() throws -> String
    func checkAccount(_ account: String, epoch: String?) throws -> Bool
    func setKeyAccount(_ account: String) throws
    func startNewEpochIfFirst(_ epoch: String) throws
    func startNewEpoch(_ epoch: String) throws
    func beginEncryptedSync(keyID: String, vouchingFor retired: String?) throws -> String
    func noteKeyMadeHere(_ keyID: String) throws
    func wasMovedForward(from keyID: String) throws -> Bool
    @discardableResult func recordMovedForward(from keyID: String) throws -> String
    func clearVouch() throws
    func endEncryptedSync() throws -> String
    func noteEncryptionReset() throws
    func noteAccountEncrypted(account: String?) throws
    func noteKeyRetired(_ keyID: String) throws
    func clearEncryptionReset() throws
    func recordReplacedKeyIDs(_ ids: [String]) throws
    func recordKeyCertificates(_ certificates: [KeyCertificate]) throws
    func requireFullRelay() throws
    func finishFullRelay() throws

    // MARK: Pushing
    func unpushedCount() throws -> Int
    func replacedStamps(ofChange sequence: Int64) throws -> [String: HLCTimestamp]
    func unpushedChanges(after sequence: Int64, limit: Int) throws -> [ChangeRecord]
    func storedChain(_ sequence: Int64) throws -> Replica.StoredChain
    func keepChains(_ chains: [(sequence: Int64, chain: String)]) throws
    func pinSealedFormat(_ format: Wire.SealedFormat, of sequences: [Int64]) throws
    func sealedFormat() throws -> Wire.SealedFormat
    func keptBoxes(_ collection: RecordCollection, key: String) throws -> [StampedValue]
    func ownWrites(_ collection: RecordCollection, key: String) throws -> [ChangeRecord]
    func unweighedBoxes(limit: Int) throws -> [Replica.KeptBox]
    func weighBoxes(_ weights: [(box: Replica.KeptBox, weight: Int?)]) throws
    func noteSealedFormat(_ format: Wire.SealedFormat) throws
    func markPushed(through sequence: Int64) throws
    func noteRefusals(first: Int64, last: Int64, _ refused: [Int64: String]) throws
    func rewindPushed(to sequence: Int64) throws
    func restampUnpushed() throws -> Int
    func publishDeviceName() throws -> Bool
    func ledgerBookRows(device: String) throws -> (state: [UInt8], entries: [(bytes: [UInt8], changed: Bool)])?
    func keepLedgerBook(
        device: String, state: [UInt8], entries: [(tag: UInt64, bytes: [UInt8], changed: Bool)], confirmed: Bool
    ) throws
    func keepOwnLedgerRecords(_ records: [ChangeRecord]) throws
    func ledgerStamp(ceiling: Int64?) throws -> HLCTimestamp
    func ownLedgerStampHigh() throws -> HLCTimestamp?
    /// The stamps of this device's last ledger requests the server refused.
    func abandonedLedgerStamps() throws -> [Ledger.Stamp]
    func noteAbandonedLedgerStamp(_ stamp: Ledger.Stamp) throws
    func forgetAbandonedLedgerStamps(through stamp: Ledger.Stamp) throws

    // MARK: Whole records (relays)
    func allRecords(afterCollection collection: RecordCollection?, key: String, limit: Int) throws -> [ChangeRecord]
    func wholeRecords(_ keys: [(RecordCollection, String)]) throws -> [ChangeRecord]
    func undeliveredRecords() throws -> [ChangeRecord]
    func markUndelivered(_ keys: [(RecordCollection, String)], _ undelivered: Bool) throws
    func onceAcknowledgedRecords() throws -> [ChangeRecord]
    func recordsStamped(after wallMillis: Int64) throws -> [ChangeRecord]
    func unacknowledgedOwnStamps() throws -> Set<HLCTimestamp>
    func raiseRestampFloor(to stamp: HLCTimestamp) throws

    // MARK: Pulling
    func applyPulled(
        _ changes: [ChangeRecord], cursor: Int64, epoch: String, aside: [PulledAside],
        prepared: [Replica.PreparedRow]?, skipped: inout [String]
    ) throws -> Replica.AppliedPage
    func pulledAsideDue(every milliseconds: Int64, limit: Int) throws -> [PulledAside]
    func noteAskedAgain(_ entries: [PulledAside]) throws
    func setAsideUnvouched(
        reference: [String: RecordState], why: (_ writer: String) -> String
    ) throws -> [RemovedRecord]
    func setAsideWhatIsNotHeld(
        _ changes: [ChangeRecord], why: (ChangeRecord) -> String
    ) throws -> (held: [ChangeRecord], setAside: [RemovedRecord])
    func deviceNames() throws -> DeviceNames
    /// Every ledger record held, as the checks read them.
    func ledgerRows() throws -> [LedgerRow]
    @discardableResult func tagRecords(keyID: String, tag: (RecordCollection, String) -> UInt64) throws -> Int
    func tagAndReadRegisters(
        keyID: String, tag: (RecordCollection, String) -> UInt64, tagOfFiledKey: (String) -> UInt64?
    ) throws -> [UInt64: [String: HLCTimestamp]]
    func keepStoredStamps(keyID: String?) throws
    func dropStoredStamps()
    func startCheckpointsAside()
    func endCheckpointsAside()
    func registers(tagged tags: Set<UInt64>) throws -> [UInt64: [String: HLCTimestamp]]
    func ledgerChecked() throws -> [String: Replica.LedgerChecked]
    func ledgerCheckMustBeWhole(now: Int64) throws -> Bool
    func records(tagged tags: Set<UInt64>) throws -> [UInt64: [(collection: RecordCollection, key: String)]]
    func pulledAside(limit: Int) throws -> [PulledAside]
    func deviceWrites() throws -> [DeviceWrites]
    /// The stamp of this device's latest change, nil before its first.
    func lastOwnChangeStamp() throws -> HLCTimestamp?
    func writesFromElsewhere() throws -> [WriteFromElsewhere]
    func forgetWritesFromElsewhere(_ writes: [WriteFromElsewhere]) throws
    @discardableResult func noteLedgerChecks(
        _ results: [String: String?], checked: [String: Replica.LedgerChecked], whole: Bool,
        unmet: [String: [LedgerUnmet]], now: Int64
    ) throws -> [LedgerFailure]
    func ledgerUnmet() throws -> [String: [LedgerUnmet]]
    func ledgerFailures(now: Int64?) throws -> [LedgerFailure]
    func forgottenDevices() throws -> [String: ForgottenDevice]
    /// The ids this replica went by before its current one, with their withdrawal slots.
    func formerDeviceIDs() throws -> [(id: String, slot: Int)]
    /// When sending this machine's withdrawal in a slot last met a setback, nil for never.
    func withdrawalSetback(_ setback: WithdrawalSetback, slot: Int) throws -> Int64?
    func noteWithdrawalSetback(_ setback: WithdrawalSetback, slot: Int, at millis: Int64?) throws
    func forgetWithdrawalSetbacks(slot: Int) throws
    /// Whether an older brsync's pulls may have passed withdrawals never sent; noted once asked for.
    func withdrawalsMayBeMissed() throws -> Bool
    func noteWithdrawalsRead() throws
    func withdrawalsAskedAt() throws -> Int64?
    func noteWithdrawalsAsked(at millis: Int64) throws
    /// Each other device whose ledger is held here, with its newest stamp.
    func heldLedgerDevices() throws -> [String: HLCTimestamp]
    /// The writes this replica made itself under `device`: records and their fields' stamps.
    func writesLoggedHere(
        device: String
    ) throws -> [(collection: RecordCollection, key: String, stamps: [HLCTimestamp])]
    func ledgerFailuresEnded(now: Int64?) throws -> [EndedLedgerFailure]
    func rememberDevice(_ device: String) throws
    @discardableResult func noteOwnLedgerNotTaken(_ why: String, now: Int64) throws -> OwnLedgerNotTaken
    func noteOwnLedgerTaken() throws
    func ledgerChecksDue() throws -> Bool
    func record(_ collection: RecordCollection, key: String) throws -> RecordState?
    /// This machine's clock (ms): how long a failure has been held.
    var currentMillis: Int64 { get }
    func beginReconcile() throws
    func finishReconcile(keep: Bool) throws -> Replica.ReconcileOutcome
    func recordConflict(
        collection: RecordCollection, key: String, field: String, lost: StampedValue, winner: StampedValue
    ) throws -> Bool

    // MARK: Bookkeeping
    func observeServerTime(_ serverMillis: Int64, ageMilliseconds: Int64) throws
    func persistServerTime() throws
    func recordSync() throws
    func recordSyncProblem(_ problem: String?, code: String?, in part: SyncPart) throws
    func clearSyncProblems(after part: SyncPart) throws
}

extension Replica: SyncReplica {}
