import Glibc
import Model

/// The picker on a terminal (`/dev/tty`): raw mode, arrows and 1–9 to choose,
/// Enter to open, Esc to cancel, `r` to remember, `e` to edit the pattern.
public enum TerminalPicker {
    /// Runs the picker; nil when there is no terminal.
    public static func run(url: String, choices: [String], suggestedPattern: String) -> PickerModel.Outcome? {
        let tty = open("/dev/tty", O_RDWR | O_NOCTTY)
        guard tty >= 0 else { return nil }
        defer { close(tty) }
        var original = termios()
        guard tcgetattr(tty, &original) == 0 else { return nil }
        var raw = original
        raw.c_lflag &= ~tcflag_t(ICANON | ECHO)
        raw.c_cc.6 = 1 // VMIN: one byte at a time
        raw.c_cc.5 = 0 // VTIME
        tcsetattr(tty, TCSANOW, &raw)
        defer {
            tcsetattr(tty, TCSANOW, &original)
            write(tty, "\u{1B}[?25h\r\n")
        }
        var model = PickerModel(choices: choices, suggestedPattern: suggestedPattern)
        write(tty, "\u{1B}[?25l")
        var drawnLines = 0
        while true {
            drawnLines = draw(tty, url: url, model: model, previousLines: drawnLines)
            guard let key = readKey(tty) else { return .cancel }
            if let outcome = model.handle(key) { return outcome }
        }
    }

    static func width(_ tty: Int32) -> Int {
        var size = winsize()
        return ioctl(tty, UInt(TIOCGWINSZ), &size) == 0 && size.ws_col > 10 ? Int(size.ws_col) : 80
    }

    static func draw(_ tty: Int32, url: String, model: PickerModel, previousLines: Int) -> Int {
        let columns = width(tty)
        // The URL, names and pattern come from elsewhere: no escape sequences reach the terminal.
        var lines = ["Open " + PickerModel.shorten(DisplayText.printable(url), to: columns - 6)]
        for (index, choice) in model.choices.enumerated() {
            let marker = index == model.selected ? ">" : " "
            lines.append("\(marker) \(index < 9 ? "\(index + 1)" : " ") \(DisplayText.printable(choice))")
        }
        let box = model.remember ? "[x]" : "[ ]"
        let cursor = model.editingPattern ? "_" : ""
        lines.append("\(box) remember for: \(DisplayText.printable(model.pattern))\(cursor)")
        lines.append(model.editingPattern ? "type the pattern · Enter done" : "↑↓ or 1-9 choose · Enter open · r remember · e edit pattern · Esc cancel")
        var output = previousLines > 0 ? "\u{1B}[\(previousLines)A" : ""
        for line in lines { output += "\r\u{1B}[2K" + String(line.prefix(columns - 1)) + "\r\n" }
        write(tty, output)
        return lines.count
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
            if next == UInt8(ascii: "[") || next == UInt8(ascii: "O"), let code = readByte(tty, timeoutMilliseconds: 50) {
                switch code {
                case UInt8(ascii: "A"): return .up
                case UInt8(ascii: "B"): return .down
                default: return readKey(tty)
                }
            }
            return .escape
        case 0x0D, 0x0A: return .enter
        case 0x7F, 0x08: return .backspace
        case 0x09: return .tab
        case 0x03, 0x04: return .escape // Ctrl-C, Ctrl-D cancel
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

/// The picker without a terminal: a dmenu-style menu (`rofi -dmenu`,
/// `wofi --dmenu`, `fuzzel --dmenu`, `bemenu`, `dmenu`) or `zenity`,
/// whichever `BRSYNC_PICKER` names or is installed first.
public enum MenuPicker {
    /// The menu command to run, or nil when none is available.
    public static func command(configured: String?, path: [String]) -> [String]? {
        if let configured, !configured.isEmpty, let command = try? ExecCommand(configured) { return command.arguments }
        let candidates: [[String]] = [["rofi", "-dmenu", "-i", "-p", "Open with"], ["wofi", "--dmenu", "-p", "Open with"],
                                      ["fuzzel", "--dmenu"], ["bemenu", "-p", "Open with"], ["dmenu", "-i", "-p", "Open with"],
                                      ["zenity", "--list", "--title=Open with", "--column=Browser", "--hide-header"]]
        return candidates.first { candidate in path.contains { access("\($0)/\(candidate[0])", X_OK) == 0 } }
    }

    /// The lines offered: each browser, then each browser with "remember".
    /// Names come from other machines: control characters (a newline would
    /// make two lines) are shown as `�`.
    public static func lines(choices: [String], suggestedPattern: String) -> [String] {
        let shown = choices.map { DisplayText.printable($0) }
        let pattern = DisplayText.printable(suggestedPattern)
        return shown + shown.map { "\($0) · remember \(pattern)" }
    }

    /// Runs the menu with the lines on standard input (zenity: as arguments)
    /// and maps the chosen line back; `.cancel` when nothing was chosen.
    public static func run(_ command: [String], choices: [String], suggestedPattern: String) -> PickerModel.Outcome {
        let offered = lines(choices: choices, suggestedPattern: suggestedPattern)
        let isZenity = command.first.map { $0.hasSuffix("zenity") } ?? false
        // `--` ends zenity's options: a browser named `--help` is a row, not an option.
        let arguments = isZenity ? command + ["--"] + offered : command
        guard let chosen = runCapturingOutput(arguments, input: isZenity ? "" : offered.joined(separator: "\n") + "\n") else { return .cancel }
        let line = String(chosen.split(separator: "\n").first ?? "")
        guard let index = offered.firstIndex(of: line) else { return .cancel }
        return index < choices.count ? .open(index: index, rememberPattern: nil)
            : .open(index: index - choices.count, rememberPattern: suggestedPattern)
    }

    static func runCapturingOutput(_ arguments: [String], input: String) -> String? {
        var toChild: [Int32] = [0, 0]
        var fromChild: [Int32] = [0, 0]
        guard pipe(&toChild) == 0, pipe(&fromChild) == 0 else { return nil }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, toChild[0], 0)
        posix_spawn_file_actions_adddup2(&actions, fromChild[1], 1)
        for descriptor in toChild + fromChild { posix_spawn_file_actions_addclose(&actions, descriptor) }
        let argv = arguments.map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var pid: pid_t = 0
        let status = posix_spawnp(&pid, arguments[0], &actions, nil, argv, environ)
        close(toChild[0])
        close(fromChild[1])
        defer { close(fromChild[0]) }
        guard status == 0 else { close(toChild[1]); return nil }
        let bytes = Array(input.utf8)
        _ = bytes.withUnsafeBytes { Glibc.write(toChild[1], $0.baseAddress, $0.count) }
        close(toChild[1])
        var output: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = Glibc.read(fromChild[0], &buffer, buffer.count)
            if count <= 0 { break }
            output += buffer[0..<count]
        }
        var exitStatus: Int32 = 0
        waitpid(pid, &exitStatus, 0)
        guard (exitStatus >> 8) & 0xFF == 0 else { return nil } // the user cancelled
        return String(decoding: output, as: UTF8.self)
    }
}
