import Desktop
import Glibc
import Model
import Replica
import SystemServices

/// A clicked link, served so that it never vanishes: decided by the rules or
/// the picker; when brsync cannot serve it, opened in the browser that was the
/// default before `brsync install`; every failure shown, in a desktop
/// notification when no terminal shows brsync's messages.
struct Click {
    let home: String
    let environment: [String: String]
    /// Whether a person sees standard error (else: notifications).
    let hasTerminal: Bool

    init(home: String) {
        self.home = home
        environment = ProcessEnvironment.all()
        hasTerminal = isatty(2) == 1
    }

    var path: [String] { (environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":").map(String.init) }

    /// Serves the click; throws (after showing it) only when nothing opened.
    func open(_ text: String) throws {
        let url: NormalizedURL
        do {
            url = try NormalizedURL.argument(text)
            try url.checkLocalFileExists()
            try checkLoop(url)
        } catch {
            // Nothing can open what is not a link, and a loop is not rescued by
            // the browser that caused it.
            tell("brsync cannot open this link", Failures.message(of: error))
            throw error
        }
        do {
            try serve(url)
        } catch let failure as CLIFailure
            where failure.code == ExitStatus.cancelled && failure.message == Self.cancelled
        {
            throw failure // the person chose to open nothing
        } catch {
            try fallBack(url, because: error)
        }
    }

    static let cancelled = "cancelled; nothing opened"

    /// The picker's note with where the link came from (``SourceApp``).
    static func withSource(_ why: String?, _ found: Result<SourceApp, SourceApp.Unknown>) -> String? {
        let source: String? =
            switch found {
            case .success(let app): "from \(app.id)"
            case .failure(.portal): "from an unknown app (it came through the desktop portal, which does not say which)"
            case .failure(.gone): nil
            }
        let parts = [source, why].compactMap { $0 }
        return parts.isEmpty ? nil : parts.joined(separator: ": ")
    }

    private func serve(_ url: NormalizedURL) throws {
        // The key held while clicking is read first: it may be let go soon (hold-to-ask; nothing read when it is off).
        let held = HoldToAsk.isHeld(home: home, environment: environment) { problem in
            ExitStatus.warn(problem)
            tell("brsync could not tell whether a key was held", problem)
        }
        let replica = try GlobalOptions.openReplica(home: home)
        // Where the link came from: rules may name the app (about 0.1 ms).
        let source = SourceApp.find()
        let resolution = try replica.resolve(url, from: try? source.get().id)
        // A rule whose profile is held here (its arguments wait for approval) is passed over, and the person told why.
        if let held = try replica.heldProfileNote(url, from: try? source.get().id) {
            ExitStatus.warn(held)
            if !hasTerminal { Notifier.notify(summary: "brsync passed over a rule", body: held, path: path) }
        }
        let askedNext = AskNext.take(home: home)
        if askedNext || held != nil {
            // Asked for with 'brsync ask-next' or a held key: the picker, whatever decides; remembering offers the rule's own pattern.
            let asked = held.map { "you held \($0.label) to choose" } ?? "you asked to choose ('brsync ask-next')"
            let why =
                resolution.rule.map { "\(asked); the rule '\($0.pattern)' would open it in '\($0.browser)'" } ?? asked
            switch try Pick.ask(
                url: resolution.target, replica: replica, excluding: nil, why: Self.withSource(why, source),
                suggestedPattern: resolution.rule?.pattern,
                fromApp: try? source.get().id, preselect: resolution.rule == nil ? nil : resolution.browser?.browser.id,
                environment: environment)
            {
            case .opened: return
            case .cancelled: throw CLIFailure(message: Self.cancelled, code: ExitStatus.cancelled, isOutcome: true)
            case .unavailable(let reason) where resolution.browser != nil:
                // No picker could ask: the link still opens, as its rules decide.
                ExitStatus.warn(
                    "\(reason); opening it \(resolution.rule.map { "as the rule '\($0.pattern)' decides" } ?? "in the default browser")"
                )
            case .unavailable(let reason): throw CLIFailure(message: reason, code: ExitStatus.pickerNeeded)
            case .launchFailed(let failure):
                throw CLIFailure(message: "\(resolution.target) did not open: \(failure.message)")
            }
        }
        var failed: String?
        var failedBecause = ""
        var failures: [String] = []
        let url = resolution.target
        if let browser = resolution.browser {
            do {
                try launch(browser, url: url)
                return
            } catch let failure as CLIFailure {
                // The picker asks instead, without the browser that failed.
                ExitStatus.warn("\(browser.browser.id): \(failure.message); asking which browser opens it instead")
                failures.append("\(browser.browser.id): \(failure.message)")
                failed = browser.browser.id
                failedBecause = failure.message
            }
        }
        // A rule (or the default) decided and its browser did not start: the picker says so.
        let why =
            failed.map { failed in
                "\(resolution.rule.map { "the rule '\($0.pattern)' chose" } ?? "the default browser is") '\(failed)', which did not start (\(failedBecause))"
            }
            ?? (resolution.browser == nil ? (try? replica.whyUndecided(url, from: try? source.get().id)) ?? nil : nil)
        switch try Pick.ask(
            url: url, replica: replica, excluding: failed, why: Self.withSource(why, source),
            fromApp: try? source.get().id,
            environment: environment)
        {
        case .opened: return
        case .cancelled: throw CLIFailure(message: Self.cancelled, code: ExitStatus.cancelled, isOutcome: true)
        case .unavailable(let reason):
            throw CLIFailure(message: (failures + [reason]).joined(separator: "; "), code: ExitStatus.pickerNeeded)
        case .launchFailed(let failure):
            throw CLIFailure(message: "\(url) did not open: " + (failures + [failure.message]).joined(separator: "; "))
        }
    }

    /// Opens `url` in the previous default browser; throws `error` when there
    /// is none (or it fails too). Either way the person is told.
    private func fallBack(_ url: NormalizedURL, because error: any Error) throws {
        let reason = Failures.message(of: error)
        let registration = DefaultBrowserRegistration(environment: environment, brsyncHome: home)
        guard let previous = registration.previousBrowser(forScheme: url.scheme, environment: environment),
            Self.loopProblem(previous.exec.arguments) == nil
        else {
            tell("brsync could not open \(url)", reason)
            throw error
        }
        let name =
            previous.entry.localized("Name", locale: environment["LC_ALL"] ?? environment["LANG"]) ?? previous.entry.id
        do {
            try start(previous.exec, url: url, browser: previous.entry.id, name: name, desktopFile: previous.entry.path)
        } catch let failure {
            tell(
                "brsync could not open \(url)",
                "\(reason); \(name) (the previous default browser) did not start either: \(failure)")
            throw error
        }
        ExitStatus.printError(reason)
        writeToStandardError("brsync: opened \(url) in \(name), the default browser before 'brsync install'\n")
        tell("brsync opened the link in \(name)", reason)
    }

    /// Shows a failure: on standard error with a terminal, else (also) as a
    /// desktop notification.
    private func tell(_ summary: String, _ body: String) {
        guard !hasTerminal else { return } // main.swift prints the error itself
        Notifier.notify(summary: summary, body: body, path: path)
    }

    // MARK: Relaunch loops

    /// Set in every browser brsync starts: when, which browser, which link.
    static let openedVariable = "BRSYNC_OPENED"
    /// A link back within this time is a loop, not a person clicking again.
    static let loopWindowMilliseconds: Int64 = 20_000

    static func openedValue(browser: String, url: NormalizedURL) -> String {
        "\(Clock.wallMillis()) \(browser) \(url.absoluteString)"
    }

    /// Refuses a link that a browser brsync just started handed back to it.
    func checkLoop(_ url: NormalizedURL) throws {
        guard let value = environment[Self.openedVariable] else { return }
        let parts = value.split(separator: " ", maxSplits: 2).map(String.init)
        guard parts.count == 3, let started = Int64(parts[0]), parts[2] == url.absoluteString,
            Clock.wallMillis() - started < Self.loopWindowMilliseconds
        else { return }
        throw CLIFailure(
            message:
                "'\(parts[1])' handed \(url) back to brsync (its command opens the default browser, which is brsync): give it a browser's own command with 'brsync browsers add \(parts[1]) --exec COMMAND'"
        )
    }

    /// Programs that hand a link to the default browser, which is brsync
    /// once it is installed: a browser started with one of them sends the
    /// link straight back.
    static let linkDispatchers: Set<String> = [
        "xdg-open", "sensible-browser", "x-www-browser", "www-browser", "gnome-www-browser", "exo-open", "kde-open",
        "kde-open5",
        "kde-open6", "gnome-open", "gvfs-open", "mimeopen", "wslview", "brsync-open",
    ]

    /// Why a launch command would bring its link back to brsync, or nil.
    static func loopProblem(_ arguments: [String]) -> String? {
        guard let program = arguments.first else { return nil }
        let name = program.split(separator: "/").last.map(String.init) ?? program
        if leadsToBrsync(program) { return "its command runs brsync itself (\(program))" }
        if linkDispatchers.contains(name) || (name == "gio" && arguments.dropFirst().first == "open")
            || (name.hasPrefix("kioclient") && arguments.dropFirst().first == "exec")
        {
            return
                "its command (\(name)) opens the default browser, which is brsync once it is installed: the link would come back here"
        }
        return nil
    }

    /// Whether a launch command's program is brsync itself.
    static func leadsToBrsync(_ program: String) -> Bool {
        let name = program.split(separator: "/").last.map(String.init) ?? program
        if name == "brsync" { return true }
        guard program.hasPrefix("/") else { return false }
        return realPath(program) == realPath(currentExecutable())
    }

    static func realPath(_ path: String) -> String? {
        guard let resolved = realpath(path, nil) else { return nil }
        defer { free(resolved) }
        return String(cString: resolved)
    }
}
