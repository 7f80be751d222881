import ArgumentParser
import Desktop
import Glibc
import JSON
import Model
import Replica
import SystemServices

public struct BrowsersCommand: ParsableCommand {

    public init() {}
    public static let configuration = CommandConfiguration(
        commandName: "browsers",
        abstract: "List and manage the browsers rules can name.",
        subcommands: [
            List.self, Add.self, Remove.self, Enable.self, Disable.self, Default.self, Detect.self, Hide.self,
            Unhide.self, Order.self,
            Approve.self,
        ],
        defaultSubcommand: List.self)

    public struct List: ParsableCommand {

        public init() {}
        public static let configuration = CommandConfiguration(
            commandName: "list", abstract: "List browsers; * marks the default.")
        @OptionGroup var global: GlobalOptions
        @Flag(help: "Print JSON.") var json = false

        struct Entry: Encodable {
            let id, name, urlScheme, urlFormat: String
            let enabled, isDefault, usable, hiddenInPicker: Bool
            /// The launch command's program is found here (nil: no command).
            let commandFound: Bool?
            let exec: String?
            let pickerOrder: Int?
            /// A profile that does not run here: why (its arguments wait for approval, or cannot be placed).
            let held: String?
            let awaitsApproval: Bool
            enum CodingKeys: String, CodingKey {
                case id, name, urlScheme, urlFormat, enabled, usable, commandFound, exec, hiddenInPicker, pickerOrder,
                    held, awaitsApproval
                case isDefault = "default"
            }
        }

        /// The program a launch command starts, when it cannot be found here
        /// (not an executable file, nor one on PATH); nil when it can, or
        /// when there is no command.
        static func programProblem(_ exec: String?) -> String? {
            Launcher.programProblem(
                exec, path: (ProcessEnvironment.value("PATH") ?? "/usr/bin:/bin").split(separator: ":").map(String.init)
            )
        }

        public func run() throws {
            let browsers = try global.openReplica().browsers()
            if json {
                try Output.json(
                    encoding: browsers.map {
                        Entry(
                            id: $0.browser.id, name: $0.browser.name, urlScheme: $0.browser.urlScheme,
                            urlFormat: $0.browser.urlFormat, enabled: $0.browser.enabled, isDefault: $0.isDefault,
                            usable: $0.isUsable, hiddenInPicker: $0.browser.isHiddenInPicker,
                            commandFound: $0.exec == nil ? nil : Self.programProblem($0.exec) == nil, exec: $0.exec,
                            pickerOrder: $0.browser.pickerOrder, held: $0.profileHeld, awaitsApproval: $0.awaitsApproval
                        )
                    })
                return
            }
            if browsers.isEmpty {
                print("no browsers yet; add one with 'brsync browsers add ID --exec COMMAND'")
                return
            }
            Output.table(
                ["", "ID", "NAME", "STATE", "LAUNCH"],
                browsers.map { item in
                    var state = Self.state(of: item)
                    if item.browser.isHiddenInPicker { state += ", hidden in picker" }
                    return [
                        item.isDefault ? "*" : "", item.browser.id, item.browser.name, state, Self.launch(of: item),
                    ]
                })
        }
    }

    public struct Add: ParsableCommand {

        public init() {}
        public static let configuration = CommandConfiguration(
            commandName: "add",
            abstract:
                "Add a browser, or update one. Catalog ids (firefox, chrome and the rest of the catalog) take name and format from the catalog."
        )
        @OptionGroup var global: GlobalOptions
        @Argument(
            help: "A catalog id or iOS scheme, or a new id (a-z, 0-9, '.', '_', '-').",
            completion: Completions.browserOrCatalogIDs) var id: String
        @Option(help: "Display name.") var name: String?
        @Option(help: ArgumentHelp("URL format: {url}, {host}, {path}.", valueName: "format")) var format: String?
        @Option(help: ArgumentHelp("The iOS URL scheme.", valueName: "scheme")) var scheme: String?
        @Option(
            help: ArgumentHelp(
                "This machine's launch command; %u is the URL (device-local, not synced).", valueName: "command"))
        var exec: String?
        @Option(
            help: ArgumentHelp(
                "Make a profile of this browser: its launch command with --args added.", valueName: "browser"),
            completion: Completions.browserIDs)
        var from: String?
        @Option(
            parsing: .unconditional,
            help: ArgumentHelp(
                "With --from: the extra arguments, e.g. --args \"-P work\" (a Firefox or Chrome profile, a private window).",
                valueName: "args"))
        var args: String?

        public func validate() throws {
            if (from == nil) != (args == nil) { throw ValidationError("--from and --args go together") }
            if from != nil && exec != nil {
                throw ValidationError("--from takes the launch command from that browser; leave out --exec")
            }
        }

        public func run() throws {
            let added = try Self.add(
                to: global.openReplica(), id: id, name: name, format: format, scheme: scheme, exec: exec, from: from,
                args: args)
            for warning in added.warnings { ExitStatus.warn(warning) }
            print(added.summary)
        }

        /// Adds or updates a browser, or makes a profile of one (`from` and
        /// `args`), with the command's checks (a command that would hand
        /// links back to brsync is refused), as `browsers add` and the
        /// settings window do it.
        /// - Returns: the browser's id, what `browsers add` warns of, and its line.
        public static func add(
            to replica: Replica, id: String, name: String? = nil, format: String? = nil, scheme: String? = nil,
            exec: String? = nil, from: String? = nil, args: String? = nil
        ) throws -> (id: String, warnings: [String], summary: String) {
            // A command that hands the link to the default browser (brsync) would bring every link back here.
            if let exec, let arguments = try? ExecCommand(exec).arguments, let loop = Click.loopProblem(arguments) {
                throw CLIFailure(
                    message:
                        "--exec: \(loop). Give the browser's own command ('brsync browsers detect' finds installed browsers)"
                )
            }
            var name = name
            var format = format
            var profile: BrowserProfile?
            if let from, let args {
                let base = try replica.requireBrowser(named: from)
                guard base.browser.profile == nil else {
                    throw CLIFailure(
                        message:
                            "'\(base.browser.id)' is a profile itself; make the profile from '\(base.browser.profile?.base ?? "")'"
                    )
                }
                do {
                    profile = try BrowserProfile(base: base.browser.id, arguments: try ExecCommand(args).arguments)
                } catch { throw CLIFailure(message: "--args: \(error)") }
                name = name ?? "\(base.browser.name) (\(args))"
                format = format ?? base.browser.urlFormat
            }
            let id = try replica.addBrowser(
                id: id, name: name, format: format, scheme: scheme, exec: exec, profile: profile)
            let added = try replica.findBrowser(named: id)
            var warnings: [String] = []
            if let profile, let problem = ProfileArguments.problem(profile.arguments, base: profile.base) {
                // Approved here, as it was made here; elsewhere it waits for each machine's approval.
                warnings.append(
                    "these arguments run on this machine only, and on another once its user approves them there "
                        + "('brsync browsers approve \(id)'): \(problem)")
            }
            if let held = added?.profileHeld, added?.awaitsApproval == false {
                warnings.append("\(id) cannot run here: \(held)")
            }
            let summary: String
            if let profile, added?.execFrom != nil {
                summary =
                    "browser \(id): a profile of \(profile.base) (every machine runs its own \(profile.base) with \(profile.arguments.map(ExecCommand.quote).joined(separator: " ")))"
            } else if let profile {
                summary =
                    "browser \(id): a profile of \(profile.base), not usable here until \(profile.base) has a launch command ('brsync browsers detect')"
            } else {
                summary =
                    "browser \(id)\(added?.isUsable == true ? "" : " (not usable here until it has a launch command: --exec)")"
            }
            // Kept (another machine may have it, or it is installed later), but said now.
            if let exec, let problem = List.programProblem(exec) {
                warnings.append(
                    "\(id)'s command cannot start here yet: \(problem); the picker leaves it out until it can")
            }
            return (id, warnings, summary)
        }
    }

    public struct Approve: ParsableCommand {

        public init() {}
        public static let configuration = CommandConfiguration(
            commandName: "approve",
            abstract:
                "Let a profile run here with arguments synced data alone may not choose (shows what would run first).",
            discussion: """
                A profile's arguments sync, so another machine (or anyone who can write its record) would choose what this \
                one runs. Only what a profile needs runs on synced data alone (a profile name, a private or new window: \
                Deploy/SECURITY.md); anything else waits for this command, on each machine. The approval is for the exact \
                arguments: a later change of them waits again.
                """)
        @OptionGroup var global: GlobalOptions
        @Argument(help: "The profile's id.", completion: Completions.browserIDs) var id: String
        @Flag(
            help:
                "Approve without asking (read what it runs first: without --yes, and not on a terminal, it only shows it)."
        ) var yes = false
        @Flag(help: "Withdraw this machine's approval instead.") var withdraw = false

        public func run() throws {
            let replica = try global.openReplica()
            let browser = try replica.requireBrowser(named: id)
            let shownID = DisplayText.printable(browser.browser.id)
            guard let profile = browser.browser.profile else {
                throw CLIFailure(
                    message:
                        "'\(shownID)' is not a profile: it runs this machine's own command, which nothing synced chooses"
                )
            }
            if withdraw {
                let had = try replica.withdrawApproval(browser.browser.id)
                print(
                    had
                        ? "approval of \(shownID) withdrawn: it waits for approval again if its arguments need one"
                        : "\(shownID) had no approval here")
                return
            }
            let arguments = profile.arguments.map(ExecCommand.quote).joined(separator: " ")
            guard let problem = ProfileArguments.problem(profile.arguments, base: profile.base) else {
                print(
                    "\(shownID) needs no approval: its arguments (\(DisplayText.printable(arguments))) are ones synced data may choose"
                )
                return
            }
            if let held = browser.profileHeld, !browser.awaitsApproval {
                throw CLIFailure(message: "\(shownID) cannot run here, approved or not: \(DisplayText.printable(held))")
            }
            guard browser.awaitsApproval else {
                print(
                    "\(shownID) is approved here already (\(DisplayText.printable(arguments))); --withdraw takes that back"
                )
                return
            }
            print(try Self.question(browser, profile: profile, problem: problem, replica: replica))
            if !yes {
                guard isatty(0) == 1 else {
                    throw CLIFailure(
                        message: "nothing approved: run 'brsync browsers approve \(shownID) --yes' to approve it")
                }
                writeToStandardError("Approve? [y/N] ")
                guard let answer = readLine(strippingNewline: true), ["y", "yes"].contains(answer.lowercased()) else {
                    throw CLIFailure(message: "nothing approved", code: ExitStatus.cancelled)
                }
            }
            try replica.approveProfile(browser.browser.id)
            print(
                "approved here: \(shownID) runs with \(DisplayText.printable(arguments)) on this machine (a change of its arguments waits again)"
            )
        }
    }

    public struct Remove: ParsableCommand {

        public init() {}
        public static let configuration = CommandConfiguration(
            commandName: "rm", abstract: "Remove a browser. Rules naming it are kept (it may exist elsewhere).")
        @OptionGroup var global: GlobalOptions
        @Argument(help: "Browser id or scheme.", completion: Completions.browserIDs) var id: String

        public func run() throws {
            let replica = try global.openReplica()
            let removed = try replica.removeBrowser(named: id)
            let naming = try replica.rules().filter { $0.browser == removed }.count
            print("removed browser \(removed)")
            if naming > 0 {
                ExitStatus.warn("\(naming) rule(s) still name '\(removed)' and are skipped until it is back")
            }
        }
    }

    public struct Enable: ParsableCommand {

        public init() {}
        public static let configuration = CommandConfiguration(commandName: "enable", abstract: "Enable a browser.")
        @OptionGroup var global: GlobalOptions
        @Argument(help: "Browser id or scheme.", completion: Completions.browserIDs) var id: String
        public func run() throws { print("enabled \(try global.openReplica().setBrowserEnabled(named: id, true))") }
    }

    public struct Disable: ParsableCommand {

        public init() {}
        public static let configuration = CommandConfiguration(
            commandName: "disable", abstract: "Disable a browser: rules naming it are skipped.")
        @OptionGroup var global: GlobalOptions
        @Argument(help: "Browser id or scheme.", completion: Completions.browserIDs) var id: String
        public func run() throws { print("disabled \(try global.openReplica().setBrowserEnabled(named: id, false))") }
    }

    public struct Default: ParsableCommand {

        public init() {}
        public static let configuration = CommandConfiguration(
            commandName: "default",
            abstract: "Make a browser the default, used when no rule decides (--clear: no default; the picker asks).")
        @OptionGroup var global: GlobalOptions
        @Flag(help: "Have no default browser: links no rule decides go to the picker.") var clear = false
        @Argument(help: "Browser id or scheme.", completion: Completions.browserIDs) var id: String?

        public func validate() throws {
            if clear && !(id ?? "").isEmpty { throw ValidationError("give a browser or --clear, not both") }
            if !clear && id == nil {
                throw ValidationError("give a browser id (brsync browsers list), or --clear for none")
            }
        }

        public func run() throws {
            let replica = try global.openReplica()
            if clear || id == "" {
                try replica.clearDefaultBrowser()
                print("no default browser: links no rule decides go to the picker")
                return
            }
            print("default browser: \(try replica.setDefaultBrowser(named: id ?? ""))")
        }
    }

    public struct Hide: ParsableCommand {

        public init() {}
        public static let configuration = CommandConfiguration(
            commandName: "hide",
            abstract:
                "Hide a browser from the picker (synced). Rules naming it still open it; when every browser is hidden, the picker offers all."
        )
        @OptionGroup var global: GlobalOptions
        @Argument(help: "Browser id or scheme.", completion: Completions.browserIDs) var id: String
        public func run() throws {
            print("hidden from the picker: \(try global.openReplica().setHiddenInPicker(named: id, true))")
        }
    }

    public struct Unhide: ParsableCommand {

        public init() {}
        public static let configuration = CommandConfiguration(
            commandName: "unhide", abstract: "Show a hidden browser in the picker again.")
        @OptionGroup var global: GlobalOptions
        @Argument(help: "Browser id or scheme.", completion: Completions.browserIDs) var id: String
        public func run() throws {
            print("shown in the picker: \(try global.openReplica().setHiddenInPicker(named: id, false))")
        }
    }

    public struct Order: ParsableCommand {

        public init() {}
        public static let configuration = CommandConfiguration(
            commandName: "order",
            abstract:
                "Put browsers first in the picker, in the order given (synced); the others follow in their order. Without ids: show the order.",
            discussion:
                "In the picker window, Alt+Up and Alt+Down move the selected browser, and Ctrl+H hides it (saved when a browser is opened)."
        )
        @OptionGroup var global: GlobalOptions
        @Argument(help: "Browser ids or schemes, first to last.", completion: Completions.browserIDs) var ids:
            [String] = []
        public func run() throws {
            let replica = try global.openReplica()
            if !ids.isEmpty { try replica.setPickerOrder(ids) }
            let all = try replica.browsers().sorted { Browser.inPickerOrder($0.browser, $1.browser) }
            for (index, item) in all.enumerated() {
                let notes = [item.browser.isHiddenInPicker ? "hidden" : nil, item.isUsable ? nil : "not usable here"]
                    .compactMap { $0 }
                print("\(index + 1). \(item.browser.id)\(notes.isEmpty ? "" : " (\(notes.joined(separator: ", ")))")")
            }
        }
    }
}

extension BrowsersCommand.Approve {
    /// What approving `browser` (a synced profile whose arguments need an
    /// approval: `problem` says why) would let run here, and the advice, as
    /// the command and the settings window ask it.
    public static func question(
        _ browser: LocalBrowser, profile: BrowserProfile, problem: String, replica: Replica
    ) throws -> String {
        let shownID = DisplayText.printable(browser.browser.id)
        let arguments = profile.arguments.map(ExecCommand.quote).joined(separator: " ")
        let base = try replica.browsers().first { $0.browser.id == profile.base && $0.browser.profile == nil }
        let command = base?.exec.flatMap { try? profile.command(from: $0) }
        return """
            \(shownID) is a synced profile of \(DisplayText.printable(profile.base)). Here it would run:
              \(DisplayText.printable(command ?? "\(profile.base)'s command (none here yet) with \(arguments)"))
            Its arguments are not ones synced data alone may choose: \(DisplayText.printable(problem)).
            Approve only if you, on a machine of yours, made it so.
            """
    }
}

extension BrowsersCommand.List {
    /// Whether `item` can open links here, or why not, as `browsers list`
    /// and the settings window say it.
    public static func state(of item: LocalBrowser) -> String {
        if item.browser.enabled, item.isUsable, let problem = programProblem(item.exec) {
            return problem.hasSuffix("not found") ? "not installed (\(problem))" : "cannot start (\(problem))"
        }
        return !item.browser.enabled
            ? "disabled"
            : item.isUsable
                ? "usable"
                : item.awaitsApproval
                    ? "waits for approval ('brsync browsers approve \(item.browser.id)')"
                    : item.profileHeld != nil ? "cannot run here" : "no launch command"
    }

    /// How `item` starts here (`-` when it has no command here, with why).
    public static func launch(of item: LocalBrowser) -> String {
        item.exec.map { exec in item.execFrom.map { "\(exec)  (profile of \($0))" } ?? exec }
            ?? item.profileHeld.map { "- (profile of \(item.browser.profile?.base ?? "?"): \($0))" }
            ?? item.browser.profile.map { "- (profile of \($0.base), which has no launch command here)" }
            ?? "-"
    }
}
