import Glibc
import JSON
import Model
import SystemServices

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
            /// It can open a private window here (its desktop entry has the action).
            public var hasPrivateWindow: Bool

            public init(
                id: String, name: String, profile: String? = nil, icon: String? = nil, isDefault: Bool = false,
                hasPrivateWindow: Bool = false
            ) {
                self.id = id
                self.name = name
                self.profile = profile
                self.icon = icon
                self.isDefault = isDefault
                self.hasPrivateWindow = hasPrivateWindow
            }
        }

        public var url: String
        public var choices: [Choice]
        public var suggestedPattern: String
        /// Why the picker asks when a rule decided (its browser did not start), shown above the list.
        public var note: String?
        /// The app the link came from, when known: "remember" can be for its links only.
        public var fromApp: String?
        /// The choice selected first (an index in `choices`): the browser the
        /// deciding rule names, when the person asked to choose anyway; nil:
        /// the default browser.
        public var selected: Int?

        public init(
            url: String, choices: [Choice], suggestedPattern: String, note: String? = nil, fromApp: String? = nil,
            selected: Int? = nil
        ) {
            self.url = url
            self.choices = choices
            self.suggestedPattern = suggestedPattern
            self.note = note
            self.fromApp = fromApp
            self.selected = selected
        }

        /// The longest note shown.
        public static let maxNoteBytes = 1_000

        /// The "Remember" box's words for `pattern` as typed: what a rule
        /// made of it would reach (a domain, some pages, files).
        public static func rememberLabel(for pattern: String) -> String {
            switch (try? Pattern(WindowPicker.trimmed(pattern)))?.reach {
            case .site?: "Remember for this domain"
            case .pages?: "Remember for these pages"
            case .files?: "Remember for these files"
            case nil: "Remember"
            }
        }

        public static let maxChoices = 100
        public static let maxBytes = 1 << 20

        public var json: JSONValue {
            .object([
                "url": .string(url), "suggestedPattern": .string(suggestedPattern),
                "note": note.map { .string($0) } ?? .null,
                "fromApp": fromApp.map { .string($0) } ?? .null, "selected": selected.map { .int(Int64($0)) } ?? .null,
                "choices": .array(
                    choices.map { choice in
                        .object([
                            "id": .string(choice.id), "name": .string(choice.name),
                            "profile": choice.profile.map { .string($0) } ?? .null,
                            "icon": choice.icon.map { .string($0) } ?? .null, "default": .bool(choice.isDefault),
                            "privateWindow": .bool(choice.hasPrivateWindow),
                        ])
                    }),
            ])
        }

        /// Reads a request; anything malformed is refused with the reason.
        public init(parsing text: String) throws(Problem) {
            guard text.utf8.count <= Self.maxBytes else {
                throw Problem("the request is larger than \(Self.maxBytes) bytes")
            }
            let value: JSONValue
            do { value = try JSONValue.parse(text) } catch { throw Problem("the request is not JSON: \(error)") }
            guard case .object(let object) = value else { throw Problem("the request must be a JSON object") }
            guard let url = object["url"]?.stringValue, !url.isEmpty else {
                throw Problem("the request needs \"url\", a string")
            }
            guard let pattern = object["suggestedPattern"]?.stringValue else {
                throw Problem("the request needs \"suggestedPattern\", a string")
            }
            guard case .array(let items)? = object["choices"], !items.isEmpty, items.count <= Self.maxChoices else {
                throw Problem("the request needs \"choices\", 1 to \(Self.maxChoices) browsers")
            }
            var choices: [Choice] = []
            for (index, item) in items.enumerated() {
                guard case .object(let fields) = item, let id = fields["id"]?.stringValue, !id.isEmpty,
                    let name = fields["name"]?.stringValue
                else {
                    throw Problem("choice \(index + 1) needs \"id\" and \"name\", strings")
                }
                func optionalString(_ key: String) throws(Problem) -> String? {
                    switch fields[key] {
                    case nil, .null?: return nil
                    case .string(let text)?: return text
                    default: throw Problem("choice \(index + 1): \"\(key)\" must be a string")
                    }
                }
                choices.append(
                    Choice(
                        id: id, name: name, profile: try optionalString("profile"), icon: try optionalString("icon"),
                        isDefault: fields["default"]?.boolValue ?? false,
                        hasPrivateWindow: fields["privateWindow"]?.boolValue ?? false))
            }
            var note: String?
            switch object["note"] {
            case nil, .null?: note = nil
            case .string(let text)? where text.utf8.count <= Self.maxNoteBytes: note = text
            default: throw Problem("\"note\" must be a string of at most \(Self.maxNoteBytes) bytes")
            }
            var fromApp: String?
            switch object["fromApp"] {
            case nil, .null?: fromApp = nil
            case .string(let id)? where Pattern.isSourceID(id): fromApp = id
            default: throw Problem("\"fromApp\" must be an app's id (letters, digits, '.', '_', '-')")
            }
            var selected: Int?
            switch object["selected"] {
            case nil, .null?: selected = nil
            case .int(let index)? where (0..<Int64(choices.count)).contains(index): selected = Int(index)
            default: throw Problem("\"selected\" must be the index of a choice (0 to \(choices.count - 1))")
            }
            self.init(
                url: url, choices: choices, suggestedPattern: pattern, note: note, fromApp: fromApp, selected: selected)
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
        /// Open in a private window (only offered when the choice has one).
        public var privateWindow: Bool
        /// The browsers in the order the person left them (indices in the
        /// request; hidden ones left out), when they moved or hid any.
        public var order: [Int]?
        /// The browsers the person hid from the picker (indices in the request).
        public var hidden: [Int]

        public init(
            choice: Int, remember: String? = nil, notRemembered: String? = nil, privateWindow: Bool = false,
            order: [Int]? = nil, hidden: [Int] = []
        ) {
            self.choice = choice
            self.remember = remember
            self.notRemembered = notRemembered
            self.privateWindow = privateWindow
            self.order = order
            self.hidden = hidden
        }

        public var json: JSONValue {
            .object([
                "choice": .int(Int64(choice)), "remember": remember.map { .string($0) } ?? .null,
                "notRemembered": notRemembered.map { .string($0) } ?? .null, "privateWindow": .bool(privateWindow),
                "order": order.map { .array($0.map { .int(Int64($0)) }) } ?? .null,
                "hidden": .array(hidden.map { .int(Int64($0)) }),
            ])
        }

        /// Reads the window's answer for `request`. What does not fit it
        /// (an index it did not offer, an order that is not one, a private
        /// window it cannot open) is refused, not guessed.
        public init(parsing text: String, request: Request) throws(Problem) {
            let count = request.choices.count
            let value: JSONValue
            do { value = try JSONValue.parse(text) } catch { throw Problem("the answer is not JSON") }
            guard case .object(let object) = value, let index = object["choice"]?.intValue, index >= 0, index < count
            else {
                throw Problem("the answer names no browser it was offered")
            }
            func indices(_ key: String) throws(Problem) -> [Int]? {
                switch object[key] {
                case nil, .null?: return nil
                case .array(let items)?:
                    var result: [Int] = []
                    for item in items {
                        guard let number = item.intValue, number >= 0, number < count, !result.contains(Int(number))
                        else {
                            throw Problem("the answer's \"\(key)\" names a browser twice or one it was not offered")
                        }
                        result.append(Int(number))
                    }
                    return result
                default: throw Problem("the answer's \"\(key)\" must be a list of browsers")
                }
            }
            let hidden = try indices("hidden") ?? []
            let order = try indices("order")
            if let order, Set(order + hidden).count != count || order.count + hidden.count != count {
                throw Problem("the answer's order and hidden browsers are not the browsers it was offered")
            }
            guard !hidden.contains(Int(index)) else { throw Problem("the answer chose a browser it hid") }
            let privateWindow = object["privateWindow"]?.boolValue ?? false
            if privateWindow && !request.choices[Int(index)].hasPrivateWindow {
                throw Problem("the answer asks for a private window \(request.choices[Int(index)].id) has not")
            }
            var remember = object["remember"]?.stringValue
            if let pattern = remember, (try? Pattern(pattern)) == nil { remember = nil }
            self.init(
                choice: Int(index), remember: remember, notRemembered: object["notRemembered"]?.stringValue,
                privateWindow: privateWindow, order: order, hidden: hidden)
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
        let program = ProcessEnvironment.beside(executable, named: programName)
        return access(program, X_OK) == 0 ? program : nil
    }

    public enum Result: Sendable, Equatable {
        case chosen(Answer)
        case cancelled
        /// The window was shown and nobody chose within 10 minutes (it is
        /// closed): nobody is there to ask another way either.
        case unanswered
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
        guard let result = Subprocess.run([program], input: made().json.jsonText + "\n", timeoutMilliseconds: 600_000)
        else {
            return .failed("\(programName) could not be started")
        }
        let errors = DisplayText.printableLines(result.errors.split(separator: "\n").prefix(2).joined(separator: "; "))
        if result.timedOut { return .unanswered }
        switch result.status {
        case 0?:
            do {
                return .chosen(try Answer(parsing: result.output, request: made()))
            } catch {
                return .failed("\(programName): \(error)")
            }
        case 1?: return .cancelled // GTK may have warned on stderr; 1 is only ever a cancel
        case let status?:
            return .failed("\(programName) exited with status \(status)\(errors.isEmpty ? "" : ": \(errors)")")
        case nil: return .failed("\(programName) was killed")
        }
    }
}
