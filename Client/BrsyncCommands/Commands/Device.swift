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
        subcommands: [Show.self, Name.self], defaultSubcommand: Show.self)

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
}
