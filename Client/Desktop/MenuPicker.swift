import Glibc
import JSON
import Model
import SystemServices

/// The picker without a terminal: a dmenu-style menu (`rofi -dmenu`,
/// `wofi --dmenu`, `fuzzel --dmenu`, `bemenu`, `dmenu`) or `zenity`, the
/// menu `BRSYNC_PICKER` names first. A menu that cannot start (no display, a
/// crash, an error) is not a cancel: the next one is tried.
public enum MenuPicker {
    /// One menu program and how to run it for a URL.
    public struct Menu: Sendable, Equatable {
        /// Shown in messages ("rofi", or the configured command).
        public let name: String
        /// Runs through `sh -c` (a `BRSYNC_PICKER` command line, pipes and all).
        public let shellCommand: String?
        /// The program, when not a shell command.
        public let program: String?
        /// What the menu needs: "x11", "wayland", either ("display"), or nothing.
        let needs: String

        /// Whether it can show on what answers of `display` (a configured command is not checked).
        public func canShow(on display: SessionDisplay) -> Bool {
            switch needs {
            case "": true
            case "x11": display.x11
            case "wayland": display.wayland
            default: display.any
            }
        }

        func arguments(url: String, offered: [String]) -> [String] {
            if let shellCommand { return ["/bin/sh", "-c", shellCommand] }
            let shown = PickerModel.shorten(DisplayText.printable(url), to: 90)
            switch program {
            case "rofi":
                return ["rofi", "-dmenu", "-i", "-p", "Open with", "-mesg", shown.replacingMarkup(), "-no-custom"]
            case "wofi": return ["wofi", "--dmenu", "--insensitive", "--prompt", "Open \(shown) with"]
            case "fuzzel": return ["fuzzel", "--dmenu", "--prompt", "Open with: "]
            case "bemenu": return ["bemenu", "-i", "-l", "12", "-p", "Open \(shown) with"]
            case "dmenu": return ["dmenu", "-i", "-l", "12", "-p", "Open \(shown) with"]
            default:
                // zenity: the rows are arguments; `--` ends its options (a browser
                // named `--help` is a row).
                return [
                    "zenity", "--list", "--title=Open with", "--text=Open \(shown.replacingMarkup()) with:",
                    "--column=Browser", "--hide-header", "--width=640", "--height=420", "--",
                ] + offered
            }
        }
    }

    static let known: [(program: String, needs: String)] = [
        ("rofi", "display"), ("wofi", "wayland"), ("fuzzel", "wayland"), ("bemenu", "display"), ("dmenu", "x11"),
        ("zenity", "display"),
    ]

    /// The menus to try, in order: `BRSYNC_PICKER` (run by `sh -c`), then
    /// every installed menu that can show on this session's display.
    public static func menus(configured: String?, path: [String], environment: [String: String]) -> [Menu] {
        var result: [Menu] = []
        if let configured, !configured.isEmpty {
            result.append(
                Menu(name: "BRSYNC_PICKER (\(configured))", shellCommand: configured, program: nil, needs: ""))
        }
        let x11 = environment["DISPLAY"].map { !$0.isEmpty } ?? false
        let wayland = environment["WAYLAND_DISPLAY"].map { !$0.isEmpty } ?? false
        for (program, needs) in known where path.contains(where: { access("\($0)/\(program)", X_OK) == 0 }) {
            let usable = needs == "x11" ? x11 : needs == "wayland" ? wayland : x11 || wayland
            if usable { result.append(Menu(name: program, shellCommand: nil, program: program, needs: needs)) }
        }
        return result
    }

    /// The lines offered: each browser, then each browser with "remember".
    /// Names come from other machines: control characters (a newline would
    /// make two lines) are shown as `�`.
    public static func lines(choices: [String], suggestedPattern: String) -> [String] {
        let shown = choices.map { DisplayText.printable($0) }
        let pattern = DisplayText.printable(suggestedPattern)
        return shown + shown.map { "\($0) · remember \(pattern)" }
    }

    /// What one menu made of it.
    public enum Result: Sendable, Equatable {
        case chosen(PickerModel.Outcome)
        case cancelled
        /// It could not start or ended with an error; the reason says how.
        case failed(String)
    }

    /// Runs `menu` with the lines on standard input (zenity: as arguments)
    /// and maps the chosen line back. Closed without a choice (exit 1 and
    /// nothing on standard error, or an empty answer) is a cancel; anything
    /// else that yields no choice is a failure.
    /// - Parameter note: why it asks and where the link came from, in
    ///   `$BRSYNC_NOTE` (empty when there is nothing to say).
    public static func run(
        _ menu: Menu, url: String, choices: [String], suggestedPattern: String, note: String? = nil
    ) -> Result {
        let offered = lines(choices: choices, suggestedPattern: suggestedPattern)
        let arguments = menu.arguments(url: url, offered: offered)
        let input = menu.program == "zenity" ? "" : offered.joined(separator: "\n") + "\n"
        let environment = ["BRSYNC_URL": url, "BRSYNC_NOTE": DisplayText.printable(note ?? "")]
        guard let result = Subprocess.run(arguments, input: input, environment: environment) else {
            return .failed("\(menu.name) could not be started")
        }
        let errors = DisplayText.printableLines(result.errors.split(separator: "\n").prefix(2).joined(separator: "; "))
        if result.timedOut { return .failed("\(menu.name) did not answer within 2 minutes") }
        guard let status = result.status else { return .failed("\(menu.name) was killed") }
        let line = String(result.output.split(separator: "\n").first ?? "")
        if status == 0 {
            guard !line.isEmpty else { return .cancelled }
            guard let index = offered.firstIndex(of: line) else {
                return .failed("\(menu.name) answered a line it was not offered")
            }
            return .chosen(
                index < choices.count
                    ? .open(index: index, rememberPattern: nil)
                    : .open(index: index - choices.count, rememberPattern: suggestedPattern))
        }
        if status == 1 && errors.isEmpty { return .cancelled }
        return .failed("\(menu.name) exited with status \(status)\(errors.isEmpty ? "" : ": \(errors)")")
    }
}
