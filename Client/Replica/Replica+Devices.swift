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
        if name.count > maxDeviceNameCharacters { return "a device name must be at most \(maxDeviceNameCharacters) characters" }
        if name.unicodeScalars.contains(where: { $0.properties.generalCategory == .control || $0.properties.generalCategory == .format }) {
            return "a device name must not contain control or formatting characters"
        }
        return nil
    }

    /// Renames this device here and, at the next push, everywhere.
    public func renameDevice(_ name: String) throws {
        if let problem = Self.problem(withDeviceName: name) { throw ReplicaError.invalidInput(problem) }
        try transaction {
            try loadPersistedClock()
            try database.run("INSERT OR REPLACE INTO meta (key, value) VALUES ('device_name', ?)", [.text(name)])
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
            guard Self.problem(withDeviceName: name) == nil, try setting(Self.deviceNamePrefix + deviceID) == nil else { return false }
            try setSetting(Self.deviceNamePrefix + deviceID, name)
            return true
        }
    }

    /// Every device name this replica knows, by device id.
    public func deviceNames() throws -> DeviceNames {
        var names: [String: String] = [:]
        try read {
            _ = try database.query(
                "SELECT key, fields, versions FROM records WHERE collection = 'settings' AND key >= ? AND key < ? AND deleted = 0",
                [.text(Self.deviceNamePrefix), .text(String(Self.deviceNamePrefix.dropLast()) + "0")]
            ) { row in
                let state = try RecordCoding.decodeState(fields: row.string(1) ?? "{}", versions: row.string(2) ?? "{}")
                guard let key = row.string(0), let name = state.fields["value"]?.value.stringValue,
                      Self.problem(withDeviceName: name) == nil else { return }
                names[String(key.dropFirst(Self.deviceNamePrefix.count))] = name
            }
        }
        if Self.problem(withDeviceName: deviceName) == nil { names[deviceID] = deviceName }
        return DeviceNames(names: names, thisDevice: deviceID)
    }
}

/// How devices are named for a person: by name, with the start of the id
/// when two devices share a name; by id when no name is known.
public struct DeviceNames: Sendable {
    public let names: [String: String]
    public let thisDevice: String

    public init(names: [String: String], thisDevice: String) {
        self.names = names
        self.thisDevice = thisDevice
    }

    public func name(of device: String) -> String? { names[device] }

    public func display(_ device: String) -> String {
        guard let name = names[device] else { return "device \(device)" }
        let shared = names.contains { $0.key != device && $0.value == name }
        let label = shared ? "\(name) [\(device.prefix(8))]" : name
        return device == thisDevice ? "\(label) (this device)" : label
    }
}
