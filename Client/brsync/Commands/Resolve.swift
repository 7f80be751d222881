import ArgumentParser
import Model
import Replica

struct Resolve: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Decide which browser opens a URL, offline. Exit 0 when decided, 3 when a picker would have to ask.")
    @OptionGroup var global: GlobalOptions
    @Argument(help: "The URL.") var url: String
    @Flag(help: "Print one JSON object: browser, rule, url, open, source.") var json = false

    struct Result: Encodable {
        let browser: String?
        let rule: String?
        let url: String
        let open: String?
        let source: String

        func encode(to encoder: any Encoder) throws {
            // Nulls are written, not left out: scripts read every key.
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(browser, forKey: .browser)
            try container.encode(rule, forKey: .rule)
            try container.encode(url, forKey: .url)
            try container.encode(open, forKey: .open)
            try container.encode(source, forKey: .source)
        }
        enum CodingKeys: String, CodingKey { case browser, rule, url, open, source }
    }

    func run() throws {
        let url = try NormalizedURL(url)
        let resolution = try global.openReplica().resolve(url)
        if json {
            try Output.json(Result(
                browser: resolution.browser?.browser.id, rule: resolution.rule?.pattern, url: url.absoluteString,
                open: resolution.open, source: resolution.source.rawValue))
        } else if let browser = resolution.browser, let open = resolution.open {
            let why = resolution.rule.map { "rule \($0.pattern)" } ?? "default browser"
            print("\(browser.browser.id)\t\(open)\t(\(why))")
        } else {
            print("no rule or default browser decides \(url); a picker would ask")
        }
        if resolution.source == .none { throw ExitCode(ExitStatus.pickerNeeded) }
    }
}

struct Explain: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show every rule considered for a URL, and why it won, lost or was skipped.")
    @OptionGroup var global: GlobalOptions
    @Argument(help: "The URL.") var url: String

    func run() throws {
        let url = try NormalizedURL(url)
        let (resolution, verdicts) = try global.openReplica().explain(url)
        print("url: \(url)")
        for verdict in verdicts {
            let text: String
            switch verdict.outcome {
            case .won: text = "WON"
            case .lost(let winner, let reason): text = "lost to \(winner): \(reason)"
            case .noMatch(let reason): text = "no match: \(reason)"
            case .skipped(let reason): text = "skipped: \(reason)"
            }
            print("  [\(verdict.rule.priority)] \(verdict.rule.pattern) -> \(verdict.rule.browser): \(text)")
        }
        if verdicts.isEmpty { print("  (no rules)") }
        switch resolution.source {
        case .rule: print("decision: \(resolution.browser?.browser.id ?? "?") by rule \(resolution.rule?.pattern ?? "?")")
        case .defaultBrowser: print("decision: \(resolution.browser?.browser.id ?? "?") (default browser)")
        case .none: print("decision: none; a picker would ask")
        }
        if let open = resolution.open { print("open: \(open)") }
    }
}
