import Foundation
import Model
import Replica
import SyncCore
import SystemServices

/// The convergence test's debugging output (see ``ConvergenceTests``).
extension Run {
    func trace(step: Int, operation: Int, on machine: SimulatedMachine, futureReported: inout Bool) {
        let environment = ProcessInfo.processInfo.environment
        if let traced = environment["BRSYNC_MODEL_TRACE"] {
            let lines = traceLines(traced)
            if lines != lastTrace {
                lastTrace = lines
                print(
                    "TRACE step \(step) op \(operation) on \(machine.name)/\(machine.replica.deviceID), must survive: \(mustSurvive.contains { $0.record == traced })\n"
                        + lines.joined(separator: "\n"))
            }
        }
        if environment["BRSYNC_MODEL_DEBUG"] != nil, !futureReported {
            for other in machines {
                let future = held(other.replica).filter { $0.stamp.wallMillis > serverClock.now() + 86_400_000 }
                if let first = future.first {
                    print(
                        "DEBUG step \(step) op \(operation) on \(machine.name): \(other.name) \(other.replica.deviceID) (skew \(other.skewMilliseconds)) holds \(future.count) future stamps, e.g. \(first.record).\(first.field)@\(first.stamp)"
                    )
                    futureReported = true
                }
            }
        }
    }

    /// The watched record on the server and on every machine; a watch
    /// ending in `*` watches every record whose id starts with the rest
    /// (`settings/device_name/*`: device ids differ from run to run).
    func traceLines(_ watch: String) -> [String] {
        if watch.hasSuffix("*") {
            let prefix = String(watch.dropLast())
            let ids = Set(
                ((try? store.records(account: "alice")) ?? []).map { "\($0.collection.rawValue)/\($0.key)" }
                    + machines.flatMap { machine in
                        RecordCollection.allCases.flatMap { collection in
                            ((try? machine.replica.records(collection)) ?? []).map {
                                "\(collection.rawValue)/\($0.key)"
                            }
                        }
                    }
            ).filter { $0.hasPrefix(prefix) }.sorted()
            return ids.flatMap { id in ["\(id):"] + traceLines(id) }
        }
        let environment = ProcessInfo.processInfo.environment
        func show(_ state: RecordState?) -> String {
            guard let state else { return "-" }
            return state.fields.sorted { $0.key < $1.key }.prefix(3)
                .map { "\($0.key)=\("\($0.value.value)".prefix(12))@\($0.value.stamp)" }.joined(separator: " ")
        }
        func state(_ replica: Replica) -> RecordState? {
            for collection in RecordCollection.allCases {
                if let found = (try? replica.records(collection))?.first(where: {
                    "\(collection.rawValue)/\($0.key)" == watch
                }) {
                    return found.state
                }
            }
            return nil
        }
        let onServer = (try? store.records(account: "alice"))?.first { "\($0.collection.rawValue)/\($0.key)" == watch }
        let row = environment["BRSYNC_MODEL_TRACE_ROWS"] != "0" ? serverRow(watch) : ""
        return ["server: \(show(onServer?.state)) [\(row)]"]
            + machines.map { machine in
                let sync = try? machine.replica.syncState()
                return
                    "  \(machine.name)/\(machine.replica.deviceID): \(show(state(machine.replica))); pushed through \(sync?.pushedThrough ?? -1), cursor \(sync?.pullCursor ?? -1), epoch \((sync?.epoch ?? nil) ?? "-")"
            }
    }

    /// The server's bookkeeping of record `collection/key`, read with the
    /// sqlite3 program (when there is one).
    func serverRow(_ watch: String) -> String {
        guard case .sqlite(let storePath) = host.place else { return "" }
        let key = watch.split(separator: "/", maxSplits: 1).last.map(String.init) ?? watch
        let query =
            "SELECT 'seq ' || seq || ', known to ' || ifnull(known_to, '-') || ' after ' || known_after || ', next ' || (SELECT next_seq FROM accounts) || ', epoch ' || (SELECT value FROM meta WHERE key = 'epoch') FROM records WHERE key = '\(key.replacingOccurrences(of: "'", with: "''"))'"
        let result = try? Subprocess.run(
            ["/usr/bin/sqlite3", storePath, query], timeoutMilliseconds: 30_000, environment: .inherited)
        let row = (result?.output ?? "").trimmingCharacters(in: .whitespacesAndNewlines)
        return row
    }
}
