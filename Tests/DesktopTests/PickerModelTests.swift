import Testing

@testable import Desktop

@Suite struct PickerModelTests {
    func feed(_ keys: [PickerModel.Key], choices: Int = 3) -> (PickerModel.Outcome?, PickerModel) {
        var model = PickerModel(choices: (1...choices).map { "Browser \($0)" }, suggestedPattern: "github.com")
        for key in keys {
            if let outcome = model.handle(key) { return (outcome, model) }
        }
        return (nil, model)
    }

    @Test func arrowsAndEnter() {
        #expect(feed([.down, .down, .enter]).0 == .open(index: 2, rememberPattern: nil))
        #expect(feed([.up, .enter]).0 == .open(index: 2, rememberPattern: nil), "wraps around")
        #expect(feed([.character("2")]).0 == .open(index: 1, rememberPattern: nil))
        #expect(feed([.character("7")]).0 == nil, "no seventh browser")
    }

    /// The default browser starts selected: Enter at once opens it.
    @Test func theDefaultStartsSelected() {
        var model = PickerModel(choices: ["a", "b", "c"], suggestedPattern: "x", selected: 2)
        #expect(model.handle(.enter) == .open(index: 2, rememberPattern: nil))
        #expect(
            PickerModel(choices: ["a"], suggestedPattern: "x", selected: 5).selected == 0,
            "an index past the list selects the first")
    }

    @Test func rememberingWithTheSuggestedOrAnEditedPattern() {
        #expect(feed([.character("r"), .enter]).0 == .open(index: 0, rememberPattern: "github.com"))
        #expect(feed([.character("r"), .character("r"), .enter]).0 == .open(index: 0, rememberPattern: nil))
        let edited: [PickerModel.Key] =
            [.character("e")] + Array(repeating: .backspace, count: 10) + "gitlab.com".map { .character($0) }
            + [.enter, .down, .enter]
        #expect(feed(edited).0 == .open(index: 1, rememberPattern: "gitlab.com"))
        // Typing in the pattern field does not choose a browser.
        #expect(feed([.character("e"), .character("2")]).1.pattern == "github.com2")
    }

    /// The pattern line edits as a shell's does: Ctrl-U clears it, Ctrl-W
    /// takes the last part (up to a / or .); other control characters are
    /// not typed into it.
    @Test func controlKeysEditThePatternAndAreNeverTyped() {
        func typed(_ keys: [PickerModel.Key]) -> String { feed([.character("e")] + keys).1.pattern }
        let ctrlU = PickerModel.Key.character("\u{15}")
        let ctrlW = PickerModel.Key.character("\u{17}")
        #expect(typed([ctrlU]) == "")
        #expect(typed([ctrlU] + "example.net/bad".map { .character($0) } + [ctrlW]) == "example.net")
        #expect(typed([ctrlU] + "example.net/bad".map { .character($0) } + [ctrlW, ctrlW]) == "example")
        #expect(typed([.character("\u{01}"), .character("\u{1B}"), .character("\u{7F}")]) == "github.com")
        #expect(
            feed([.character("e"), ctrlU] + "gitlab.com".map { .character($0) } + [.enter, .enter]).0
                == .open(index: 0, rememberPattern: "gitlab.com"))
    }

    @Test func rememberingNeedsAValidPattern() {
        // An empty pattern: the picker stays, editing it, and says why.
        let empty: [PickerModel.Key] = [.character("e")] + Array(repeating: .backspace, count: 10) + [.enter, .enter]
        let (none, model) = feed(empty)
        #expect(none == nil && model.editingPattern && model.message?.contains("type a pattern") == true)
        // An invalid one: the reason, then fixed and opened.
        let invalid: [PickerModel.Key] =
            [.character("e")] + Array(repeating: .backspace, count: 10) + "a b".map { .character($0) } + [
                .enter, .enter,
            ]
        let (stayed, shown) = feed(invalid)
        #expect(stayed == nil && shown.message?.contains("whitespace") == true, "\(String(describing: shown.message))")
        let fixed = invalid + [.backspace, .backspace, .character("."), .character("b"), .enter, .enter]
        #expect(feed(fixed).0 == .open(index: 0, rememberPattern: "a.b"))
        // Or opened without remembering.
        #expect(feed(invalid + [.escape, .character("r"), .enter]).0 == .open(index: 0, rememberPattern: nil))
    }

    @Test func cancelChangesNothing() {
        #expect(feed([.character("r"), .escape]).0 == .cancel)
        #expect(feed([.character("q")]).0 == .cancel)
        #expect(feed([.character("e"), .escape, .escape]).0 == .cancel, "the first Esc leaves the pattern field")
    }

    @Test func longURLsAreShortenedInTheMiddle() {
        let url = "https://example.com/" + String(repeating: "a", count: 100) + "/end"
        let short = PickerModel.shorten(url, to: 40)
        #expect(
            short.count == 40 && short.hasPrefix("https://example.com/") && short.hasSuffix("/end")
                && short.contains("…"))
        #expect(PickerModel.shorten("short", to: 40) == "short")
    }

    @Test func menuLinesMapBack() {
        let lines = MenuPicker.lines(choices: ["Firefox", "Chrome"], suggestedPattern: "github.com")
        #expect(lines == ["Firefox", "Chrome", "Firefox · remember github.com", "Chrome · remember github.com"])
    }

    /// Names synced from elsewhere cannot add lines or escape sequences to a menu.
    @Test func menuLinesShowNamesFromElsewhereSafely() {
        let lines = MenuPicker.lines(choices: ["Fire\nfox", "--help", "\u{1B}[2Jx"], suggestedPattern: "a\u{202E}b")
        #expect(
            lines.count == 6
                && !lines.contains { $0.contains("\n") || $0.contains("\u{1B}") || $0.contains("\u{202E}") })
        #expect(lines[1] == "--help", "kept as text; zenity gets it after '--'")
    }

    /// The terminal picker's note is wrapped at spaces, never cut in the
    /// middle (it names the rule and the browser it would open).
    @Test func theNoteIsWrappedNotCut() {
        let note = "you asked to choose ('brsync ask-next'); the rule 'github.com' would open it in 'chrome'"
        let lines = TerminalPicker.wrap(note, width: 40, maxLines: 4)
        #expect(lines.allSatisfy { $0.count <= 40 } && lines.joined(separator: " ") == note, "\(lines)")
        let long = TerminalPicker.wrap(String(repeating: "word ", count: 100), width: 20, maxLines: 3)
        #expect(long.count == 3 && long[2].hasSuffix("…") && long.allSatisfy { $0.count <= 20 }, "\(long)")
    }
}
