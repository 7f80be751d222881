import BrsyncServer
import Cryptography
import Foundation
import HTTP
import Logging
import Model
import Net
import Replica
import SyncClient
import SyncCore
import Synchronization
import TestSupport
import Testing

extension Run {
    /// The server's records, opened with the account's key when the run is
    /// encrypted (every record must open: nothing else wrote to the account).
    func serverRecords() throws -> [ChangeRecord] {
        let records = try store.records(account: "alice")
        guard accountKey != nil, let key = serverKey() else { return records }
        let cipher = RecordCipher(key)
        // A record with no field (made by a change whose fields all left it) has nothing to open.
        return try records.filter { !$0.state.fields.isEmpty }.map { record in
            do { return try cipher.open(record) } catch {
                // What each side holds of it: the stamps say who wrote what, and when.
                if ProcessInfo.processInfo.environment["BRSYNC_MODEL_DEBUG"] != nil {
                    print(
                        "DEBUG not opened: server \(record.key) seq \(record.sequence) versions \(record.state.versions.counters) fields \(record.state.fields.map { "\($0.key)@\($0.value.stamp)" }.sorted())"
                    )
                    for machine in machines + gone {
                        let held = try? machine.replica.record(
                            record.collection, key: (error as? RecordCipherError)?.shownKey ?? "")
                        print(
                            "DEBUG not opened: \(machine.name)/\(machine.replica.deviceID): versions \(held?.versions.counters ?? [:]) fields \(held?.fields.map { "\($0.key)@\($0.value.stamp)" }.sorted() ?? [])"
                        )
                    }
                }
                Issue.record(
                    "the server's record \(record.collection.rawValue)/\(record.key) does not open: \(error), seed \(seed)"
                )
                throw error
            }
        }
    }

    /// The oracle, after the final syncs (see ``ConvergenceTests``).
    func check() throws {
        for machine in machines + gone { collectLog(machine.replica) }
        let serverRecords = try self.serverRecords()
        // Every device id the run's edits were stamped with, and every id a
        // machine of it had.
        var knownDevices = Set(allEdits.map(\.stamp.device))
        for machine in machines + gone {
            knownDevices.insert(machine.replica.deviceID)
            for former in (try? machine.replica.formerDeviceIDs()) ?? [] { knownDevices.insert(former.id) }
        }
        var serverState: [String: [String: StampedValue]] = [:]
        for change in serverRecords { serverState["\(change.collection.rawValue)/\(change.key)"] = change.state.fields }
        // Every value traced to an edit (a ledger record is no one's edit:
        // its values are what the ledger checks read).
        for (record, fields) in serverState where !record.hasPrefix("\(RecordCollection.ledger.rawValue)/") {
            for (field, register) in fields {
                let edit = Edit(record: record, field: field, stamp: register.stamp, value: register.value)
                // An edit re-stamped twice within one sync leaves its middle
                // stamp in no log the run reads (a fork re-stamps it, a relay
                // takes the record up at that stamp, a clock refusal re-stamps
                // it lower): the same value of the field, by the same device.
                if !allEdits.contains(edit),
                    allEdits.contains(where: {
                        $0.record == record && $0.field == field && $0.value == register.value
                            && $0.stamp.device == register.stamp.device
                    })
                {
                    note("an edit's value held at a stamp it had only within one sync")
                    continue
                }
                // A change moved to a new id keeps the time it was made: a
                // copy of it that reached the server from a state of the home
                // no log kept (a key change killed after the server took its
                // relay, a home put back from an older copy that then made
                // the same change again) may hold the field with the same
                // value, under another id of the run, and not be overwritten
                // by the later copy (now older by its time, not newer by the
                // clock of its sending).
                if !allEdits.contains(edit), knownDevices.contains(register.stamp.device),
                    allEdits.contains(where: {
                        $0.record == record && $0.field == field && $0.value == register.value
                    })
                {
                    note("an edit's value held under another id of its machine")
                    continue
                }
                if !allEdits.contains(edit), ProcessInfo.processInfo.environment["BRSYNC_MODEL_DEBUG"] != nil {
                    let near = allEdits.filter { $0.record == record && $0.field == field }.sorted {
                        $0.stamp < $1.stamp
                    }
                    print(
                        "DEBUG \(record).\(field) server \(register.stamp) \(register.value.jsonText.prefix(20)); edits: \(near.map { "\($0.stamp)=\($0.value.jsonText.prefix(10))" })"
                    )
                    for machine in machines + gone {
                        print(
                            "DEBUG machine \(machine.name) device \(machine.replica.deviceID) home \(machine.replica.home)"
                        )
                    }
                }
                #expect(
                    allEdits.contains(edit),
                    "\(record).\(field) = \(register.value.jsonText) at \(register.stamp) was never edited, seed \(seed)"
                )
            }
        }
        // Nothing acknowledged lost unless a later edit overwrote it (a record
        // gone from the server was deleted by a later edit, and purged), or
        // a machine in use holds it set aside, restorable: one that learned of
        // a rotation late cannot vouch for a write the new key's account lacks
        // (SECURITY.md, "A machine that learns of the rotation late"), and
        // when the rotation's relay was lost too (the server and the
        // rotator's home both put back from before it) and the writer is
        // gone, nobody sends it again.
        var setAsideLate: Set<String> = []
        for machine in machines {
            for removed in try machine.replica.removedRecords(limit: 100_000)
            where removed.why?.contains("learned of the rotation late") == true {
                for (field, register) in removed.state?.fields ?? [:] {
                    setAsideLate.insert("\(removed.collection)/\(removed.key).\(field)@\(register.stamp)")
                }
            }
        }
        for edit in mustSurvive {
            let now = serverState[edit.record]?[edit.field]
            if now == nil,
                allEdits.contains(where: {
                    $0.record == edit.record && $0.field == RecordState.deletedField && $0.value == .bool(true)
                        && $0.stamp >= edit.stamp
                })
            {
                continue // deleted (by this edit or a later one), and the tombstone purged
            }
            // A re-minted change (a fork re-stamps a copy's unpushed changes)
            // leaves out a field written since, the record's deletion flag
            // included: its values, though stamped later, never said the
            // record was alive. When the deletion flag the server took last
            // says deleted, the tombstone went with them, purged.
            if now == nil,
                !allEdits.contains(where: {
                    $0.record == edit.record && $0.stamp == edit.stamp && $0.field == RecordState.deletedField
                }),
                let deletion = allEdits.filter({
                    $0.record == edit.record && $0.field == RecordState.deletedField && $0.value == .bool(true)
                }).map(\.stamp).max(),
                !mustSurvive.contains(where: {
                    $0.record == edit.record && $0.field == RecordState.deletedField && $0.value == .bool(false)
                        && $0.stamp > deletion
                })
            {
                note("values of a re-minted change without its deletion flag, purged with the tombstone")
                continue
            }
            if now.map({ $0.stamp >= edit.stamp }) != true,
                setAsideLate.contains("\(edit.record).\(edit.field)@\(edit.stamp)"),
                !machines.contains(where: { $0.replica.deviceID == edit.stamp.device })
            {
                note("acknowledged edits of a machine gone set aside after the rotation's relay was lost")
                continue
            }
            if now.map({ $0.stamp >= edit.stamp }) != true,
                ProcessInfo.processInfo.environment["BRSYNC_MODEL_DEBUG"] != nil
            {
                print(
                    "DEBUG lost (set aside late: \(setAsideLate.contains("\(edit.record).\(edit.field)@\(edit.stamp)")), in use: \(machines.map { "\($0.name)=\($0.replica.deviceID)" }), gone: \(gone.map { "\($0.name)=\($0.replica.deviceID)" })) \(edit.record).\(edit.field)@\(edit.stamp); edits of the record: \(allEdits.filter { $0.record == edit.record && $0.field == edit.field || $0.record == edit.record && $0.field == "deleted" }.sorted { $0.stamp < $1.stamp }.map { "\($0.field)=\($0.value.jsonText.prefix(8))@\($0.stamp)" })"
                )
            }
            #expect(
                now.map { $0.stamp >= edit.stamp } == true,
                "\(edit.record).\(edit.field) = \(edit.value.jsonText) at \(edit.stamp) was acknowledged and is lost (the server has \(now.map { "\($0.value.jsonText.prefix(12))@\($0.stamp)" } ?? "no such record")), seed \(seed)"
            )
        }
        // All replicas identical to the server, and to a machine that joins now.
        for machine in machines {
            var local: [String: [String: StampedValue]] = [:]
            for collection in RecordCollection.allCases {
                for (key, state) in try machine.replica.records(collection)
                where serverState["\(collection.rawValue)/\(key)"] != nil || !state.isDeleted {
                    local["\(collection.rawValue)/\(key)"] = state.fields
                }
            }
            let live = { (state: [String: [String: StampedValue]]) in
                state.filter { $0.value[RecordState.deletedField]?.value != .bool(true) }
            }
            let mine = live(local), theirs = live(serverState)
            let differing = Set(mine.keys).union(theirs.keys).filter { mine[$0] != theirs[$0] }.sorted()
            if !differing.isEmpty, ProcessInfo.processInfo.environment["BRSYNC_MODEL_DEBUG"] != nil {
                let sync = try machine.replica.syncState()
                print(
                    "DEBUG \(machine.name) device \(machine.replica.deviceID) cursor \(sync.pullCursor) pushed \(sync.pushedThrough) epoch \(sync.epoch ?? "-"); server epoch \(store.epoch)"
                )
                for key in differing { print("DEBUG server row: \(serverRow(key))") }
            }
            #expect(
                differing.isEmpty,
                "\(machine.name) differs from the server in \(differing.map { "\($0): here \(mine[$0].map { $0.mapValues { "\($0.value.jsonText.prefix(12))@\($0.stamp)" }.sorted { $0.key < $1.key } } ?? []), server \(theirs[$0].map { $0.mapValues { "\($0.value.jsonText.prefix(12))@\($0.stamp)" }.sorted { $0.key < $1.key } } ?? [])" }), seed \(seed)"
            )
            #expect(try machine.replica.unpushedCount() == 0, "\(machine.name) has unpushed changes, seed \(seed)")
            // An honest server: every device's ledger is met here, nothing held.
            let failures = try machine.replica.ledgerFailures()
            if !failures.isEmpty, ProcessInfo.processInfo.environment["BRSYNC_MODEL_DEBUG"] != nil {
                for collection in RecordCollection.allCases where collection != .ledger {
                    for (key, state) in try machine.replica.records(collection) {
                        for (field, register) in state.fields where register.stamp.device == failures[0].device {
                            print("DEBUG register \(collection.rawValue)/\(key).\(field) @\(register.stamp)")
                        }
                    }
                }
                for (key, state) in try machine.replica.records(.ledger) where key.hasPrefix(failures[0].device) {
                    guard case .string(let text)? = state.fields["ledger"]?.value,
                        let bytes = Crypto.base64URLDecode(text)
                    else { continue }
                    let stamp = state.fields["ledger"]?.stamp.description ?? "-"
                    if let head = try? Ledger.Head(bytes: bytes) {
                        print(
                            "DEBUG ledger \(key) @\(stamp): folded \(String(describing: head.folded)) newest \(String(describing: head.newest))"
                        )
                    } else if let pending = try? Ledger.Pending(bytes: bytes) {
                        print(
                            "DEBUG ledger \(key) @\(stamp): base \(String(describing: pending.base)) previous \(String(describing: pending.previous)) entries \(pending.entries.count)"
                        )
                    } else {
                        print("DEBUG ledger \(key) @\(stamp)")
                    }
                }
            }
            #expect(
                failures.isEmpty,
                "\(machine.name) (\(machine.replica.deviceID), earlier \((try? machine.replica.formerDeviceIDs().map(\.id)) ?? []); gone: \(gone.map { "\($0.replica.deviceID) \((try? $0.replica.formerDeviceIDs().map(\.id)) ?? [])" })) holds ledger failures from an honest server: \(failures.map { "\($0.device): \($0.what)" }), seed \(seed)"
            )
            // Each device's stamps increase with its change numbers.
            let log = try machine.replica.unpushedChanges(after: 0, limit: 1_000_000)
            var previous: HLCTimestamp?
            for change in log {
                guard let stamp = change.state.fields.values.first?.stamp else { continue }
                if let previous {
                    #expect(
                        stamp > previous, "\(machine.name)'s stamps go back at change \(change.sequence), seed \(seed)")
                }
                previous = stamp
            }
        }
        let fresh = try newMachine(skew: 0)
        let joined = try client(fresh, direct: true).sync()
        var freshState: [String: [String: StampedValue]] = [:]
        for collection in RecordCollection.allCases {
            for (key, state) in try fresh.replica.records(collection) {
                freshState["\(collection.rawValue)/\(key)"] = state.fields
            }
        }
        // Its first push names it, and starts its ledger (not in the state taken before).
        freshState.removeValue(forKey: "settings/device_name/\(fresh.replica.deviceID)")
        for key in freshState.keys where key.hasPrefix("\(RecordCollection.ledger.rawValue)/\(fresh.replica.deviceID)/")
        {
            freshState.removeValue(forKey: key)
        }
        let freshDiffers = Set(freshState.keys).union(serverState.keys).filter { freshState[$0] != serverState[$0] }
        #expect(
            freshState == serverState,
            "a new machine does not get the server's state (differing: \(freshDiffers.sorted().map { "\($0): here \(freshState[$0].map { $0.mapValues { "\($0.value.jsonText.prefix(12))@\($0.stamp)" }.sorted { $0.key < $1.key } } ?? []), server \(serverState[$0].map { $0.mapValues { "\($0.value.jsonText.prefix(12))@\($0.stamp)" }.sorted { $0.key < $1.key } } ?? [])" }); its sync: \(joined); key \(String(describing: (try? AccountKeyFile.read(home: fresh.replica.home))?.id)), server's \(String(describing: serverKey()?.id))), seed \(seed)"
        )
    }
}
