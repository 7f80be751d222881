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
            commandName: "show", abstract: "This device, then every device named so far.", aliases: ["list"])
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

    /// `brsync device forget DEVICE`: stops checking the ledger of a device
    /// that will never sync again (a lost laptop whose last push was cut
    /// short, which would keep its failure standing for good), until it
    /// writes again (``ForgottenDevice``).
    public struct Forget: ParsableCommand {
        public init() {}
        public static let configuration = CommandConfiguration(
            commandName: "forget",
            abstract: "Stop checking the ledger of a device that will never sync again (a lost laptop).",
            discussion: """
                'brsync status' names a device whose ledger fails its checks. When that device is gone \
                for good, its failure would stand for ever: this ends the failure and stops checking it. \
                Checks start again by themselves as soon as a newer write or ledger record of it arrives \
                (it synced again after all). 'brsync status' lists it meanwhile. Nothing synced is changed.
                """)
        @OptionGroup var global: GlobalOptions
        @Argument(
            help: "The device: its id, its first hex digits (at least 4), or its name, as 'brsync status' shows it.")
        var device: String

        public func validate() throws {
            guard !device.isBlank, device.count <= 64 else {
                throw ValidationError(
                    "give the device's id (or its first 4 hex digits or more) or its name, as 'brsync status' shows it")
            }
        }

        static let hexDigits = Set("0123456789abcdef".utf8)

        /// The ids of `held` (devices whose ledger is held here) that `given`
        /// names: ids it starts (at least 4 hex digits), else ids of that name.
        static func matches(_ given: String, held: [String], names: DeviceNames) -> [String] {
            let prefix = given.lowercased()
            if (4...16).contains(prefix.utf8.count), prefix.utf8.allSatisfy({ hexDigits.contains($0) }) {
                let byID = held.filter { $0.hasPrefix(prefix) }
                if !byID.isEmpty { return byID.sorted() }
            }
            return held.filter { names.name(of: $0) == given }.sorted()
        }

        public func run() throws {
            let replica = try global.openReplica()
            let names = try replica.deviceNames()
            let shown = DisplayText.printable(device.prefix(64))
            if Self.matches(device, held: [replica.deviceID], names: names) == [replica.deviceID] {
                throw ReplicaError.invalidInput(
                    "'\(shown)' is this device: its own ledger is not checked here (nothing changed)")
            }
            let held = try replica.heldLedgerDevices()
            let matches = Self.matches(device, held: Array(held.keys), names: names)
            guard matches.count == 1, let id = matches.first, let high = held[id] else {
                if matches.isEmpty {
                    let known = held.keys.sorted().prefix(8).map { "\(names.display($0)) (\($0))" }
                    throw ReplicaError.notFound(
                        "no device '\(shown)' whose ledger is held here, so none is checked: nothing to forget"
                            + (known.isEmpty ? "" : " (ledgers held: \(known.joined(separator: ", ")))"))
                }
                throw ReplicaError.invalidInput(
                    "'\(shown)' names \(matches.count) devices (\(matches.prefix(8).joined(separator: ", "))): give more of the id (nothing changed)"
                )
            }
            let forgotten = try replica.forgetDevice(id, ledgerHigh: high, now: replica.currentMillis)
            print(
                "no longer checking \(names.display(id)) (\(id)): its failure ended "
                    + "(\(DisplayText.printable(String(forgotten.what.prefix(200))))). Checks start again as soon as "
                    + "a newer write or ledger record of it arrives; 'brsync status' lists it meanwhile. "
                    + "Nothing synced was changed.")
        }
    }
}
