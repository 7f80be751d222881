import ArgumentParser
import Desktop
import Glibc
import Model
import Replica

/// The environment as a dictionary, read once (detection and registration need several variables).
func environmentDictionary() -> [String: String] {
    var result: [String: String] = [:]
    var pointer = environ
    while let entry = pointer.pointee {
        let text = String(cString: entry)
        if let equals = text.firstIndex(of: "=") { result[String(text[..<equals])] = String(text[text.index(after: equals)...]) }
        pointer += 1
    }
    return result
}

public struct Detect: ParsableCommand {
    public init() {}
    public static let configuration = CommandConfiguration(
        commandName: "detect",
        abstract: "Find installed browsers from their desktop entries (native, Flatpak, Snap) and record how to launch them here.")
    @OptionGroup var global: GlobalOptions
    @Flag(help: "Print JSON.") var json = false

    public func run() throws {
        let environment = environmentDictionary()
        let detector = BrowserDetector(
            directories: BrowserDetector.standardDirectories(environment: environment),
            locale: environment["LC_ALL"] ?? environment["LC_MESSAGES"] ?? environment["LANG"],
            path: (environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":").map(String.init))
        let (found, skipped) = detector.detect()
        for skip in skipped { ExitStatus.warn("skipped \(skip.path): \(skip.reason)") }
        let replica = try global.openReplica()
        try replica.transaction {
            for browser in found {
                let known = try replica.findBrowser(named: browser.browserID) != nil
                if !known {
                    try replica.addBrowser(id: browser.browserID, name: browser.isCatalogBrowser ? nil : browser.name,
                                           format: nil, scheme: nil, exec: nil)
                }
                try replica.setDetected(browser.browserID, exec: browser.exec, desktopEntry: browser.path)
            }
        }
        if json {
            print(JSONValue.array(found.map { browser in
                .object(["id": .string(browser.browserID), "name": .string(browser.name), "desktopID": .string(browser.desktopID),
                         "path": .string(browser.path), "exec": .string(browser.exec), "catalog": .bool(browser.isCatalogBrowser),
                         "actions": .array(browser.actions.map { .object(["id": .string($0.id), "name": .string($0.name), "exec": .string($0.exec)]) })])
            }).jsonText)
            return
        }
        if found.isEmpty { print("no browsers found in \(detector.directories.joined(separator: ", "))") }
        Output.table(["ID", "NAME", "DESKTOP ENTRY", "LAUNCH"], found.map { [$0.browserID, $0.name, $0.desktopID, $0.exec] })
    }
}

public struct Open: ParsableCommand {
    public init() {}
    public static let configuration = CommandConfiguration(
        commandName: "open",
        abstract: "Open a link in the browser its rules decide (offline), launched from its desktop entry's Exec line; exit 3 when none decides.")
    @OptionGroup var global: GlobalOptions
    @Argument(help: "The URL.") var url: String

    public func run() throws {
        try Self.execute(home: global.resolvedHome, url: url)
    }

    /// The command itself, shared with the fast path in main.swift (a clicked
    /// link should not pay for parsing every command's options).
    public static func execute(home: String, url text: String) throws {
        let url = try NormalizedURL(text)
        let replica = try GlobalOptions.openReplica(home: home)
        let resolution = try replica.resolve(url)
        guard let browser = resolution.browser else {
            try Pick.ask(url: url, replica: replica)
            return
        }
        do {
            try launch(browser, url: url)
        } catch {
            ExitStatus.printError("\(browser.browser.id): \(error)")
            try Pick.ask(url: url, replica: replica) // a launch that fails falls back to the picker
        }
    }
}

/// Starts `browser` with `url` from its launch command.
func launch(_ browser: LocalBrowser, url: NormalizedURL) throws {
    guard let exec = browser.exec else { throw CLIFailure(message: "'\(browser.browser.id)' has no launch command here") }
    do {
        let command = try ExecCommand(exec)
        try Launcher.launch(command.expanded(.init(urls: [url.absoluteString], name: browser.browser.name, desktopFile: browser.desktopEntry)))
    } catch let problem as ExecCommand.Problem {
        throw CLIFailure(message: problem.description)
    } catch let failure as Launcher.Failure {
        throw CLIFailure(message: failure.description)
    }
}

public struct Pick: ParsableCommand {
    public init() {}
    public static let configuration = CommandConfiguration(
        commandName: "pick",
        abstract: "Ask which browser opens a link (on a terminal, or with a dmenu-style menu or zenity), and optionally remember the choice.",
        discussion: """
            On a terminal: arrows or 1-9 to choose, Enter to open, r to remember, e to edit the pattern, Esc to cancel.
            Without one: BRSYNC_PICKER (a command reading choices on stdin), else rofi, wofi, fuzzel, bemenu, dmenu or zenity.
            Remembering adds a rule with the highest priority. Cancelling opens nothing, changes nothing and exits 3.
            """)
    @OptionGroup var global: GlobalOptions
    @Argument(help: "The URL.") var url: String

    public func run() throws {
        let url = try NormalizedURL(url)
        try Self.ask(url: url, replica: try global.openReplica())
    }

    /// Asks, remembers when asked to, and launches; exit 3 when cancelled or no picker exists.
    static func ask(url: NormalizedURL, replica: Replica) throws {
        let usable = try replica.browsers().filter(\.isUsable)
        guard !usable.isEmpty else {
            throw CLIFailure(message: "no browser is usable here: run 'brsync browsers detect' or add one with --exec", code: ExitStatus.pickerNeeded)
        }
        let suggestion = (try? Suggest.loadList().suggestedPattern(for: url)) ?? url.host
        let names = usable.map { "\($0.browser.name) (\($0.browser.id))" }
        let outcome: PickerModel.Outcome
        if let chosen = TerminalPicker.run(url: url.absoluteString, choices: names, suggestedPattern: suggestion) {
            outcome = chosen
        } else if let command = MenuPicker.command(configured: environment("BRSYNC_PICKER"),
                                                   path: (environment("PATH") ?? "/usr/bin:/bin").split(separator: ":").map(String.init)) {
            outcome = MenuPicker.run(command, choices: names, suggestedPattern: suggestion)
        } else {
            throw CLIFailure(message: "no rule decides \(url), and no picker is available: run in a terminal, or install rofi, wofi, fuzzel, bemenu, dmenu or zenity (or set BRSYNC_PICKER)", code: ExitStatus.pickerNeeded)
        }
        guard case .open(let index, let pattern) = outcome else {
            throw CLIFailure(message: "cancelled; nothing opened", code: ExitStatus.pickerNeeded)
        }
        let browser = usable[index]
        if let pattern {
            let (rule, _) = try replica.addRule(pattern: pattern, browser: browser.browser.id, priority: nil)
            print("remembered: \(rule.pattern) -> \(rule.browser)")
        }
        try launch(browser, url: url)
    }
}

/// The path of the running brsync (for the desktop entry).
func currentExecutable() -> String {
    var buffer = [CChar](repeating: 0, count: 4096)
    let length = readlink("/proc/self/exe", &buffer, buffer.count - 1)
    guard length > 0 else { return CommandLine.arguments[0] }
    return String(decoding: buffer[0..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self)
}

public struct Install: ParsableCommand {
    public init() {}
    public static let configuration = CommandConfiguration(
        commandName: "install",
        abstract: "Make brsync the default web browser (http, https, HTML), remembering the previous default.")
    @OptionGroup var global: GlobalOptions

    public func run() throws {
        let registration = DefaultBrowserRegistration(environment: environmentDictionary(), brsyncHome: global.resolvedHome)
        let previous = try registration.install(executable: currentExecutable())
        print("installed \(registration.desktopFile); brsync is the default browser")
        if !previous.isEmpty { print("previous default: \(Set(previous.values).sorted().joined(separator: ", ")) ('brsync uninstall' puts it back)") }
    }
}

public struct Uninstall: ParsableCommand {
    public init() {}
    public static let configuration = CommandConfiguration(
        commandName: "uninstall", abstract: "Put the previous default browser back and remove brsync.desktop.")
    @OptionGroup var global: GlobalOptions

    public func run() throws {
        let registration = DefaultBrowserRegistration(environment: environmentDictionary(), brsyncHome: global.resolvedHome)
        let previous = try registration.uninstall()
        let restored = Set(previous.values.filter { !$0.isEmpty }).sorted()
        print(restored.isEmpty ? "uninstalled; no previous default to restore" : "uninstalled; default browser back to \(restored.joined(separator: ", "))")
    }
}
