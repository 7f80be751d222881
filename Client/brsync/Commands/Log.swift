import ArgumentParser
import Model
import Replica
import SyncCore

struct Log: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "log", abstract: "Show the change log, newest first.")
    @OptionGroup var global: GlobalOptions
    @Option(help: "How many entries.") var limit = 50

    func validate() throws {
        guard limit > 0 else { throw ValidationError("--limit must be at least 1") }
    }

    func run() throws {
        let replica = try global.openReplica()
        let entries = try replica.changeLog(limit: limit)
        if entries.isEmpty {
            print("no changes yet")
            return
        }
        for entry in entries {
            let fields = entry.fields.sorted { $0.key < $1.key }.map { "\($0.key)=\(Self.show($0.value.value))" }
            let who = entry.device == replica.deviceID ? "this device" : "device \(entry.device)"
            print("#\(entry.sequence) \(Timestamp.iso8601(millis: entry.recordedAtMillis)) \(who) [\(entry.kind)] \(entry.collection)/\(entry.key): \(fields.joined(separator: " "))")
        }
    }

    static func show(_ value: JSONValue) -> String {
        switch value {
        case .null: return "null"
        case .bool(let flag): return String(flag)
        case .int(let number): return String(number)
        case .double(let number): return String(number)
        case .string(let text): return "\"\(text)\""
        case .array, .object: return "\(value)"
        }
    }
}
