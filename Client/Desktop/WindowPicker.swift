import Glibc
import Model

/// The picker window, `brsync-picker` (GTK 4), beside `brsync`: started only
/// when a picker is needed and the session has a display, so neither
/// `resolve` nor a click a rule decides ever loads GTK. brsync writes a
/// ``Request`` on its standard input; it prints an ``Answer`` and exits 0, or
/// exits 1 when cancelled (2: a request it cannot read, 4: no display).
public enum WindowPicker {
    public static let programName = "brsync-picker"

    /// What the window shows.
    public struct Request: Sendable, Equatable {
        public struct Choice: Sendable, Equatable {
            public var id: String
            public var name: String
            /// The profile's arguments, for a browser made with `--from`.
            public var profile: String?
            /// The desktop entry's `Icon=`: a theme icon name or an absolute path.
            public var icon: String?
            public var isDefault: Bool

            public init(id: String, name: String, profile: String? = nil, icon: String? = nil, isDefault: Bool = false) {
                self.id = id
                self.name = name
                self.profile = profile
                self.icon = icon
                self.isDefault = isDefault
            }
        }

        public var url: String
        public var choices: [Choice]
        public var suggestedPattern: String

        public init(url: String, choices: [Choice], suggestedPattern: String) {
            self.url = url
            self.choices = choices
            self.suggestedPattern = suggestedPattern
        }

        public static let maxChoices = 100
        public static let maxBytes = 1 << 20

        public var json: JSONValue {
            .object([
                "url": .string(url), "suggestedPattern": .string(suggestedPattern),
                "choices": .array(choices.map { choice in
                    .object(["id": .string(choice.id), "name": .string(choice.name), "profile": choice.profile.map { .string($0) } ?? .null,
                             "icon": choice.icon.map { .string($0) } ?? .null, "default": .bool(choice.isDefault)])
                }),
            ])
        }

        /// Reads a request; anything malformed is refused with the reason.
        public init(parsing text: String) throws(Problem) {
            guard text.utf8.count <= Self.maxBytes else { throw Problem("the request is larger than \(Self.maxBytes) bytes") }
            let value: JSONValue
            do { value = try JSONValue.parse(text) } catch { throw Problem("the request is not JSON: \(error)") }
            guard case .object(let object) = value else { throw Problem("the request must be a JSON object") }
            guard let url = object["url"]?.stringValue, !url.isEmpty else { throw Problem("the request needs \"url\", a string") }
            guard let pattern = object["suggestedPattern"]?.stringValue else { throw Problem("the request needs \"suggestedPattern\", a string") }
            guard case .array(let items)? = object["choices"], !items.isEmpty, items.count <= Self.maxChoices else {
                throw Problem("the request needs \"choices\", 1 to \(Self.maxChoices) browsers")
            }
            var choices: [Choice] = []
            for (index, item) in items.enumerated() {
                guard case .object(let fields) = item, let id = fields["id"]?.stringValue, !id.isEmpty,
                      let name = fields["name"]?.stringValue else {
                    throw Problem("choice \(index + 1) needs \"id\" and \"name\", strings")
                }
                func optionalString(_ key: String) throws(Problem) -> String? {
                    switch fields[key] {
                    case nil, .null?: return nil
                    case .string(let text)?: return text
                    default: throw Problem("choice \(index + 1): \"\(key)\" must be a string")
                    }
                }
                choices.append(Choice(id: id, name: name, profile: try optionalString("profile"), icon: try optionalString("icon"),
                                      isDefault: fields["default"]?.boolValue ?? false))
            }
            self.init(url: url, choices: choices, suggestedPattern: pattern)
        }
    }

    /// What the person chose.
    public struct Answer: Sendable, Equatable {
        /// The index of the chosen browser in the request.
        public var choice: Int
        /// The pattern to remember (valid), or nil.
        public var remember: String?
        /// Why the pattern typed was not remembered (the link opens anyway).
        public var notRemembered: String?

        public init(choice: Int, remember: String? = nil, notRemembered: String? = nil) {
            self.choice = choice
            self.remember = remember
            self.notRemembered = notRemembered
        }

        public var json: JSONValue {
            .object(["choice": .int(Int64(choice)), "remember": remember.map { .string($0) } ?? .null,
                     "notRemembered": notRemembered.map { .string($0) } ?? .null])
        }

        /// Reads the window's answer for a request of `choiceCount` browsers.
        public init(parsing text: String, choiceCount: Int) throws(Problem) {
            let value: JSONValue
            do { value = try JSONValue.parse(text) } catch { throw Problem("the answer is not JSON") }
            guard case .object(let object) = value, let index = object["choice"]?.intValue, index >= 0, index < choiceCount else {
                throw Problem("the answer names no browser it was offered")
            }
            var remember = object["remember"]?.stringValue
            if let pattern = remember, (try? Pattern(pattern)) == nil { remember = nil }
            self.init(choice: Int(index), remember: remember, notRemembered: object["notRemembered"]?.stringValue)
        }
    }

    public struct Problem: Error, Sendable, Equatable, CustomStringConvertible {
        public let description: String
        public init(_ description: String) { self.description = description }
    }

    /// A typed pattern without the white space around it.
    public static func trimmed(_ pattern: String) -> String { pattern.trimmingCharacters() }

    /// Why `pattern` cannot be remembered, or nil (the window checks as you type).
    public static func problem(withPattern pattern: String) -> String? {
        let text = pattern.trimmingCharacters()
        if text.isEmpty { return "type a pattern to remember" }
        do {
            _ = try Pattern(text)
            return nil
        } catch {
            return error.reason
        }
    }

    /// The picker program beside `executable` (brsync), when the session has a
    /// display it can open and the program is there.
    public static func program(besides executable: String, environment: [String: String]) -> String? {
        let display = [environment["DISPLAY"], environment["WAYLAND_DISPLAY"]].contains { !($0 ?? "").isEmpty }
        guard display else { return nil }
        let folder = executable.split(separator: "/", omittingEmptySubsequences: false).dropLast().joined(separator: "/")
        let program = (folder.isEmpty ? "." : folder) + "/" + programName
        return access(program, X_OK) == 0 ? program : nil
    }

    public enum Result: Sendable, Equatable {
        case chosen(Answer)
        case cancelled
        /// It could not start or ended with an error; the reason says how.
        case failed(String)
    }

    /// Shows the window and waits for the person (at most 10 minutes). The
    /// request is made once the window program is starting (GTK's start-up
    /// takes longer than making it).
    public static func run(_ program: String, request makeRequest: () -> Request) -> Result {
        var request: Request?
        func made() -> Request {
            if let request { return request }
            let new = makeRequest()
            request = new
            return new
        }
        guard let result = Subprocess.run([program], input: made().json.jsonText + "\n", timeoutMilliseconds: 600_000) else {
            return .failed("\(programName) could not be started")
        }
        let choiceCount = made().choices.count
        let errors = DisplayText.printableLines(result.errors.split(separator: "\n").prefix(2).joined(separator: "; "))
        if result.timedOut { return .failed("\(programName) got no answer within 10 minutes") }
        switch result.status {
        case 0?:
            do {
                return .chosen(try Answer(parsing: result.output, choiceCount: choiceCount))
            } catch {
                return .failed("\(programName): \(error)")
            }
        case 1?: return .cancelled // GTK may have warned on stderr; 1 is only ever a cancel
        case let status?: return .failed("\(programName) exited with status \(status)\(errors.isEmpty ? "" : ": \(errors)")")
        case nil: return .failed("\(programName) was killed")
        }
    }
}
