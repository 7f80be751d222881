import BrsyncServer
import Foundation
import TestSupport
import Testing

/// Server restores in a run, and what may be lost with them.
extension Run {
    /// Only edits someone still holds must survive what comes next: after a
    /// restore, an edit held by nobody but gone machines (or only by a home
    /// just replaced by an older copy) is lost with them.
    func keepOnlyHeldEdits(includingServer: Bool) {
        var heldNow = heldByMachinesInUse()
        if includingServer, let records = try? serverRecords() {
            for change in records { heldNow.formUnion(edits(of: change)) }
        }
        mustSurvive = mustSurvive.intersection(heldNow)
    }

    /// Every edit a machine in use holds: in its records, or in its change
    /// log not pushed yet.
    func heldByMachinesInUse() -> Set<Edit> {
        var heldNow = machines.reduce(into: Set<Edit>()) { $0.formUnion(held($1.replica)) }
        for machine in machines {
            for change in (try? machine.replica.unpushedChanges(after: 0, limit: 1_000_000)) ?? [] {
                heldNow.formUnion(edits(of: change))
            }
        }
        return heldNow
    }

    func restoreServer(from copy: TestServer.Copy) throws {
        keepOnlyHeldEdits(includingServer: false)
        try host.restore(copy)
        proxy.retarget(serverPort)
        // The restored store has the tokens of its time: the administrator
        // issues a new one to every device given one since.
        for machine in machines where (try? store.authenticate(token: machine.token)) == nil {
            let token = try store.reissueToken(account: "alice", device: machine.name)
            for same in machines where same.name == machine.name { same.token = token }
            note("tokens issued again after a restore")
        }
    }
}
