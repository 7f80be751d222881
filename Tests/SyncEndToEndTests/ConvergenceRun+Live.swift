import Foundation
import Glibc
import Net
import SyncClient

/// Machines that sync by watch, as `brsync watch` does (every other machine
/// of a run: m2, m4, …): a sync asked of one syncs only when its watch
/// says the account changed (or its timeline or key did), when it has work
/// to send (``SyncClient/hasWorkToSend()``: an edit pokes the real watch,
/// which checks this before every watch), or when the watch failed (the
/// real watch then syncs); a watch that has not answered within 50 ms is
/// "no change", and the machine does nothing. If the watch ever said "no
/// change" when there was one, the final rounds, which ask the same of
/// these machines, would leave them behind, and the run's check fails.
extension Run {
    func isLive(_ machine: SimulatedMachine) -> Bool {
        guard let number = Int(machine.name.dropFirst()) else { return false }
        return number % 2 == 0
    }

    /// Whether a machine that syncs by watch syncs now.
    func liveWantsSync(_ machine: SimulatedMachine, direct: Bool) -> Bool {
        note("live rounds")
        guard let client = try? client(machine, direct: direct) else { return true }
        if (try? client.hasWorkToSend()) ?? true { return true }
        var ends: [Int32] = [0, 0]
        guard pipe(&ends) == 0 else { return true }
        defer { close(ends[0]); close(ends[1]) }
        let writer = ends[1]
        let timer = ThreadJob { () -> Bool in
            usleep(50_000)
            var byte: UInt8 = 1
            return write(writer, &byte, 1) == 1
        }
        defer { _ = timer.wait() }
        switch (try? client.watch(wakeup: ends[0])) ?? .changed {
        case .changed, .unsupported:
            note("live syncs woken by the server")
            return true
        case .unchanged, .interrupted:
            return false
        }
    }
}
