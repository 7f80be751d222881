/// The review of what a taken batch's answer reports, without I/O: each
/// conflict and refusal is checked against the batch sent before any of it
/// is believed (a server could make them up, and a made-up conflict would be
/// logged, and restorable, here).
extension PushMachine {
    /// One thing the driver does with what an answer reported, in the
    /// answer's order.
    public enum Finding: Sendable, Equatable {
        /// A value of another device that this push overwrote without having
        /// seen it: kept as a conflict (`brsync log --conflicts`).
        case conflict(LostField)
        /// What the user is told: a report not believed, a change refused,
        /// losses the server did not list.
        case problem(String)
    }

    /// What an answer's reports come to (``review(_:sent:device:shown:replacedStamp:)``).
    public struct Review: Sendable, Equatable {
        public var findings: [Finding] = []
        /// The batch's changes the server refused (never applied), by
        /// number, with the server's reason.
        public var refused: [Int64: String] = [:]

        public init(findings: [Finding] = [], refused: [Int64: String] = [:]) {
            self.findings = findings
            self.refused = refused
        }
    }

    /// Checks the conflicts and refusals `response` reports against the
    /// batch sent: each must name a change of the batch under its key
    /// (sealed: the hidden key sent); one of a conflict's two values must be
    /// the register the change sent, and its winner must win the merge over
    /// the value it beat; a refusal must be of a change the answer
    /// acknowledges. A value this device replaced by its own later edit, or
    /// another device's value this device had seen when it edited, is no
    /// conflict.
    /// - Parameters:
    ///   - sent: the batch as sent, in change-number order.
    ///   - device: this replica's device id.
    ///   - shown: a record's key as the user knows it (the readable key of a hidden one).
    ///   - replacedStamp: the stamp change `sequence` replaced in `field`,
    ///     as this replica's change log keeps it (nil when it replaced none).
    public static func review(
        _ response: PushResponse, sent: [ChangeRecord], device: String,
        shown: (RecordCollection, String) -> String,
        replacedStamp: (_ sequence: Int64, _ field: String) throws -> HLCTimestamp?
    ) rethrows -> Review {
        var review = Review()
        /// The change of this batch the answer names, under its key.
        func sentChange(_ sequence: Int64, _ collection: RecordCollection, _ key: String) -> ChangeRecord? {
            guard let first = sent.first, sequence >= first.sequence, sequence - first.sequence < sent.count else {
                return nil
            }
            let change = sent[Int(sequence - first.sequence)]
            return change.collection == collection && change.key == key ? change : nil
        }
        func isSent(_ sequence: Int64, _ collection: RecordCollection, _ key: String) -> Bool {
            sentChange(sequence, collection, key) != nil
        }
        for lost in response.lost {
            guard let change = sentChange(lost.sequence, lost.collection, lost.key) else {
                review.findings.append(
                    .problem("the server reported a conflict on a record this push did not change: not kept"))
                continue
            }
            // A "winner" the merge would not have chosen is no conflict: the server made it up.
            guard lost.winner.wins(over: lost.lost) else {
                review.findings.append(
                    .problem(
                        "the server reported a conflict on '\(shown(lost.collection, lost.key))' field \"\(lost.field)\" "
                            + "whose winner is not newer than the value it beat: not kept"))
                continue
            }
            // One side is this push's own register (a pushed value that lost,
            // or one that overwrote): the server cannot name two others.
            guard let pushed = change.state.fields[lost.field], pushed == lost.winner || pushed == lost.lost else {
                review.findings.append(
                    .problem(
                        "the server reported a conflict on '\(shown(lost.collection, lost.key))' field \"\(lost.field)\" "
                            + "of which neither value is what this push sent: not kept"))
                continue
            }
            // This device's own value replaced by its own later edit (two
            // edits of a field between syncs) is no conflict.
            if lost.lost.stamp.device == device && lost.winner.stamp.device == device { continue }
            // Another device's value this push overwrote is a conflict only
            // if this device had not seen it when it edited.
            if lost.lost.stamp.device != device, try replacedStamp(lost.sequence, lost.field) == lost.lost.stamp {
                continue
            }
            review.findings.append(.conflict(lost))
        }
        // A refusal names a change of this batch the answer acknowledges.
        // A refused change was never applied, and the log keeps why.
        for rejected in response.rejected {
            guard isSent(rejected.sequence, rejected.collection, rejected.key),
                rejected.sequence <= response.acknowledged
            else {
                review.findings.append(
                    .problem(
                        "the server named as refused a change this push did not send (\(rejected.sequence)): not believed"
                    ))
                continue
            }
            review.refused[rejected.sequence] = rejected.reason
            review.findings.append(
                .problem(
                    "the server did not take \(rejected.collection.rawValue) '\(shown(rejected.collection, rejected.key))': \(rejected.reason)"
                ))
        }
        if response.lostOmitted > sent.count * (Wire.maxFields + Wire.maxSealedExtraFields) {
            review.findings.append(
                .problem(
                    "the server counts \(response.lostOmitted) unlisted values lost for a push of \(sent.count) change(s), "
                        + "more than they hold: not believed"))
        } else if response.lostOmitted > 0 {
            review.findings.append(
                .problem("\(response.lostOmitted) more value(s) lost to newer ones; the server did not list them"))
        }
        return review
    }
}
