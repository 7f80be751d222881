import ArgumentParser
import JSON
import Model
import Replica
import SystemServices

public struct RulesCommand: ParsableCommand {

    public init() {}
    public static let configuration = CommandConfiguration(
        commandName: "rules",
        abstract: "List and manage rules: URLs matching a pattern open in a browser.",
        subcommands: [List.self, Add.self, Remove.self, Test.self],
        defaultSubcommand: List.self)

    public struct List: ParsableCommand {

        public init() {}
        public static let configuration = CommandConfiguration(
            commandName: "list", abstract: "List rules in the order they decide.")
        @OptionGroup var global: GlobalOptions
        @Flag(help: "Print JSON.") var json = false

        public func run() throws {
            let replica = try global.openReplica()
            let rules = try replica.rules()
            if json {
                try Output.json(encoding: rules)
                return
            }
            if rules.isEmpty {
                print("no rules yet; add one with 'brsync rules add PATTERN BROWSER'")
                return
            }
            // A rule whose browser cannot open links here decides nothing: said on its line, and how many below.
            var cannot: [String: String] = [:]
            for (rule, reason, _) in try replica.rulesThatCannotDecide(among: rules) {
                cannot[rule.pattern] = "decides nothing: \(reason)"
            }
            let notes = rules.map { rule in
                ([cannot[rule.pattern]] + [rule.keepsTracking ? "keeps tracking parameters" : nil]).compactMap { $0 }
                    .joined(separator: "; ")
            }
            let anyNotes = notes.contains { !$0.isEmpty }
            Output.table(
                ["PRIORITY", "PATTERN", "BROWSER", "CREATED"] + (anyNotes ? ["NOTES"] : []),
                zip(rules, notes).map { rule, note in
                    [
                        String(rule.priority), rule.pattern, rule.browser,
                        rule.createdAtMillis == 0 ? "-" : Timestamp.iso8601(millis: rule.createdAtMillis),
                    ]
                        + (anyNotes ? [note] : [])
                })
            if !cannot.isEmpty {
                print(
                    "\(cannot.count) rule(s) decide nothing here: the links they match go to the next rule, or the default browser "
                        + "('brsync doctor' says how to fix it)")
            }
        }
    }

    public struct Add: ParsableCommand {

        public init() {}
        public static let configuration = CommandConfiguration(
            commandName: "add",
            abstract: "Add a rule (or change the rule with the same pattern).",
            discussion: """
                Without --priority the rule gets a priority above every existing rule, so the newest rule wins \
                (a negative priority is written --priority=-5).

                Patterns (the phone's language; case does not matter):
                  github.com         the host and its subdomains; http or https, www. or not
                  *.google.com       every subdomain, and google.com itself
                  github.com/user/*  that path and below (* stops at /, ** does not)
                  github.com/user    /user and /user/repo, not /username
                  example.com:8443   that port only (no port: any port)
                  youtube.com/watch?v=*  a ? or # makes the query and fragment count
                  https://example.com  https only
                  file:///home/me/docs/**  local files

                A pattern matches the URL's host, never text elsewhere: google.com \
                does not match https://google.com@evil.com.

                With --from-app APP the rule decides only links clicked in that app, before any other rule: APP is \
                its desktop file's name without .desktop (com.slack.Slack), a Flatpak id, a Snap name or a program's \
                name, as the picker shows it ("From …"). The rule's pattern is then 'from:APP PATTERN'; brsync before \
                rules by app, and the phone, leave such rules aside.
                Try a pattern: brsync rules test PATTERN URL
                Every rule a URL meets: brsync explain URL
                """)
        @OptionGroup var global: GlobalOptions
        @Argument(help: "The pattern, e.g. github.com, *.google.com, github.com/user/*.") var pattern: String
        @Argument(help: "Browser id or scheme.", completion: Completions.browserIDs) var browser: String
        @Option(
            name: .customLong("from-app"),
            help: "Only links clicked in this app (its desktop-file id, Flatpak id or program).")
        var fromApp: String?
        @Option(help: "Priority: higher decides first.") var priority: Int?
        @Flag(
            inversion: .prefixedNo,
            help: "Open this rule's links with their tracking parameters (some sites need them); see 'brsync cleanup'.")
        var keepTracking: Bool?

        public func run() throws {
            let text = try Resolve.checkedApp(fromApp).map { "\(Pattern.sourcePrefix)\($0) \(pattern)" } ?? pattern
            let replica = try global.openReplica()
            let before = try replica.rule(pattern: text)
            let (rule, created) = try replica.addRule(
                pattern: text, browser: browser, priority: priority, keepTracking: keepTracking)
            print(Self.said(rule, before: created ? nil : before))
        }

        /// What `rules add` prints: the rule added, what changed of the
        /// rule held (`before`), or that nothing did.
        static func said(_ rule: UrlRule, before: UrlRule?) -> String {
            let whole =
                "\(rule.pattern) -> \(rule.browser) (priority \(rule.priority)\(rule.keepsTracking ? ", keeps tracking parameters" : ""))"
            guard let before else { return "added rule \(whole)" }
            var changed: [String] = []
            if before.pattern != rule.pattern { changed.append("pattern written \(rule.pattern)") }
            if before.browser != rule.browser { changed.append("browser \(before.browser) -> \(rule.browser)") }
            if before.priority != rule.priority { changed.append("priority \(before.priority) -> \(rule.priority)") }
            if before.keepsTracking != rule.keepsTracking {
                changed.append(rule.keepsTracking ? "keeps tracking parameters now" : "drops tracking parameters now")
            }
            guard !changed.isEmpty else { return "rule \(whole) unchanged" }
            return "updated rule \(rule.pattern): \(changed.joined(separator: ", "))"
        }
    }

    public struct Remove: ParsableCommand {

        public init() {}
        public static let configuration = CommandConfiguration(
            commandName: "rm", abstract: "Remove the rule with this pattern.")
        @OptionGroup var global: GlobalOptions
        @Argument(
            help: "The rule's pattern (compared in normal form: case and trailing '/' do not matter).",
            completion: Completions.rulePatterns)
        var pattern: String
        @Option(
            name: .customLong("from-app"), help: "The rule for this app's links (made with 'rules add --from-app').")
        var fromApp: String?

        public func run() throws {
            let text = try Resolve.checkedApp(fromApp).map { "\(Pattern.sourcePrefix)\($0) \(pattern)" } ?? pattern
            let rule = try global.openReplica().removeRule(pattern: text)
            print("removed rule \(rule.pattern) -> \(rule.browser)")
        }
    }

    public struct Test: ParsableCommand {

        public init() {}
        public static let configuration = CommandConfiguration(
            commandName: "test",
            abstract:
                "Check a pattern against a URL: prints 'match' (exit 0) or 'no match' (exit 1); invalid input exits 2.")
        @OptionGroup var global: GlobalOptions
        @Argument(help: "The pattern.", completion: Completions.rulePatterns) var pattern: String
        @Argument(help: "The URL.") var url: String
        @Option(name: .customLong("from-app"), help: "Test as for a link clicked in this app.") var fromApp: String?

        public func run() throws {
            let source = try Resolve.checkedApp(fromApp)
            let pattern = try Pattern(pattern)
            let given = try NormalizedURL.argument(url)
            // The URL as rules see it: cleaned (with this replica's list, else the default one).
            let url = ((try? global.openReplica().linkCleanup()) ?? LinkCleanup()).clean(given).url
            if url != given { print("cleaned: \(url)") }
            let result = pattern.match(MatchSubject(url, source: source))
            if result.isMatch {
                print("match")
            } else if result == .sourceDiffers || result == .sourceUnknown {
                print("no match: \(result.explanation) (--from-app names it)")
                throw ExitCode(ExitStatus.noMatch)
            } else {
                print("no match")
                throw ExitCode(ExitStatus.noMatch)
            }
        }
    }
}
