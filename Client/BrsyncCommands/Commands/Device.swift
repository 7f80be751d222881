import ArgumentParser
import JSON
import Model
import Replica

/// `brsync device`: this machine's device id and name, and the names of the
/// account's other devices (synced, so `log` and `log --conflicts` name them).
public struct DeviceCommand: ParsableCommand {

    public init() {}
    public static let configuration = CommandConfiguration(
        commandName: "device", abstract: "Show or rename this device; list the devices this replica knows.",
        subcommands: [Show.self, Name.self, Forget.self], defaultSubcommand: Show.self)

    public struct Show: ParsableCommand {
        public init() {}
        public static let configuration = CommandConfiguration(
            commandName: "show", abstract: "This device, then every device named so far.")
        @OptionGroup var global: GlobalOptions
        @Flag(help: "Print JSON.") var json = false

        public func run() throws {
            let replica = try global.openReplica()
            let names = try replica.deviceNames()
            // Ids a machine left behind (a key change gives it a new one) are listed with it.
            let others = names.names.filter { $0.key != replica.deviceID && names.current($0.key) == $0.key }
                .sorted { ($0.value, $0.key) < ($1.value, $1.key) }
            func earlier(_ id: String) -> JSONValue { .array(names.earlierIDs(of: id).map { .string($0) }) }
            if json {
                Output.json(
                    JSONValue.object([
                        "device": .string(replica.deviceID), "name": .string(replica.deviceName),
                        "serverName": try replica.serverDeviceName().map { .string($0) } ?? .null,
                        "earlier": earlier(replica.deviceID),
                        "others": .array(
                            others.map {
                                .object([
                                    "device": .string($0.key), "name": .string($0.value), "earlier": earlier($0.key),
                                ])
                            }),
                    ]))
                return
            }
            func earlierText(_ id: String) -> String {
                let ids = names.earlierIDs(of: id)
                return ids.isEmpty ? "" : "; earlier \(ids.joined(separator: ", "))"
            }
            print("this device: \(replica.deviceName) (\(replica.deviceID)\(earlierText(replica.deviceID)))")
            // The server names its devices by their tokens; `brsyncd device list` shows this id beside that name.
            if let serverName = try replica.serverDeviceName(), serverName != replica.deviceName {
                print(
                    "             the server calls it \(serverName) ('brsyncd device list' shows it with \(replica.deviceID))"
                )
            }
            for (id, _) in others { print("other:       \(names.display(id)) (\(id)\(earlierText(id)))") }
            if others.isEmpty { print("no other device named yet (names arrive with 'brsync sync')") }
        }
    }

    public struct Name: ParsableCommand {
        public init() {}
        public static let configuration = CommandConfiguration(
            commandName: "name", abstract: "Rename this device (the name syncs; the device id stays).")
        @OptionGroup var global: GlobalOptions
        @Argument(help: "The new name, at most 64 characters.") var name: String

        public func validate() throws {
            if let problem = Replica.problem(withDeviceName: name) { throw ValidationError(problem) }
        }

        public func run() throws {
            let replica = try global.openReplica()
            let old = replica.deviceName
            try replica.renameDevice(name)
            print(
                old == name
                    ? "this device is already named '\(name)'"
                    : "this device is now '\(name)' (was '\(old)'); it reaches other machines at the next sync")
        }
    }

    /// `brsync device forget ID`: stops checking the ledger of a device that
    /// will never sync again (a lost laptop whose last push was cut short,
    /// which would keep its failure standing for good), until it writes
    /// again (``ForgottenDevice``).
    public struct Forget: ParsableCommand {
        public init() {}
        public static let configuration = CommandConfiguration(
            commandName: "forget",
            abstract: "Stop checking the ledger of a device that will never sync again (a lost laptop).",
            discussion: """
                'brsync status' names a device whose ledger fails its checks. When that device is gone \
                for good, its failure would stand for ever: this stops checking it, and ends the failure. \
                Checks start again by themselves if the device writes again. Nothing synced is changed.
                """)
        @OptionGroup var global: GlobalOptions
        @Argument(help: "The device's id, or its first digits (at least 4), as 'brsync status' shows it.")
        var device: String

        public func validate() throws {
            guard (4...16).contains(device.utf8.count), device.utf8.allSatisfy({ Self.hexDigits.contains($0) }) else {
                throw ValidationError(
                    "a device id is 16 hex digits (or at least its first 4), as 'brsync status' shows it; got '\(DisplayText.printable(device.prefix(40)))'"
                )
            }
        }

        static let hexDigits = Set("0123456789abcdefABCDEF".utf8)

        public func run() throws {
            let replica = try global.openReplica()
            let prefix = device.lowercased()
            if replica.deviceID.hasPrefix(prefix) {
                throw ReplicaError.invalidInput(
                    "\(replica.deviceID) is this device: its own ledger is not checked here (nothing changed)")
            }
            let held = try replica.heldLedgerDevices()
            let matches = held.keys.filter { $0.hasPrefix(prefix) }.sorted()
            let names = try replica.deviceNames()
            guard matches.count == 1, let id = matches.first, let high = held[id] else {
                if matches.isEmpty {
                    let known = held.keys.sorted().prefix(8).map { "\(names.display($0)) (\($0))" }
                    throw ReplicaError.notFound(
                        "no ledger of a device '\(prefix)' is held here, so it is not checked: nothing to forget"
                            + (known.isEmpty ? "" : " (ledgers held: \(known.joined(separator: ", ")))"))
                }
                throw ReplicaError.invalidInput(
                    "'\(prefix)' starts the ids of \(matches.count) devices (\(matches.prefix(8).joined(separator: ", "))): give more of the id (nothing changed)"
                )
            }
            let failing = try replica.ledgerFailures().first { $0.device == id }
            try replica.forgetDevice(id, ledgerHigh: high, now: replica.currentMillis)
            print(
                "no longer checking \(names.display(id)) (\(id))"
                    + (failing.map { ": its failure ended (\(DisplayText.printable(String($0.what.prefix(200)))))" }
                        ?? "")
                    + ". Checks start again if it writes again. Nothing synced was changed.")
        }
    }
}
