import JSON
import Model

/// What resolving a URL decided.
public struct Resolution: Sendable {
    public enum Source: String, Sendable {
        /// A rule decided.
        case rule
        /// No rule decided; the default browser did.
        case defaultBrowser
        /// Nothing decided: a picker has to ask.
        case none
    }

    /// The URL as given.
    public let url: NormalizedURL
    /// What link cleanup did; rules decided on `cleanup.url`.
    public let cleanup: LinkCleanup.Result
    public let source: Source
    public let browser: LocalBrowser?
    public let rule: UrlRule?

    /// The URL opened: unwrapped, without tracking parameters unless the
    /// deciding rule keeps them.
    public var target: NormalizedURL { cleanup.opened(keepingTracking: rule?.keepsTracking ?? false) }

    /// The phone's rendering of the URL for the browser (its iOS scheme
    /// form, `googlechromes://…`), or nil when nothing decided. Linux opens
    /// ``target`` itself.
    public var phoneOpen: String? { browser.map { URLFormat.render($0.browser.urlFormat, url: target) } }
}

/// One rule's part in a decision, for `brsync explain`.
public struct RuleVerdict: Sendable {
    public enum Outcome: Sendable, Equatable {
        case won
        case lost(to: String, because: String)
        case noMatch(String)
        case skipped(String)
    }

    public let rule: UrlRule
    public let outcome: Outcome
}

extension Replica {
    /// Resolves `url` from the local replica, with no network: the first rule in
    /// precedence order that matches and names a browser usable here, else the
    /// default browser when usable, else nothing (a picker must ask). Rules
    /// whose browser is disabled, missing or not launchable here are skipped.
    /// - Parameter from: the id of the app the link came from (``Pattern/source``), when known.
    public func resolve(_ given: NormalizedURL, from source: String? = nil) throws -> Resolution {
        let cleanup = try linkCleanup().clean(given)
        let url = cleanup.url
        let browsers = try self.browsers()
        let candidates = try candidateRules(forHost: url.host)
        let index = RuleIndex(compiled: candidates)
        var usableCache: [String: LocalBrowser?] = [:]
        func usableBrowser(_ name: String) -> LocalBrowser? {
            if let cached = usableCache[name] { return cached }
            let found = (try? findBrowser(named: name, in: browsers)) ?? nil
            let usable = found?.isUsable == true ? found : nil
            usableCache[name] = usable
            return usable
        }
        if let decided = index.decide(url, source: source, isUsable: { usableBrowser($0.browser) != nil }),
            let browser = usableBrowser(decided.rule.browser)
        {
            return Resolution(url: given, cleanup: cleanup, source: .rule, browser: browser, rule: decided.rule)
        }
        if let defaultBrowser = browsers.first(where: \.isDefault), defaultBrowser.isUsable {
            return Resolution(url: given, cleanup: cleanup, source: .defaultBrowser, browser: defaultBrowser, rule: nil)
        }
        return Resolution(url: given, cleanup: cleanup, source: .none, browser: nil, rule: nil)
    }

    /// When nothing decides `url` although a rule matches it: what that rule
    /// chose and why it could not (its browser not known here, disabled, or
    /// without a launch command), with what fixes it. Nil when no rule matches.
    /// - Parameter only: the reasons to look at (all by default).
    public func whyUndecided(
        _ given: NormalizedURL, from source: String? = nil, only: (String) -> Bool = { _ in true }
    ) throws -> String? {
        // Only the rules that may match count here: those the index files under the URL's host.
        let (_, verdicts) = try explain(given, from: source, onlyCandidates: true)
        for verdict in verdicts {
            guard case .skipped(let reason) = verdict.outcome, reason.hasPrefix("browser '"), only(reason) else {
                continue
            }
            let browser = DisplayText.printable(verdict.rule.browser)
            let fix =
                reason.contains(Self.awaitingApprovalText)
                ? "'brsync browsers approve \(browser)' shows what it would run and approves it"
                : reason.hasSuffix("has no launch command on this machine") || reason.contains("cannot go to")
                    ? "give it one with 'brsync browsers add \(browser) --exec COMMAND' or 'brsync browsers detect'"
                    : reason.hasSuffix("is disabled")
                        ? "enable it with 'brsync browsers enable \(browser)'"
                        : "add it with 'brsync browsers add \(browser) --exec COMMAND'"
            return "the rule '\(DisplayText.printable(verdict.rule.pattern))' matches, but \(reason): \(fix)"
        }
        return nil
    }

    static let awaitingApprovalText = "wait for your approval on this machine"

    /// Why an enabled browser cannot open links here.
    static func unusableReason(_ browser: LocalBrowser) -> String {
        guard let held = browser.profileHeld else {
            return "browser '\(browser.browser.id)' has no launch command on this machine"
        }
        return browser.awaitsApproval
            ? "browser '\(browser.browser.id)' is a profile whose arguments \(awaitingApprovalText) (\(held))"
            : "browser '\(browser.browser.id)' is a profile that cannot run here: \(held)"
    }

    /// Why a rule naming browser `name` cannot decide here, or nil when it can:
    /// the browser is not known (removed, or never added), disabled, or
    /// cannot be launched here. `known` is false for the first.
    func browserProblem(_ name: String, in browsers: [LocalBrowser]) -> (reason: String, known: Bool)? {
        guard let browser = (try? findBrowser(named: name, in: browsers)) ?? nil else {
            return ("browser '\(name)' is not known here (removed, or never added)", false)
        }
        guard browser.browser.enabled else { return ("browser '\(browser.browser.id)' is disabled", true) }
        guard browser.isUsable else { return (Self.unusableReason(browser), true) }
        return nil
    }

    /// Every rule that cannot decide on this machine because of its browser
    /// (see ``browserProblem(_:in:)``), in the order of ``rules()``: links it
    /// matches go to the next rule, or the default browser.
    /// - Parameter among: the rules to look at (all of them by default).
    public func rulesThatCannotDecide(
        among given: [UrlRule]? = nil
    ) throws -> [(rule: UrlRule, reason: String, known: Bool)] {
        let browsers = try self.browsers()
        var cache: [String: (reason: String, known: Bool)?] = [:]
        return try (given ?? rules()).compactMap { rule in
            let problem = cache[rule.browser] ?? browserProblem(rule.browser, in: browsers)
            cache[rule.browser] = .some(problem)
            return problem.map { (rule, $0.reason, $0.known) }
        }
    }

    /// When a rule matches `url` but its browser is a profile held here
    /// (its arguments wait for approval, or cannot be given safely): which
    /// rule, why, and what to do. A click says so even when the default
    /// browser opens the link instead.
    public func heldProfileNote(_ given: NormalizedURL, from source: String? = nil) throws -> String? {
        guard try browsers().contains(where: { $0.profileHeld != nil }) else { return nil }
        return try whyUndecided(given, from: source) { $0.contains("is a profile") }
    }

    /// Every rule considered for `url`, in precedence order, and why it won,
    /// lost or was skipped. Looks at every rule, not just the indexed
    /// candidates, unless `onlyCandidates` (the rules filed under the URL's
    /// host, which are all that may match it: 20,000 rules are not parsed
    /// for that).
    public func explain(
        _ given: NormalizedURL, from source: String? = nil, onlyCandidates: Bool = false
    ) throws -> (resolution: Resolution, verdicts: [RuleVerdict]) {
        let browsers = try self.browsers()
        let resolution = try resolve(given, from: source)
        let subject = MatchSubject(resolution.cleanup.url, source: source)
        var compiled: [CompiledRule] = []
        var verdicts: [RuleVerdict] = []
        let considered = try onlyCandidates ? candidateRules(forHost: resolution.cleanup.url.host).map(\.rule) : rules()
        for rule in considered {
            do {
                compiled.append(try CompiledRule(rule))
            } catch {
                verdicts.append(RuleVerdict(rule: rule, outcome: .skipped(error.reason)))
            }
        }
        var winner: CompiledRule?
        var ordered: [RuleVerdict] = []
        for candidate in compiled.sorted(by: RulePrecedence.precedes) {
            let match = candidate.pattern.match(subject)
            guard match.isMatch else {
                ordered.append(RuleVerdict(rule: candidate.rule, outcome: .noMatch(match.explanation)))
                continue
            }
            if let problem = browserProblem(candidate.rule.browser, in: browsers) {
                ordered.append(RuleVerdict(rule: candidate.rule, outcome: .skipped(problem.reason)))
                continue
            }
            if let winner {
                ordered.append(
                    RuleVerdict(
                        rule: candidate.rule,
                        outcome: .lost(
                            to: winner.rule.pattern, because: RulePrecedence.reason(winner, before: candidate))))
            } else {
                winner = candidate
                ordered.append(RuleVerdict(rule: candidate.rule, outcome: .won))
            }
        }
        return (resolution, ordered + verdicts)
    }
}
