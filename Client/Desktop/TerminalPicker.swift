import Glibc
import JSON
import Model

/// The picker on a terminal (`/dev/tty`): raw mode, arrows and 1–9 to choose,
/// Enter to open, Esc to cancel, `r` to remember, `e` to edit the pattern.
public enum TerminalPicker {
    /// Whether there is a terminal this process is in the foreground of (a
    /// background job would be stopped by reading it).
    public static var canAsk: Bool {
        let tty = open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC)
        guard tty >= 0 else { return false }
        defer { close(tty) }
        return tcgetpgrp(tty) == getpgrp()
    }

    /// Runs the picker; nil when there is no terminal, or this process is not
    /// in its foreground.
    public static func run(
        url: String, choices: [String], suggestedPattern: String, selected: Int = 0, note: String? = nil
    ) -> PickerModel.Outcome? {
        let tty = open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC)
        guard tty >= 0 else { return nil }
        defer { close(tty) }
        guard tcgetpgrp(tty) == getpgrp() else { return nil }
        var original = termios()
        guard tcgetattr(tty, &original) == 0 else { return nil }
        var raw = original
        // No signals from the keyboard either: Ctrl-C and Ctrl-\ come as keys and cancel, with
        // the terminal put back as it was (a signal left it raw, the menu drawn and the cursor
        // hidden); Ctrl-Z is ignored (a suspended picker came back without its raw mode).
        raw.c_lflag &= ~tcflag_t(ICANON | ECHO | ISIG)
        raw.c_cc.6 = 1 // VMIN: one byte at a time
        raw.c_cc.5 = 0 // VTIME
        tcsetattr(tty, TCSANOW, &raw)
        defer {
            tcsetattr(tty, TCSANOW, &original)
            write(tty, "\u{1B}[?25h\r\n")
        }
        var model = PickerModel(choices: choices, suggestedPattern: suggestedPattern, selected: selected)
        write(tty, "\u{1B}[?25l")
        var drawnLines = 0
        while true {
            drawnLines = draw(tty, url: url, model: model, previousLines: drawnLines, note: note)
            let outcome: PickerModel.Outcome
            if let key = readKey(tty) {
                guard let handled = model.handle(key) else { continue }
                outcome = handled
            } else {
                outcome = .cancel
            }
            // The menu gives way to one line saying what was chosen (a cancel
            // is said once, by the command's own message).
            let line = summary(outcome, url: url, choices: choices).map { String($0.prefix(width(tty) - 1)) }
            write(tty, "\u{1B}[\(drawnLines)A\r\u{1B}[J" + (line ?? ""))
            return outcome
        }
    }

    /// The line left on the terminal once the person chose; nil for a
    /// cancel, which the command says itself.
    static func summary(_ outcome: PickerModel.Outcome, url: String, choices: [String]) -> String? {
        switch outcome {
        case .open(let index, let pattern):
            let name = choices.indices.contains(index) ? DisplayText.printable(choices[index]) : "?"
            return "opening \(PickerModel.shorten(DisplayText.printable(url), to: 60)) in \(name)"
                + (pattern.map { ", and remembering \(DisplayText.printable($0))" } ?? "")
        case .cancel:
            return nil
        }
    }

    public static func width(_ tty: Int32) -> Int {
        var size = winsize()
        return ioctl(tty, UInt(TIOCGWINSZ), &size) == 0 && size.ws_col > 10 ? Int(size.ws_col) : 80
    }

    static func draw(_ tty: Int32, url: String, model: PickerModel, previousLines: Int, note: String? = nil) -> Int {
        let columns = width(tty)
        // The URL, names and pattern come from elsewhere: no escape sequences reach the terminal.
        var lines = ["Open " + PickerModel.shorten(DisplayText.printable(url), to: columns - 6)]
        if let note {
            // Wrapped, not cut: the note names the rule and the browser, which a cut in its middle lost.
            for (index, part) in wrap(DisplayText.printable(note), width: columns - 6, maxLines: 4).enumerated() {
                lines.append((index == 0 ? "  ! " : "    ") + part)
            }
        }
        for (index, choice) in model.choices.enumerated() {
            let marker = index == model.selected ? ">" : " "
            lines.append("\(marker) \(index < 9 ? "\(index + 1)" : " ") \(DisplayText.printable(choice))")
        }
        let box = model.remember ? "[x]" : "[ ]"
        let cursor = model.editingPattern ? "_" : ""
        lines.append("\(box) remember for: \(DisplayText.printable(model.pattern))\(cursor)")
        // Always a line (maybe empty), so the picker keeps its height.
        lines.append(model.message.map { "  ! " + DisplayText.printable($0) } ?? "")
        lines.append(
            model.editingPattern
                ? "type the pattern · Enter done"
                : "↑↓ or 1-9 choose · Enter open · r remember · e edit pattern · Esc cancel")
        var output = previousLines > 0 ? "\u{1B}[\(previousLines)A" : ""
        for line in lines { output += "\r\u{1B}[2K" + String(line.prefix(columns - 1)) + "\r\n" }
        write(tty, output)
        return lines.count
    }

    /// `text` in lines of at most `width` characters, broken at spaces (a
    /// word longer than a line is cut), at most `maxLines` of them (the last
    /// shortened with an ellipsis when more is left).
    static func wrap(_ text: String, width: Int, maxLines: Int) -> [String] {
        let width = max(10, width)
        var lines: [String] = []
        var current = ""
        for word in text.split(separator: " ", omittingEmptySubsequences: true) {
            let word = String(word.prefix(width))
            if current.isEmpty {
                current = word
            } else if current.count + 1 + word.count <= width {
                current += " " + word
            } else {
                lines.append(current)
                current = word
            }
        }
        if !current.isEmpty { lines.append(current) }
        guard lines.count > maxLines else { return lines }
        var kept = Array(lines.prefix(maxLines))
        kept[maxLines - 1] = String(kept[maxLines - 1].prefix(width - 1)) + "…"
        return kept
    }

    static func write(_ tty: Int32, _ text: String) {
        let bytes = Array(text.utf8)
        _ = Glibc.write(tty, bytes, bytes.count)
    }

    static func readByte(_ tty: Int32, timeoutMilliseconds: Int32 = -1) -> UInt8? {
        var descriptor = pollfd(fd: tty, events: Int16(POLLIN), revents: 0)
        guard poll(&descriptor, 1, timeoutMilliseconds) > 0 else { return nil }
        var byte: UInt8 = 0
        return Glibc.read(tty, &byte, 1) == 1 ? byte : nil
    }

    static func readKey(_ tty: Int32) -> PickerModel.Key? {
        guard let byte = readByte(tty) else { return nil }
        switch byte {
        case 0x1B:
            // An escape sequence (arrows) arrives at once; a lone Esc does not.
            guard let next = readByte(tty, timeoutMilliseconds: 50) else { return .escape }
            if next == UInt8(ascii: "[") || next == UInt8(ascii: "O"), let code = readByte(tty, timeoutMilliseconds: 50)
            {
                switch code {
                case UInt8(ascii: "A"): return .up
                case UInt8(ascii: "B"): return .down
                case UInt8(ascii: "0")...UInt8(ascii: "9"):
                    // Delete, Home, End, PgUp…: `ESC [ digits [; digits] ~`, read whole and ignored
                    // (its last byte was typed into the pattern).
                    var last = code
                    var count = 0
                    while last != UInt8(ascii: "~"), count < 8, let more = readByte(tty, timeoutMilliseconds: 50) {
                        last = more
                        count += 1
                    }
                    return readKey(tty)
                default: return readKey(tty)
                }
            }
            return .escape
        case 0x0D, 0x0A: return .enter
        case 0x7F, 0x08: return .backspace
        case 0x09: return .tab
        case 0x03, 0x04, 0x1C: return .escape // Ctrl-C, Ctrl-D, Ctrl-\ cancel
        case 0x1A: return readKey(tty) // Ctrl-Z: the picker is not suspended
        default:
            var bytes = [byte]
            if byte >= 0xC0 { // the rest of a UTF-8 character
                let count = byte >= 0xF0 ? 3 : byte >= 0xE0 ? 2 : 1
                for _ in 0..<count { if let more = readByte(tty, timeoutMilliseconds: 50) { bytes.append(more) } }
            }
            guard let character = String(validating: bytes, as: UTF8.self)?.first else { return readKey(tty) }
            return .character(character)
        }
    }
}
