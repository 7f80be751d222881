import ArgumentParser
import Glibc
import JSON
import Replica
import SyncCore
import SystemServices

public struct Status: ParsableCommand {

    public init() {}
    public static let configuration = CommandConfiguration(
        commandName: "status", abstract: "Device, server, epoch, last sync, unpushed changes, cursor.")
    @OptionGroup var global: GlobalOptions
    @Flag(help: "Print JSON.") var json = false

    public func run() throws {
        let report = try Report(replica: global.openReplica(), asideListed: json ? Self.asideListed : 1)
        if json {
            Output.json(report.json)
        } else {
            try report.printText()
        }
    }
}

extension Status {
    /// How many devices the text form lists as heard from (newest first).
    static let devicesShown = 8
    /// How many records set aside `--json` lists (newest first; `setAsideFromServer` counts them all).
    static let asideListed = 1_000

    /// What `status` tells, read from the replica once.
    struct Report {
        let replica: Replica
        let state: SyncState
        let unpushed: Int
        /// Where the account key would be; whether this machine syncs end to
        /// end encrypted is whether it holds one (brsync-sync reads it).
        let keyFile: String
        let encrypted: Bool
        let watch: WatchWake.Running?
        let watching: Bool
        /// Other devices, with their newest write and when it was pulled.
        let heard: [DeviceWrites]
        let names: DeviceNames
        let asideCount: Int
        /// The newest records set aside (`asideListed` of them at most).
        let aside: [PulledAside]
        let ledgerFailures: [LedgerFailure]
        let endedFailures: [EndedLedgerFailure]
        let forgotten: [ForgottenDevice]
        let withdrawers: [(device: String, count: Int)]
        let ownLedger: OwnLedgerNotTaken?

        /// ``heard`` one machine at a time, newest first: its newest write
        /// (the first listed of its ids) and every id it was heard under (a
        /// key change or a move gives a machine a new one); this machine's
        /// own earlier ids are not another device.
        var machinesHeard: [(newest: DeviceWrites, ids: [String])] {
            var order: [String] = []
            var byMachine: [String: (newest: DeviceWrites, ids: [String])] = [:]
            for device in heard {
                let machine = names.current(device.device)
                guard machine != names.thisDevice else { continue }
                if byMachine[machine] == nil {
                    order.append(machine)
                    byMachine[machine] = (device, [])
                }
                byMachine[machine]?.ids.append(device.device)
            }
            return order.map { byMachine[$0]! } // each machine of `order` was put in `byMachine`
        }

        init(replica: Replica, asideListed: Int) throws {
            self.replica = replica
            state = try replica.syncState()
            unpushed = try replica.unpushedCount()
            keyFile = "\(replica.home)/account-key"
            encrypted = access(keyFile, F_OK) == 0
            watch = WatchWake.status(home: replica.home)
            watching = watch?.isAlive(nowMillis: WatchWake.bootMillis()) == true
            heard = try replica.deviceWrites().filter { $0.device != replica.deviceID }
            names = try replica.deviceNames()
            asideCount = try replica.pulledAsideCount()
            aside = try replica.pulledAside(limit: asideListed)
            ledgerFailures = try replica.ledgerFailures()
            endedFailures = try replica.ledgerFailuresEnded()
            forgotten = try replica.forgottenDevices().values.sorted { $0.device < $1.device }
            withdrawers = try replica.withdrawingDevices()
            ownLedger = try replica.ownLedgerNotTaken()
        }
    }

    /// How this machine's clock stands against the server's, in words.
    static func clockText(offsetMilliseconds: Int64, contacted: Bool) -> String {
        guard contacted else { return "not known yet (no contact with a server)" }
        let seconds = abs(offsetMilliseconds) / 1000
        guard seconds > 0 else { return "in step with the server (within 1 s)" }
        let amount =
            seconds < 120
            ? "\(seconds) s"
            : seconds < 7_200
                ? "\(seconds / 60) min" : seconds < 172_800 ? "\(seconds / 3_600) h" : "\(seconds / 86_400) days"
        return
            "this machine is \(amount) \(offsetMilliseconds > 0 ? "behind" : "ahead of") the server (edits are stamped in the server's time)"
    }
}
