import ArgumentParser
import Desktop
import JSON
import Model
import Replica
import SystemServices

public struct Resolve: ParsableCommand {

    public init() {}
    public static let configuration = CommandConfiguration(
        commandName: "resolve",
        abstract: "Decide which browser opens a URL, offline. Exit 0 when decided, 3 when a picker would have to ask.")
    @OptionGroup var global: GlobalOptions
    @Argument(help: "The URL.") var url: String
    @Flag(help: "Print one JSON object: browser, rule, url, open, source.") var json = false
    @Option(
        name: .customLong("from-app"), help: "Decide as for a link clicked in this app (rules made with --from-app).")
    var fromApp: String?

    public func run() throws {
        try Self.execute(home: global.resolvedHome, url: url, json: json, from: Self.checkedApp(fromApp))
    }

    /// `--from-app`, checked. A desktop file's name given with its
    /// `.desktop` is taken without it (apps are named without), and said so.
    static func checkedApp(_ app: String?) throws(CLIFailure) -> String? {
        guard var app else { return nil }
        if app.lowercased().hasSuffix(".desktop") {
            app = String(app.dropLast(8))
            ExitStatus.warn(
                "--from-app: apps are named without .desktop: taken as '\(DisplayText.printable(app.prefix(255)))'")
        }
        if let problem = Pattern.sourceIDProblem(app) {
            throw CLIFailure(message: "--from-app: \(problem)", code: ExitStatus.error)
        }
        return app
    }

    /// The command itself, shared with the fast path in main.swift.
    public static func execute(home: String, url text: String, json: Bool, from source: String? = nil) throws {
        let url = try NormalizedURL.argument(text)
        let resolution = try GlobalOptions.openReplica(home: home).resolve(url, from: source)
        if json {
            Output.json(Self.json(resolution))
        } else if let browser = resolution.browser {
            let why = resolution.rule.map { "rule \($0.pattern)" } ?? "default browser"
            print("\(browser.browser.id)\t\(resolution.target)\t(\(why))")
        } else if let why = try GlobalOptions.openReplica(home: home).whyUndecided(url, from: source) {
            print("nothing decides \(url): \(why); a picker would ask")
        } else {
            print("no rule or default browser decides \(url); a picker would ask")
        }
        if resolution.source == .none { throw ExitCode(ExitStatus.pickerNeeded) }
    }

    /// One line of JSON with every key present (null when nothing decided):
    /// `{"argv":[…],"browser":…,"given":…,"phone":…,"removed":[…],"rule":…,"source":…,"unwrapped":[…],"url":…}`:
    /// `url` is what is opened, `argv` the command line that opens it here,
    /// `phone` the phone's rendering for that browser.
    static func json(_ resolution: Resolution) -> JSONValue {
        func text(_ value: String?) -> JSONValue { value.map { .string($0) } ?? .null }
        let argv = resolution.browser.flatMap { launchArguments($0, url: resolution.target) }
        return JSONValue.object([
            "browser": text(resolution.browser?.browser.id), "rule": text(resolution.rule?.pattern),
            "url": .string(resolution.target.absoluteString), "given": .string(resolution.url.absoluteString),
            "argv": argv.map { .array($0.map(JSONValue.string)) } ?? .null, "phone": text(resolution.phoneOpen),
            "unwrapped": .array(
                resolution.cleanup.steps.map {
                    .object(["wrapper": .string($0.wrapper), "from": .string($0.from.absoluteString)])
                }),
            "removed": .array(resolution.cleanup.removed.map(JSONValue.string)),
            "source": .string(resolution.source.rawValue),
        ])
    }

    /// `resolve [--json] [--home DIR] URL` read without the full argument parser:
    /// a clicked link should not pay for parsing every command's options. Any
    /// other shape (help, unknown flags, a missing URL) returns nil and goes
    /// through the full parser, which gives the usual messages.
    public static func fastPath(
        _ arguments: [String], command: String = "resolve"
    ) -> (home: String?, url: String, json: Bool)? {
        guard arguments.first == command else { return nil }
        var home: String?
        var url: String?
        var json = false
        var rest = arguments.dropFirst()
        while let argument = rest.popFirst() {
            if argument == "--json" {
                json = true
            } else if argument == "--home", let value = rest.popFirst() {
                home = value
            } else if argument.hasPrefix("--home=") {
                home = String(argument.dropFirst("--home=".count))
            } else if argument == "--" {
                guard rest.count == 1, url == nil else { return nil }
                url = rest.popFirst()
            } else if argument.hasPrefix("-") || url != nil {
                return nil
            } else {
                url = argument
            }
        }
        guard let url else { return nil }
        return (home, url, json)
    }
}

public struct Explain: ParsableCommand {

    public init() {}
    public static let configuration = CommandConfiguration(
        commandName: "explain",
        abstract: "Show every rule considered for a URL, and why it won, lost or was skipped.")
    @OptionGroup var global: GlobalOptions
    @Argument(help: "The URL.") var url: String
    @Flag(help: "Print one JSON object: what resolve --json prints, and 'rules', each with its verdict.") var json =
        false
    @Option(name: .customLong("from-app"), help: "Explain as for a link clicked in this app.") var fromApp: String?

    public func run() throws {
        let url = try NormalizedURL.argument(url)
        let replica = try global.openReplica()
        let source = try Resolve.checkedApp(fromApp)
        let (resolution, verdicts) = try replica.explain(url, from: source)
        if json {
            guard case .object(var object) = Resolve.json(resolution) else { return }
            object["rules"] = .array(
                verdicts.map { verdict in
                    let (outcome, reason): (String, String?) =
                        switch verdict.outcome {
                        case .won: ("won", nil)
                        case .lost(let winner, let because): ("lost", "to \(winner): \(because)")
                        case .noMatch(let why): ("noMatch", why)
                        case .skipped(let why): ("skipped", why)
                        }
                    return .object([
                        "pattern": .string(verdict.rule.pattern), "browser": .string(verdict.rule.browser),
                        "priority": .int(Int64(verdict.rule.priority)), "outcome": .string(outcome),
                        "reason": reason.map(JSONValue.string) ?? .null,
                    ])
                })
            Output.json(JSONValue.object(object))
            return
        }
        for line in try Self.lines(url, resolution: resolution, verdicts: verdicts, replica: replica, source: source) {
            print(line)
        }
    }

    /// What `explain` prints for `url` (the settings window's "test a link"
    /// shows the same): the cleanup, every rule's verdict, the decision, and
    /// what would run.
    public static func lines(
        _ url: NormalizedURL, resolution: Resolution, verdicts: [RuleVerdict], replica: Replica, source: String?
    ) throws -> [String] {
        var lines: [String] = []
        lines.append("url: \(url)")
        for step in resolution.cleanup.steps { lines.append("  unwrapped: a \(step.wrapper) link (\(step.from))") }
        if !resolution.cleanup.steps.isEmpty { lines.append("  to: \(resolution.cleanup.unwrapped)") }
        if !resolution.cleanup.removed.isEmpty {
            lines.append("  tracking parameters removed: \(resolution.cleanup.removed.joined(separator: " "))")
        }
        if resolution.cleanup.url != url { lines.append("rules decide on: \(resolution.cleanup.url)") }
        for verdict in verdicts {
            let text: String
            switch verdict.outcome {
            case .won: text = "WON"
            case .lost(let winner, let reason): text = "lost to \(winner): \(reason)"
            case .noMatch(let reason): text = "no match: \(reason)"
            case .skipped(let reason): text = "skipped: \(reason)"
            }
            lines.append("  [\(verdict.rule.priority)] \(verdict.rule.pattern) -> \(verdict.rule.browser): \(text)")
        }
        if verdicts.isEmpty { lines.append("  (no rules)") }
        switch resolution.source {
        case .rule:
            lines.append(
                "decision: \(resolution.browser?.browser.id ?? "?") by rule \(resolution.rule?.pattern ?? "?")")
        case .defaultBrowser: lines.append("decision: \(resolution.browser?.browser.id ?? "?") (default browser)")
        case .none: lines.append("decision: none; a picker would ask")
        }
        // A matching rule passed over for its browser: which, and what fixes it.
        if verdicts.contains(where: {
            if case .skipped(let why) = $0.outcome { why.hasPrefix("browser '") } else { false }
        }),
            let why = try replica.whyUndecided(url, from: source)
        {
            lines.append("note: \(why)")
        }
        if let browser = resolution.browser {
            if resolution.rule?.keepsTracking == true, !resolution.cleanup.removed.isEmpty {
                lines.append("the rule keeps tracking parameters")
            }
            lines.append("open: \(resolution.target)")
            if let argv = launchArguments(browser, url: resolution.target) {
                lines.append("launch: \(argv.map(Self.shellQuoted).joined(separator: " "))")
            }
            if let phone = resolution.phoneOpen, phone != resolution.target.absoluteString {
                lines.append("phone: \(phone)")
            }
        }
        return lines
    }
}

extension Explain {
    /// `argument` as a shell reads it back: unquoted when safe, else in single quotes.
    static func shellQuoted(_ argument: String) -> String {
        let safe =
            !argument.isEmpty
            && argument.utf8.allSatisfy { byte in
                (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
                    || [
                        UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."), UInt8(ascii: "/"), UInt8(ascii: ":"),
                        UInt8(ascii: ","), UInt8(ascii: "+"), UInt8(ascii: "="), UInt8(ascii: "@"), UInt8(ascii: "%"),
                    ].contains(byte)
            }
        return safe
            ? argument
            : "'" + argument.split(separator: "'", omittingEmptySubsequences: false).joined(separator: "'\\''") + "'"
    }
}
