import ArgumentParser
import Replica

public struct Init: ParsableCommand {

    public init() {}
    public static let configuration = CommandConfiguration(
        commandName: "init",
        abstract: "Create the replica and this machine's device id; running it again changes nothing.")

    @OptionGroup var global: GlobalOptions

    @Option(help: ArgumentHelp("A name for this machine (default: the host name).", valueName: "name"))
    var deviceName: String?

    public func validate() throws {
        if let deviceName, let problem = Replica.problem(withDeviceName: deviceName) {
            throw ValidationError("--device-name: \(problem)")
        }
    }

    public func run() throws {
        let (replica, created) = try Replica.initialize(
            home: global.resolvedHome, deviceName: deviceName, busyTimeout: global.busyTimeout)
        if created {
            print("initialised replica \(replica.path)")
        } else {
            print("replica \(replica.path) already exists; nothing changed")
        }
        print("device \(replica.deviceID) (\(replica.deviceName))")
    }
}
