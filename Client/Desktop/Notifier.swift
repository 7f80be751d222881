import Glibc
import JSON
import Model
import SystemServices

/// Desktop notifications (the freedesktop Notifications interface): how a
/// failure reaches a person who clicked a link and is not looking at a
/// terminal. `notify-send` when installed, else `gdbus` on the session bus.
/// https://specifications.freedesktop.org/notification-spec/latest/
public enum Notifier {
    /// The commands that would show `summary` and `body`, in the order tried.
    public static func commands(summary: String, body: String, path: [String]) -> [[String]] {
        // Text from elsewhere (URLs, synced names): no control characters, and
        // no markup (some servers read <b> and &amp; in the body).
        let title = DisplayText.printable(summary)
        let text = DisplayText.printable(body).replacingMarkup()
        var result: [[String]] = []
        if isInstalled("notify-send", path: path) {
            result.append(["notify-send", "--app-name=brsync", "--icon=web-browser", "--", title, text])
        }
        if isInstalled("gdbus", path: path) {
            result.append([
                "gdbus", "call", "--session", "--dest", "org.freedesktop.Notifications",
                "--object-path", "/org/freedesktop/Notifications", "--method", "org.freedesktop.Notifications.Notify",
                "brsync", "0", "web-browser", variantString(title), variantString(text), "[]", "{}", "10000",
            ])
        }
        return result
    }

    /// Shows a notification; false when no notifier worked (no session bus,
    /// nothing installed). Waits at most a few seconds.
    @discardableResult
    public static func notify(summary: String, body: String, path: [String]) -> Bool {
        for command in commands(summary: summary, body: body, path: path) {
            if let result = Subprocess.run(command, timeoutMilliseconds: 3_000), result.status == 0 { return true }
        }
        return false
    }

    static func isInstalled(_ program: String, path: [String]) -> Bool {
        path.contains { access("\($0)/\(program)", X_OK) == 0 }
    }

    /// A GVariant text literal for a string (gdbus parses its arguments).
    static func variantString(_ text: String) -> String {
        var output = "\""
        for character in text {
            if character == "\"" || character == "\\" { output.append("\\") }
            output.append(character)
        }
        return output + "\""
    }
}

extension String {
    /// `&`, `<` and `>` as entities, for text shown where markup is read.
    func replacingMarkup() -> String {
        var output = ""
        for character in self {
            switch character {
            case "&": output += "&amp;"
            case "<": output += "&lt;"
            case ">": output += "&gt;"
            default: output.append(character)
            }
        }
        return output
    }
}
