import Model

/// Reads the input as a URL and a pattern (split at the first NUL byte), as
/// `brsync open` and `rules add` read them: neither may crash; a URL's normal
/// form reads back as itself (normalising is idempotent, so every machine
/// matches the same text); matching a parsed pattern against it never crashes
/// and agrees with the rule index; link cleanup gives URLs in normal form
/// and settles after one pass. The same two texts, read as a launch command
/// and a profile's arguments, go through the check of what synced profiles
/// may run (``fuzzProfile(exec:arguments:)``).
func fuzzURLAndPattern(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = UnsafeBufferPointer(start: data, count: size)
    let split = bytes.firstIndex(of: 0) ?? bytes.endIndex
    let urlText = String(decoding: bytes[..<split], as: UTF8.self)
    let patternText = split < bytes.endIndex ? String(decoding: bytes[(split + 1)...], as: UTF8.self) : "example.com"
    fuzzProfile(exec: urlText, arguments: patternText)
    guard let url = try? NormalizedURL(urlText) else { return 0 }
    guard let again = try? NormalizedURL(url.absoluteString) else {
        preconditionFailure("the normal form \(url.absoluteString) of \(urlText.debugDescription) is refused")
    }
    precondition(
        again == url,
        "normalising \(urlText.debugDescription) twice gives \(again.absoluteString), not \(url.absoluteString)")
    // Link cleanup: its results are in normal form, and cleaning a cleaned
    // link (not stopped at the depth limit) changes nothing.
    let cleaned = LinkCleanup().clean(url)
    for result in [cleaned.url, cleaned.unwrapped] {
        precondition(
            (try? NormalizedURL(result.absoluteString)) == result, "cleaning \(url) gives \(result), not in normal form"
        )
    }
    if cleaned.steps.count < LinkCleanup.maxDepth {
        precondition(LinkCleanup().clean(cleaned.url).url == cleaned.url, "cleaning \(url) twice does not settle")
    }
    guard let pattern = try? Pattern(patternText) else { return 0 }
    let matched = pattern.match(url).isMatch
    let index = RuleIndex(rules: [UrlRule(pattern: patternText, browser: "b", createdAtMillis: 0)])
    precondition(
        (index.decide(url) != nil) == matched,
        "the index and the pattern disagree on \(patternText.debugDescription) vs \(url)")
    // A rule for one app: the index and the pattern agree for a link from it,
    // and its normal text parses back to the same rule.
    if let source = pattern.source {
        precondition(!matched, "\(patternText.debugDescription) names an app and matched a link from none")
        let fromIt = pattern.match(MatchSubject(url, source: source)).isMatch
        precondition(
            (index.decide(url, source: source) != nil) == fromIt,
            "the index and the pattern disagree on \(patternText.debugDescription) from \(source)")
    }
    precondition(
        (try? Pattern(pattern.text))?.key == pattern.key,
        "\(pattern.text.debugDescription) does not parse back to the key \(pattern.key)")
    return 0
}

/// `exec` as a base browser's launch command and `text` as a profile's
/// arguments: arguments the check passes are listed switches and names (no
/// path, no option as a value, no field code), never for a browser outside
/// the catalog; a profile's command reads back as the base's words with the
/// arguments right after the browser's own program.
func fuzzProfile(exec: String, arguments text: String) {
    guard let arguments = try? ExecCommand(text).arguments else { return }
    for base in ["chromium", "edge", "opera", "firefox", "tor-browser", "epiphany", "falkon", "my-browser", "safari"] {
        guard ProfileArguments.problem(arguments, base: base) == nil else { continue }
        precondition(ProfileArguments.family(of: base) != nil, "\(base) has no family, and \(arguments) passed")
        for argument in arguments {
            // Byte by byte, as a browser reads its arguments.
            let bytes = Array(argument.utf8)
            let dots = bytes.count > 1 && (1..<bytes.count).contains { bytes[$0 - 1] == 0x2E && bytes[$0] == 0x2E }
            precondition(
                !bytes.contains(0x2F) && !bytes.contains(0x5C) && !bytes.contains(0x25) && !dots
                    && !bytes.contains { $0 < 0x20 },
                "\(argument.debugDescription) passed for \(base)")
        }
    }
    guard let profile = try? BrowserProfile(base: "firefox", arguments: arguments), let base = try? ExecCommand(exec),
        let at = try? base.browserProgramIndex(), let command = try? profile.command(from: exec)
    else { return }
    guard let built = try? ExecCommand(command).arguments else {
        preconditionFailure("\(command.debugDescription) does not read back")
    }
    let expected =
        Array(base.arguments[...at]) + arguments.map { $0.replacing("%", with: "%%") } + base.arguments[(at + 1)...]
    precondition(built == expected, "\(exec.debugDescription) + \(arguments) gave \(built)")
    let program = base.arguments[at].split(separator: "/").last.map(String.init) ?? ""
    precondition(!["env", "sh", "bash", "dash"].contains(program), "the arguments went to \(program)")
}
