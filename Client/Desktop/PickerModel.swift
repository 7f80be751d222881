import Model

/// The state of the picker, as a pure state machine fed keys: what is
/// selected, whether to remember, the editable pattern. The terminal loop only
/// draws it and feeds it keys, so it is tested without a terminal.
public struct PickerModel: Sendable, Equatable {
    public enum Key: Sendable, Equatable {
        case up, down, enter, escape, backspace, tab
        case character(Character)
    }

    public enum Outcome: Sendable, Equatable {
        /// Open in the browser at this index; remember the pattern when set.
        case open(index: Int, rememberPattern: String?)
        case cancel
    }

    public let choices: [String]
    public private(set) var selected = 0
    public private(set) var remember = false
    public private(set) var pattern: String
    /// Typing goes to the pattern field.
    public private(set) var editingPattern = false
    /// Why the last Enter did not finish (an invalid or empty pattern to remember).
    public private(set) var message: String?

    /// - Parameter selected: the choice selected at first (the default
    ///   browser: a quick Enter opens what a click with no rule would).
    public init(choices: [String], suggestedPattern: String, selected: Int = 0) {
        self.choices = choices
        pattern = suggestedPattern
        self.selected = choices.indices.contains(selected) ? selected : 0
    }

    /// Feeds one key; returns the outcome when the picker is done. Opening
    /// with "remember" checks the pattern first: an empty or invalid one keeps
    /// the picker open, editing the pattern, with the reason in ``message``.
    public mutating func handle(_ key: Key) -> Outcome? {
        if key != .enter { message = nil }
        if editingPattern {
            switch key {
            case .enter, .tab: editingPattern = false
            case .escape: editingPattern = false
            case .backspace: if !pattern.isEmpty { pattern.removeLast() }
            // Ctrl-U clears the line, Ctrl-W takes the last word (as a shell's line editor);
            // other control characters are not typed into a pattern.
            case .character("\u{15}"): pattern = ""
            case .character("\u{17}"):
                while pattern.last?.isWhitespace == true { pattern.removeLast() }
                while let last = pattern.last, !last.isWhitespace, last != "/", last != "." { pattern.removeLast() }
                if pattern.last == "/" || pattern.last == "." { pattern.removeLast() }
            case .character(let character)
            where character.unicodeScalars.allSatisfy({ $0.value >= 0x20 && $0.value != 0x7F }):
                pattern.append(character)
            case .character: break
            case .up, .down: editingPattern = false
            }
            return nil
        }
        switch key {
        case .up: selected = (selected + choices.count - 1) % max(1, choices.count)
        case .down: selected = (selected + 1) % max(1, choices.count)
        case .enter:
            guard !choices.isEmpty else { return .cancel }
            return finish()
        case .escape, .character("q"): return .cancel
        case .character("r"), .character(" "): remember.toggle()
        case .character("e"), .tab:
            remember = true
            editingPattern = true
        case .character(let character):
            if let digit = character.wholeNumberValue, digit >= 1, digit <= min(9, choices.count) {
                selected = digit - 1
                return finish()
            }
        case .backspace: break
        }
        return nil
    }

    /// Opens the selected browser, remembering the pattern when asked to and
    /// it is valid; otherwise stays, editing the pattern, and says why.
    private mutating func finish() -> Outcome? {
        guard remember else { return .open(index: selected, rememberPattern: nil) }
        let text = pattern.trimmingCharacters()
        if text.isEmpty {
            message = "type a pattern to remember (or r: open without remembering)"
            editingPattern = true
            return nil
        }
        do {
            _ = try Pattern(text)
        } catch {
            message = "\(error.reason); fix the pattern (or r: open without remembering)"
            editingPattern = true
            return nil
        }
        return .open(index: selected, rememberPattern: text)
    }

    /// `text` shortened in the middle to `width` characters.
    public static func shorten(_ text: String, to width: Int) -> String {
        guard text.count > width, width > 3 else { return text }
        let keep = width - 1
        let head = text.prefix((keep + 1) / 2)
        let tail = text.suffix(keep / 2)
        return head + "…" + tail
    }
}
