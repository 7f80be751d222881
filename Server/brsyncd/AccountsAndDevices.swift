import ArgumentParser
import BrsyncServer
import Glibc
import JSON
import Model
import ServerStore
import SystemServices

struct AccountCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "account", abstract: "Manage accounts (a person and their devices).",
        subcommands: [Add.self, List.self, Remove.self, Limits.self, Recount.self, ResetEncryption.self])

    struct Add: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "add", abstract: "Add an account.")
        @OptionGroup var store: StoreOptions
        @Argument(help: "The account's name.") var name: String
        func run() throws {
            try store.open(creating: true).addAccount(name)
            print("added account \(name)")
        }
    }

    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "list", abstract: "List accounts.")
        @OptionGroup var store: StoreOptions
        func run() throws {
            let accounts = try store.open().accounts()
            if accounts.isEmpty { print("no accounts; add one with 'brsyncd account add NAME'") }
            for account in accounts {
                print(
                    "\(account.name)\t\(account.devices)/\(account.limits.devices) device(s)\t\(account.records)/\(account.limits.records) record(s)"
                        + "\t\(Limits.size(account.bytes))/\(Limits.size(account.limits.bytes))"
                        + (account.uid.isEmpty ? "" : "\tid \(account.uid)"))
            }
        }
    }

    struct Remove: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "rm", abstract: "Delete an account with its devices and records.")
        @OptionGroup var store: StoreOptions
        @Argument(help: "The account's name.") var name: String
        func run() throws {
            try store.open().removeAccount(name)
            print("removed account \(name) with its devices and records")
        }
    }
}

extension AccountCommand {
    struct Limits: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "limits",
            abstract: "Show or change what an account may hold: records, their bytes, devices.",
            discussion: """
                A push or relay that would take the account past a limit is refused whole (nothing applied; the machine keeps \
                its edits and says so; a relay of more than 128 KiB is merged in parts, and refused at the part that crosses \
                the limit, the parts before it applied, as its answer says); one that shrinks an account already past a lowered limit is taken. Defaults: \
                \(Store.Limits.defaultRecords) records, \(size(Store.Limits.defaultBytes)), \(Store.Limits.defaultDevices) devices \
                (revoked ones count). 'default' sets a limit back to its default.
                """)
        @OptionGroup var store: StoreOptions
        @Argument(help: "The account's name.") var name: String
        @Option(help: "Most records (tombstones included), or 'default'.") var records: String?
        @Option(help: "Most bytes of stored records: a number with an optional K, M or G (binary), or 'default'.")
        var bytes: String?
        @Option(help: "Most devices (revoked ones included), or 'default'.") var devices: String?

        func run() throws {
            let opened = try store.open()
            if records != nil || bytes != nil || devices != nil {
                try opened.setLimits(
                    account: name,
                    records: try records.map { try Self.count($0, "--records", Store.Limits.defaultRecords) },
                    bytes: try bytes.map { try Self.bytes($0) },
                    devices: try devices.map { try Self.count($0, "--devices", Store.Limits.defaultDevices) })
            }
            guard let account = try opened.accounts().first(where: { $0.name == name }) else {
                throw CLIFailure(message: "no account named '\(name)'")
            }
            print("records: \(account.records) of \(account.limits.records)")
            print("bytes:   \(Self.size(account.bytes)) of \(Self.size(account.limits.bytes))")
            print("devices: \(account.devices) of \(account.limits.devices)")
        }

        static func count(_ text: String, _ option: String, _ fallback: Int64) throws -> Int64 {
            if text == "default" { return fallback }
            guard let value = Int64(text), value >= 1 else {
                throw CLIFailure(message: "\(option) takes a whole number, 1 or more, or 'default' (got '\(text)')")
            }
            return value
        }

        static func bytes(_ text: String) throws -> Int64 {
            if text == "default" { return Store.Limits.defaultBytes }
            let units: [Character: Int64] = ["K": 1 << 10, "M": 1 << 20, "G": 1 << 30]
            var digits = Substring(text)
            var unit: Int64 = 1
            if let last = text.last, let scale = units[Character(last.uppercased())] {
                unit = scale
                digits = digits.dropLast()
            }
            guard let value = Int64(digits), value >= 1, value <= Int64.max / unit else {
                throw CLIFailure(
                    message:
                        "--bytes takes a size (a whole number with an optional K, M or G) or 'default' (got '\(text)')")
            }
            return value * unit
        }

        /// A byte count as people read it (MiB with one decimal, binary units).
        static func size(_ bytes: Int64) -> String {
            if bytes < 1 << 20 { return "\((bytes + 1023) / 1024) KiB" }
            return "\((Double(bytes) / Double(1 << 20) * 10).rounded() / 10) MiB"
        }
    }

    struct Recount: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "recount",
            abstract: "Count again the records and bytes an account holds, after edits made outside brsyncd.",
            discussion: """
                brsyncd keeps each account's counts (what its limits are checked against) as records are written, and the \
                store's triggers count rows written with sqlite3 or psql too, except a REPLACE and a row moved to another \
                account. This counts every account's records again (or the named one's), in one transaction, safe while \
                brsyncd serves, and says which counts it put right.
                """)
        @OptionGroup var store: StoreOptions
        @Argument(help: "The account's name (default: every account).") var name: String?
        func run() throws {
            let counted = try store.open().recount(account: name)
            if counted.isEmpty { print("no accounts; add one with 'brsyncd account add NAME'") }
            for account in counted {
                let (before, after) = (account.before, account.after)
                if before == after {
                    print("\(account.account): \(after.records) record(s), \(Limits.size(after.bytes)): right already")
                } else {
                    // Only what was off, each as it was and as it is.
                    var fixed: [String] = []
                    if before.records != after.records {
                        fixed.append("\(before.records) → \(after.records) record(s)")
                    }
                    if before.bytes != after.bytes {
                        fixed.append(
                            "\(Limits.size(before.bytes)) → \(Limits.size(after.bytes)) (\(before.bytes) → \(after.bytes) bytes)"
                        )
                    }
                    print("\(account.account): \(fixed.joined(separator: ", ")): put right")
                }
            }
        }
    }

    struct ResetEncryption: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "reset-encryption",
            abstract: "Make an end-to-end encrypted account not encrypted again, deleting its records from the server.",
            discussion: """
                For a key every machine lost, or a signing key registered by someone who had a device token but not the key \
                (its machines then stop with an alarm). Revoke a leaked token first ('brsyncd device revoke'). The machines keep \
                their rules; each one that holds a key stops until one runs 'brsync key init' (which encrypts the account again \
                with a new key and sends its records, sealed; the others then add the new recovery code) or 'brsync key forget'. \
                The old key is never taken again. Deploy/OPERATIONS.md says when to use it.
                """)
        @OptionGroup var store: StoreOptions
        @Argument(help: "The account's name.") var name: String
        func run() throws {
            if try store.open().resetEncryption(account: name) {
                print(
                    "reset the encryption of account \(name): its records were deleted from the server; machines that hold a key "
                        + "stop until one runs 'brsync key init' (it encrypts the account again with a new key and sends its records; "
                        + "the others then add its recovery code) or 'brsync key forget'")
            } else {
                print("account \(name) is not end-to-end encrypted; nothing was changed")
            }
        }
    }
}

struct DeviceCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "device", abstract: "Manage devices: each has its own bearer token.",
        subcommands: [Add.self, List.self, Token.self, Revoke.self])

    struct Token: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "token",
            abstract: "Issue a new token for an existing device; prints it alone on the last line (shown once).",
            discussion: """
                The old token stops working; a revoked device is reinstated. The device's replicas keep their place: nothing is pushed \
                twice or skipped. With --url and --ca (or BRSYNCD_URL and BRSYNCD_CA), a join code is printed instead of a token: \
                'brsync join' exchanges it, once, for a token the machine makes itself.
                """)
        @OptionGroup var target: DeviceArguments
        func run() throws {
            if try target.printedJoinCode(adding: false) { return }
            let token = try target.store.open().reissueToken(account: target.account, device: target.device)
            print(
                "issued a new token for device \(target.device) of account \(target.account); the old one no longer works. The new token (shown only now):"
            )
            print(token)
        }
    }

    struct Add: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "add",
            abstract: "Add a device; prints its token alone on the last line (shown once, stored hashed).",
            discussion: """
                With --url and --ca (or BRSYNCD_URL and BRSYNCD_CA), a join code is printed instead of a token, on the last line: \
                the URL, an enrollment secret and the CA's fingerprint, for 'brsync join' on the new machine (no CA file to copy); \
                --qr also draws it for the phone. The code works once, within --expires (24 hours by default): 'brsync join' \
                exchanges it for a token the machine makes itself, and it reads nothing after that.
                """)
        @OptionGroup var target: DeviceArguments
        func run() throws {
            if try target.printedJoinCode(adding: true) { return }
            let token = try target.store.open().addDevice(account: target.account, name: target.device)
            print("added device \(target.device) to account \(target.account); its token (shown only now):")
            print(token)
        }
    }

    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "list", abstract: "List an account's devices.")
        @OptionGroup var store: StoreOptions
        @Argument(help: "The account.") var account: String
        func run() throws {
            let devices = try store.open().devices(account: account)
            if devices.isEmpty { print("no devices; add one with 'brsyncd device add \(account) NAME'") }
            let now = Clock.wallMillis()
            for device in devices {
                let seen = device.lastSeenMillis.map { Timestamp.iso8601(millis: $0) } ?? "never"
                // The replica's device id, as `brsync device` prints it: the two lists match by it.
                let replica = "replica \(device.clientDevice ?? "-")"
                // The protocol of its latest request: one below 6 holds an encrypted account in sealed format 1.
                let spoke = device.clientProtocol > 0 ? String(device.clientProtocol) : "-"
                print(
                    "\(device.name)\t\(Self.state(device, now: now))\t\(replica)\tlast seen \(seen)\tpushed through \(device.lastDeviceSequence)\tcursor \(device.acknowledgedCursor)\tprotocol \(spoke)"
                )
            }
        }
    }
}

extension DeviceCommand.List {
    /// A device's state in the listing: revoked; made for a join code that
    /// was never used (waiting, or expired: nothing can sync as it); or active.
    static func state(_ device: Store.Device, now: Int64) -> String {
        if device.revoked { return "revoked" }
        if let expires = device.joinExpiresMillis, device.lastSeenMillis == nil {
            return expires > now
                ? "waiting to join (its code works until \(Timestamp.iso8601(millis: expires)))"
                : "never joined (its code expired \(Timestamp.iso8601(millis: expires)); 'brsyncd device token' with --url makes a new one, 'device revoke' ends it)"
        }
        return "active"
    }
}

extension DeviceCommand {
    struct Revoke: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "revoke", abstract: "Revoke a device's token.")
        @OptionGroup var store: StoreOptions
        @Argument(help: "The account.") var account: String
        @Argument(help: "The device.") var device: String
        func run() throws {
            try store.open().revokeDevice(account: account, name: device)
            print("revoked device \(device) of account \(account)")
        }
    }
}

struct Backup: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "backup",
        abstract: "Copy the store to OUT with SQLite's online backup (safe while serving).",
        discussion:
            "The copy gets a new epoch: when it is restored, clients re-sync fully without losing unpushed edits.")
    @OptionGroup var store: StoreOptions
    @Argument(help: "The backup file to create.") var out: String
    func run() throws {
        guard case .sqlite(let path) = try store.location() else {
            throw CLIFailure(
                message:
                    "backup copies an SQLite store; back up PostgreSQL with its own tools (pg_dump, or your provider's snapshots)"
            )
        }
        guard access(path, F_OK) == 0 else {
            throw CLIFailure(message: "there is no store at \(path) to back up: check --db (or BRSYNCD_DB)")
        }
        try SyncStore(sqlite: path, connections: 2).backup(to: out)
        print("backed up to \(out)")
    }
}

/// The device `device add` and `device token` name, and how its first
/// credential goes out: a token, or (with --url and --ca) a join code.
struct DeviceArguments: ParsableArguments {
    @OptionGroup var store: StoreOptions
    @OptionGroup var join: JoinOptions
    @Argument(help: "The account.") var account: String
    @Argument(help: "The device's name.") var device: String

    /// Prints a join code instead of a token when --url and --ca ask for
    /// one (the device added first when `adding`); true when it did.
    func printedJoinCode(adding: Bool) throws -> Bool {
        try join.enroll(store, account: account, device: device, adding: adding)
    }
}
