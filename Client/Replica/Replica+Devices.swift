import JSON
import Model
import SyncCore

/// Device names: each device's name is a synced setting (`device_name/ID`),
/// so `log` and `log --conflicts` on every machine can say "laptop" where
/// stamps say `3f2a9c1b…`. The name is also kept in `meta` (this device's own,
/// shown by `status` even before anything synced).
extension Replica {
    static let deviceNamePrefix = "device_name/"
    public static let maxDeviceNameCharacters = 64

    /// Why `name` cannot name a device, or nil.
    public static func problem(withDeviceName name: String) -> String? {
        if name.isBlank { return "a device name must not be blank" }
        if name.count > maxDeviceNameCharacters {
            return "a device name must be at most \(maxDeviceNameCharacters) characters"
        }
        if name.unicodeScalars.contains(where: {
            $0.properties.generalCategory == .control || $0.properties.generalCategory == .format
        }) {
            return "a device name must not contain control or formatting characters"
        }
        return nil
    }

    /// Renames this device here and, at the next push, everywhere.
    public func renameDevice(_ name: String) throws {
        if let problem = Self.problem(withDeviceName: name) { throw ReplicaError.invalidInput(problem) }
        try transaction {
            try loadPersistedClock()
            try database.setMeta("device_name", name)
            try setSetting(Self.deviceNamePrefix + deviceID, name)
        }
        deviceName = name
    }

    /// Writes this device's name as a synced setting when the setting lacks
    /// it (a replica made before names synced, or a copy that took a new
    /// device id). Called before a push.
    /// - Returns: whether a change was written.
    @discardableResult
    public func publishDeviceName() throws -> Bool {
        try transaction {
            try loadPersistedClock()
            let name = try meta("device_name") ?? ""
            guard Self.problem(withDeviceName: name) == nil, try setting(Self.deviceNamePrefix + deviceID) == nil else {
                return false
            }
            try setSetting(Self.deviceNamePrefix + deviceID, name)
            return true
        }
    }

    /// The field of a device's name record naming the id that took its place
    /// (the same machine, after a key change): every machine shows both ids
    /// as that one.
    static let successorField = "successor"

    /// Marks `old`, this machine's id until now, as replaced by `successor`
    /// (a synced write, inside the caller's transaction), once other machines
    /// may know it: its name was published.
    func retireDeviceID(_ old: String, successor: String) throws {
        guard try setting(Self.deviceNamePrefix + old) != nil else { return }
        try loadPersistedClock()
        var fields: [String: JSONValue] = [Self.successorField: .string(successor)]
        if Self.problem(withDeviceName: deviceName) == nil { fields["value"] = .string(deviceName) }
        try write(.settings, key: Self.deviceNamePrefix + old, changes: fields)
    }

    /// Every device name this replica knows, by device id.
    public func deviceNames() throws -> DeviceNames {
        var names: [String: String] = [:]
        var successors: [String: String] = [:]
        try read {
            _ = try database.query(
                "SELECT key, fields, versions FROM records WHERE collection = 'settings' AND key >= ? AND key < ? AND deleted = 0",
                [.text(Self.deviceNamePrefix), .text(String(Self.deviceNamePrefix.dropLast()) + "0")]
            ) { row in
                let state = try RecordCoding.decodeState(fields: row.string(1) ?? "{}", versions: row.string(2) ?? "{}")
                guard let key = row.string(0) else { return }
                let id = String(key.dropFirst(Self.deviceNamePrefix.count))
                if let successor = state.fields[Self.successorField]?.value.stringValue, successor != id,
                    successor.utf8.count <= 64
                {
                    successors[id] = successor
                }
                guard let name = state.fields["value"]?.value.stringValue, Self.problem(withDeviceName: name) == nil
                else { return }
                names[id] = name
            }
        }
        if Self.problem(withDeviceName: deviceName) == nil { names[deviceID] = deviceName }
        return DeviceNames(names: names, thisDevice: deviceID, successors: successors)
    }
}

/// How devices are named for a person: by name, with the start of the id
/// when two devices share a name; by id when no name is known. An id that
/// a machine left behind (a key change gives it a new one) is shown as that
/// machine, under its current name.
public struct DeviceNames: Sendable {
    public let names: [String: String]
    public let thisDevice: String
    /// Retired id → the id that took its place.
    public let successors: [String: String]

    public init(names: [String: String], thisDevice: String, successors: [String: String] = [:]) {
        self.names = names
        self.thisDevice = thisDevice
        self.successors = successors
    }

    /// The id a device goes by now: `device` itself, or the last of the ids
    /// that took its place (a chain of at most 64 steps; a loop ends it).
    public func current(_ device: String) -> String {
        var id = device
        var seen: Set<String> = [id]
        for _ in 0..<64 {
            guard let next = successors[id], seen.insert(next).inserted else { break }
            id = next
        }
        return id
    }

    /// The ids `device` went by before its current one.
    public func earlierIDs(of device: String) -> [String] {
        successors.keys.filter { $0 != device && current($0) == device }.sorted()
    }

    public func name(of device: String) -> String? { names[current(device)] ?? names[device] }

    public func display(_ device: String) -> String {
        let id = current(device)
        guard let name = names[id] ?? names[device] else { return "device \(device)" }
        let shared = names.contains { $0.value == name && current($0.key) != id }
        let label = shared ? "\(name) [\(id.prefix(8))]" : name
        return id == thisDevice ? "\(label) (this device)" : label
    }
}
