import ArgumentParser
import Desktop
import Glibc
import JSON
import Model
import Replica
import SystemServices

public struct Open: ParsableCommand {
    public init() {}
    public static let configuration = CommandConfiguration(
        commandName: "open",
        abstract:
            "Open a link or local file in the browser its rules decide (offline), else ask; what the desktop runs for every click.",
        discussion: """
            A local path or file: URL opens as a file (only file:// patterns match it). When brsync cannot serve the
            click (no replica, no usable browser, a launch or picker that fails), it says so in a desktop notification
            when no terminal shows its messages, and opens the link in the browser that was the default
            before 'brsync install'. Cancelling the picker opens nothing and exits 1; when no picker can ask it exits 3.
            """)
    @OptionGroup var global: GlobalOptions
    @Argument(help: "The URL or file.") var url: String

    public func run() throws {
        try Self.execute(home: global.resolvedHome, url: url)
    }

    /// The command itself, shared with the fast path in main.swift (a clicked
    /// link should not pay for parsing every command's options).
    public static func execute(home: String, url text: String) throws {
        try Click(home: home).open(text)
    }
}

public struct Pick: ParsableCommand {
    public init() {}
    public static let configuration = CommandConfiguration(
        commandName: "pick",
        abstract:
            "Ask which browser opens a link (on a terminal, in the picker window, or with a menu), and optionally remember the choice.",
        discussion: """
            On a terminal: arrows or 1-9 to choose, Enter to open, r to remember, e to edit the pattern, Esc to cancel.

            Without one (or from a background job): BRSYNC_PICKER (a command line run by sh -c, reading the choices on \
            stdin, with the link in $BRSYNC_URL), else the picker window (brsync-picker, GTK 4: 1-9 or arrows and Enter, \
            Esc cancels, Ctrl+R remember, Ctrl+E edit the pattern, Ctrl+F remember for links from the app it came from only), else rofi, wofi, fuzzel, bemenu, dmenu or zenity, \
            each only when the session has a display it can use; one that cannot start is skipped and named.

            Only browsers whose program can start here are offered; one chosen that does not start is left out and the \
            person asked again. Remembering adds (or raises) a rule to the highest priority. Cancelling opens nothing, \
            changes nothing and exits 1; when no picker can ask, it exits 3.
            """)
    @OptionGroup var global: GlobalOptions
    @Argument(help: "The URL or file.") var url: String

    public func run() throws {
        let given = try NormalizedURL.argument(url)
        try given.checkLocalFileExists()
        let replica = try global.openReplica()
        let url = try replica.linkCleanup().clean(given).url
        // A link a rule decides: the picker (and any message) says which rule.
        let resolution = try? replica.resolve(url)
        let why = resolution?.rule.map { "the rule '\($0.pattern)' would open it in '\($0.browser)'" }
        // Selected first, as when asked anyway after ask-next: the browser the rule would open.
        let preselect = resolution?.rule == nil ? nil : resolution?.browser?.browser.id
        switch try Self.ask(
            url: url, replica: replica, excluding: nil, why: why, preselect: preselect,
            environment: ProcessEnvironment.all())
        {
        case .opened: break
        case .cancelled: throw CLIFailure(message: Click.cancelled, code: ExitStatus.cancelled, isOutcome: true)
        case .unavailable(let reason): throw CLIFailure(message: reason, code: ExitStatus.pickerNeeded)
        case .launchFailed(let failure): throw failure
        }
    }

    enum Answer {
        case opened
        case cancelled
        /// No picker could ask; why.
        case unavailable(String)
        /// The chosen browser did not start.
        case launchFailed(CLIFailure)
    }

    /// Asks (the terminal when this process is in its foreground, else the
    /// menus in turn), remembers when asked to, and launches. A browser
    /// that does not start is left out and the person asked again, told
    /// why, until one starts, they cancel, or none is left (then
    /// ``Answer/launchFailed(_:)``: the click falls back to the previous
    /// default browser). Browsers whose program is not installed here are
    /// not offered.
    /// - Parameters:
    ///   - failed: a browser that just failed to start, not offered.
    ///   - why: when a rule decided and its browser did not start, what happened (shown in the picker and in messages).
    ///   - suggestedPattern: the pattern "remember" offers (a rule's own, to replace it); else the suggested one.
    ///   - fromApp: the app the link came from, when known ("remember" can be for its links only).
    ///   - preselect: the browser selected first (the deciding rule's, when the person asked to choose anyway); else the default.
    static func ask(
        url: NormalizedURL, replica: Replica, excluding failed: String?, why: String? = nil,
        suggestedPattern: String? = nil,
        fromApp: String? = nil, preselect: String? = nil, environment: [String: String]
    ) throws -> Answer {
        let path = (environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":").map(String.init)
        var excluded = failed.map { [$0] } ?? []
        var note = why
        var launchFailures: [String] = []
        while true {
            let (usable, missing) = try offered(replica, excluding: excluded, path: path)
            guard !usable.isEmpty else {
                if !launchFailures.isEmpty {
                    return .launchFailed(
                        CLIFailure(
                            message: launchFailures.joined(separator: "; ") + "; no other browser here can start"))
                }
                let notInstalled = missing.isEmpty ? "" : " (cannot start: \(missing.joined(separator: ", ")))"
                return .unavailable(
                    failed == nil && missing.isEmpty
                        ? "no browser is usable here: run 'brsync browsers detect' or add one with --exec"
                        : "no other browser here can start\(notInstalled): install one, or give it a command with 'brsync browsers add ID --exec COMMAND'"
                )
            }
            switch try askOnce(
                url: url, usable: usable, replica: replica, why: note, suggestedPattern: suggestedPattern,
                fromApp: fromApp,
                preselect: preselect, path: path, environment: environment)
            {
            case .answered(let answer): return answer
            case .didNotStart(let browser, let failure):
                // Asked again without it (and what shares its program).
                ExitStatus.warn("\(browser.browser.id): \(failure.message)")
                launchFailures.append("\(browser.browser.id): \(failure.message)")
                excluded.append(browser.browser.id)
                note = "'\(browser.browser.name)' did not start (\(failure.message)): choose another"
            }
        }
    }

    /// The browsers offered (``Replica/pickerBrowsers(excluding:)``), less
    /// those whose program is not installed here (named in `missing`) and
    /// those that run the program of one left out.
    static func offered(
        _ replica: Replica, excluding excluded: [String], path: [String]
    ) throws -> (usable: [LocalBrowser], missing: [String]) {
        let all = try replica.pickerBrowsers(excluding: excluded)
        // The programs of those left out (read only once one is).
        let failedPrograms =
            excluded.isEmpty
            ? []
            : Set(
                try replica.browsers().filter { excluded.contains($0.browser.id) }.compactMap {
                    Launcher.program($0.exec)
                })
        var missing: [String] = []
        let usable = all.filter { browser in
            if let program = Launcher.program(browser.exec), failedPrograms.contains(program) { return false }
            if let problem = Launcher.programProblem(browser.exec, path: path) {
                missing.append("\(browser.browser.id) (\(problem))")
                return false
            }
            return true
        }
        return (usable, missing)
    }

    /// What one round of asking came to.
    private enum Round {
        case answered(Answer)
        /// The browser chosen did not start: ask again without it.
        case didNotStart(LocalBrowser, CLIFailure)
    }

    private static func askOnce(
        url: NormalizedURL, usable: [LocalBrowser], replica: Replica, why given: String?, suggestedPattern: String?,
        fromApp: String? = nil, preselect: String? = nil, path: [String], environment: [String: String]
    ) throws -> Round {
        // The browser selected first: the one asked for (said in the note, so Enter is no surprise), else the default.
        let preselected = preselect.flatMap { id in usable.firstIndex { $0.browser.id == id } }
        let selected = preselected ?? usable.firstIndex(where: \.isDefault) ?? 0
        let why = preselected == nil ? given : given.map { "\($0) (selected: Enter opens it there)" }
        // Made when first needed: the window starts before it (loading the
        // Public Suffix List overlaps with GTK's start-up).
        var suggested = suggestedPattern
        func suggestion() -> String {
            if let suggested { return suggested }
            let made = (try? Suggest.loadList().suggestedPattern(for: url)) ?? url.host
            suggested = made
            return made
        }
        let names = usable.map { "\($0.browser.name) (\($0.browser.id))" }
        var asked = Asked()
        if TerminalPicker.canAsk,
            let chosen = TerminalPicker.run(
                url: url.absoluteString, choices: names, suggestedPattern: suggestion(),
                selected: selected, note: why)
        {
            asked.outcome = chosen
        } else {
            asked = askOutsideTerminal(
                url: url, usable: usable, replica: replica, names: names, suggestion: suggestion, why: why,
                given: given, fromApp: fromApp, preselected: preselected, path: path, environment: environment)
        }
        guard let outcome = asked.outcome else {
            let tried = asked.failures.isEmpty ? "" : " (\(asked.failures.joined(separator: "; ")))"
            let what = given ?? "no rule decides \(url)"
            return .answered(
                .unavailable(
                    "\(what), and no picker could ask\(tried): run in a terminal, or install rofi, wofi, fuzzel, bemenu, dmenu or zenity (or set BRSYNC_PICKER)"
                ))
        }
        if let notRemembered = asked.notRemembered { ExitStatus.warn("not remembered: \(notRemembered)") }
        guard case .open(let index, let pattern) = outcome else { return .answered(.cancelled) }
        return try open(
            usable[index], url: url, remembering: pattern, windowAnswer: asked.windowAnswer, shown: usable,
            replica: replica)
    }

    /// What a round of asking got: the person's choice (nil when no picker
    /// could ask), why pickers could not, and the window's extras.
    private struct Asked {
        var outcome: PickerModel.Outcome?
        var failures: [String] = []
        var notRemembered: String?
        var windowAnswer: WindowPicker.Answer?
    }

    /// Asks without a terminal: `BRSYNC_PICKER` first (a person's own
    /// choice), then the window, then the menus; one that cannot start is
    /// named and skipped.
    private static func askOutsideTerminal(
        url: NormalizedURL, usable: [LocalBrowser], replica: Replica, names: [String], suggestion: () -> String,
        why: String?, given: String?, fromApp: String?, preselected: Int?, path: [String],
        environment: [String: String]
    ) -> Asked {
        var asked = Asked()
        let menus = MenuPicker.menus(configured: environment["BRSYNC_PICKER"], path: path, environment: environment)
        let configured = menus.prefix { $0.shellCommand != nil }
        let window = WindowPicker.program(besides: currentExecutable(), environment: environment)
        if window == nil,
            [environment["DISPLAY"], environment["WAYLAND_DISPLAY"]].contains(where: { !($0 ?? "").isEmpty })
        {
            asked.failures.append("the picker window: \(WindowPicker.programName) is not beside \(currentExecutable())")
        }
        let askers =
            configured.map(Asker.menu) + (window.map { [Asker.window($0)] } ?? [])
            + menus.dropFirst(configured.count).map(Asker.menu)
        // Whether the displays answer, checked once before the first window or menu that needs one (a frozen one would hold the click).
        var checked: SessionDisplay?
        func display() -> SessionDisplay {
            if let checked { return checked }
            let found = SessionDisplay.check(environment: environment)
            checked = found
            return found
        }
        for asker in askers {
            let reason: String
            switch asker {
            case .menu(let menu) where !menu.canShow(on: display()):
                reason = "\(menu.name) cannot show: \(display().problems.joined(separator: "; "))"
                asked.failures.append(reason)
                ExitStatus.warn(reason)
                continue
            case .window where !display().any:
                reason = "the picker window cannot show: \(display().problems.joined(separator: "; "))"
                asked.failures.append(reason)
                ExitStatus.warn(reason)
                continue
            case .menu(let menu):
                switch MenuPicker.run(
                    // A menu selects nothing first: its note is the reason alone.
                    menu, url: url.absoluteString, choices: names, suggestedPattern: suggestion(), note: given)
                {
                case .chosen(let chosen): asked.outcome = chosen
                case .cancelled: asked.outcome = .cancel
                case .failed(let why): reason = why; asked.failures.append(reason); ExitStatus.warn(reason); continue
                }
            case .window(let program):
                let answer = WindowPicker.run(program) {
                    WindowPicker.Request(
                        url: url.absoluteString, choices: windowChoices(usable, replica: replica),
                        suggestedPattern: suggestion(),
                        note: why, fromApp: fromApp, selected: preselected)
                }
                switch answer {
                case .chosen(let answer):
                    asked.outcome = .open(index: answer.choice, rememberPattern: answer.remember)
                    asked.notRemembered = answer.notRemembered
                    asked.windowAnswer = answer
                case .cancelled: asked.outcome = .cancel
                case .unanswered:
                    ExitStatus.warn(
                        "the picker window waited 10 minutes and nobody chose: it was closed, and nothing opened")
                    asked.outcome = .cancel
                case .failed(let why): reason = why; asked.failures.append(reason); ExitStatus.warn(reason); continue
                }
            }
            break
        }
        return asked
    }

    /// Opens the chosen browser and, once it started, remembers the pattern.
    private static func open(
        _ browser: LocalBrowser, url: NormalizedURL, remembering pattern: String?, windowAnswer: WindowPicker.Answer?,
        shown usable: [LocalBrowser], replica: Replica
    ) throws -> Round {
        if let windowAnswer { try savePlaces(windowAnswer, of: usable, replica: replica) }
        do {
            if windowAnswer?.privateWindow == true {
                guard let command = privateWindowCommand(browser, among: try replica.browsers()) else {
                    throw CLIFailure(message: "'\(browser.browser.id)' has no private window here")
                }
                try launch(browser, url: url, command: command)
            } else {
                try launch(browser, url: url)
            }
        } catch let failure as CLIFailure {
            // Remembered only once it opened: a rule for a browser that cannot start would lose every later link too.
            if let pattern {
                ExitStatus.warn(
                    "not remembered: \(DisplayText.printable(pattern)) -> \(browser.browser.id) (it did not start)")
            }
            return .didNotStart(browser, failure)
        }
        if let pattern {
            // The highest priority, also for a pattern that exists already.
            let highest = try replica.maximumRulePriority() ?? 0
            let existing = try replica.rule(pattern: pattern)
            let priority =
                existing.map { $0.priority == highest && $0.browser == browser.browser.id ? highest : highest + 1 }
                ?? highest + 1
            let (rule, _) = try replica.addRule(pattern: pattern, browser: browser.browser.id, priority: priority)
            print("remembered: \(DisplayText.printable(rule.pattern)) -> \(rule.browser) (priority \(rule.priority))")
        }
        return .answered(.opened)
    }
}

/// Saves what the person changed in the window's list: browsers hidden, and
/// the order they left the others in.
func savePlaces(_ answer: WindowPicker.Answer, of shown: [LocalBrowser], replica: Replica) throws {
    for index in answer.hidden {
        print(
            "hidden from the picker: \(try replica.setHiddenInPicker(named: shown[index].browser.id, true)) (show it again with 'brsync browsers unhide')"
        )
    }
    guard let order = answer.order, order != Array(shown.indices).filter({ !answer.hidden.contains($0) }) else {
        return
    }
    let moved = order.map { shown[$0].browser.id }
    try replica.setPickerOrder(try replica.pickerOrder(afterMoving: moved))
    print("picker order: \(moved.joined(separator: ", "))")
}

/// The command that opens `browser` in a private window here: its desktop
/// entry's private-window action (for a profile, its base browser's with the
/// profile's arguments), else its launch command with the flag its catalog
/// browser takes (`--private-window`, `--incognito`, …); nil when neither.
func privateWindowCommand(_ browser: LocalBrowser, among all: [LocalBrowser]) -> String? {
    // A profile held here (its arguments wait for approval) runs in no window.
    guard browser.profileHeld == nil else { return nil }
    if let entry = browser.desktopEntry, let command = BrowserDetector.privateWindowCommand(ofEntryAt: entry) {
        return command
    }
    let profile = browser.browser.profile
    let base = profile.flatMap { profile in all.first { $0.browser.id == profile.base && $0.browser.profile == nil } }
    if let profile, let entry = base?.desktopEntry, let action = BrowserDetector.privateWindowCommand(ofEntryAt: entry),
        let command = try? profile.command(from: action)
    {
        return command
    }
    guard let exec = browser.exec else { return nil }
    return PrivateWindow.command(catalogID: base?.browser.id ?? browser.browser.id, exec: exec)
}

/// Who asks when no terminal can: a menu, or the window (`brsync-picker`).
enum Asker {
    case menu(MenuPicker.Menu)
    case window(String)
}

/// The browsers as the window shows them: name, profile, the desktop entry's
/// icon (a profile without an entry of its own shows its base browser's),
/// the default marked.
func windowChoices(_ usable: [LocalBrowser], replica: Replica) -> [WindowPicker.Request.Choice] {
    let all = (try? replica.browsers()) ?? usable
    func icon(_ browser: LocalBrowser) -> String? { browser.desktopEntry.flatMap(BrowserDetector.icon(ofEntryAt:)) }
    return usable.map { browser in
        var shown = icon(browser)
        if shown == nil, let base = browser.browser.profile?.base ?? browser.execFrom,
            let found = all.first(where: { $0.browser.id == base })
        {
            shown = icon(found)
        }
        return WindowPicker.Request.Choice(
            id: browser.browser.id, name: browser.browser.name,
            profile: browser.browser.profile.map { $0.arguments.joined(separator: " ") },
            icon: shown, isDefault: browser.isDefault,
            hasPrivateWindow: privateWindowCommand(browser, among: all) != nil)
    }
}

/// Starts `browser` with `url` from its launch command (or `command`, such
/// as its private window's). The child carries
/// `BRSYNC_OPENED`, so a command that hands the link back to brsync (the
/// default browser) is caught as a loop instead of relaunching without end.
func launch(_ browser: LocalBrowser, url: NormalizedURL, command given: String? = nil) throws {
    guard let exec = given ?? browser.exec else {
        throw CLIFailure(message: "'\(browser.browser.id)' has no launch command here")
    }
    do {
        let command = try ExecCommand(exec)
        if let loop = Click.loopProblem(command.arguments) {
            throw CLIFailure(
                message:
                    "'\(browser.browser.id)': \(loop); give it a browser's own command with 'brsync browsers add \(browser.browser.id) --exec COMMAND'"
            )
        }
        try start(
            command, url: url, browser: browser.browser.id, name: entryName(command, browser),
            desktopFile: browser.desktopEntry)
    } catch let problem as ExecCommand.Problem {
        throw CLIFailure(message: problem.description)
    } catch let failure as Launcher.Failure {
        throw CLIFailure(message: failure.description)
    }
}

/// Runs `command` for `url` (`%f` gets a file's local path), detached, with
/// `BRSYNC_OPENED` naming `browser` and the link.
func start(
    _ command: ExecCommand, url: NormalizedURL, browser: String, name: String?, desktopFile: String?
) throws(Launcher.Failure) {
    let arguments = expand(command, url: url, name: name, desktopFile: desktopFile)
    try Launcher.launch(arguments, environment: [Click.openedVariable: Click.openedValue(browser: browser, url: url)])
}

/// What `%c` stands for in `command`: the name in this machine's desktop
/// entry of the browser, else the browser's id (a slug), as the Desktop Entry
/// Specification has it. Never the synced name: anyone who can write the
/// record chooses it, and `%c` may be an argument of its own.
func entryName(_ command: ExecCommand, _ browser: LocalBrowser) -> String? {
    guard command.arguments.contains(where: { $0.contains("%c") }) else { return nil }
    return browser.desktopEntry.flatMap(BrowserDetector.name(ofEntryAt:)) ?? browser.browser.id
}

/// The command line that starts `command` for `url` (`%f` gets a file's local path).
func expand(_ command: ExecCommand, url: NormalizedURL, name: String?, desktopFile: String?) -> [String] {
    command.expanded(
        .init(urls: [url.absoluteString], files: url.localPath.map { [$0] }, name: name, desktopFile: desktopFile))
}

/// The command line `browser` is started with for `url` on this machine, or
/// nil when it has no usable launch command (for `resolve` and `explain`).
func launchArguments(_ browser: LocalBrowser, url: NormalizedURL) -> [String]? {
    guard let exec = browser.exec, let command = try? ExecCommand(exec) else { return nil }
    return expand(command, url: url, name: entryName(command, browser), desktopFile: browser.desktopEntry)
}
