import JSON

/// An `Exec` line split into arguments by the Desktop Entry Specification's
/// quoting rules, with its field codes expanded for a URL — no shell involved.
/// https://specifications.freedesktop.org/desktop-entry-spec/latest/exec-variables.html
public struct ExecCommand: Sendable, Equatable {
    /// Arguments as written; field codes are still in them.
    public let arguments: [String]

    public struct Problem: Error, Sendable, Equatable, CustomStringConvertible {
        public let exec: String
        public let reason: String
        public var description: String { "cannot use the command '\(exec)': \(reason)" }
    }

    /// Splits an (already unescaped) Exec value: arguments separated by spaces;
    /// double quotes group, and inside them `\"`, `` \` ``, `\$`, `\\` escape.
    public init(_ exec: String) throws(Problem) {
        var arguments: [String] = []
        var current = String.UnicodeScalarView()
        var hasCurrent = false
        var quoted = false
        // Read scalar by scalar, as the specification reads bytes: a space
        // followed by a combining mark is still a space (as a Character the
        // two would be one, and two arguments would run together).
        var iterator = exec.unicodeScalars.makeIterator()
        while let scalar = iterator.next() {
            if quoted {
                if scalar == "\\" {
                    guard let next = iterator.next() else {
                        throw Problem(exec: exec, reason: "it ends inside an escape")
                    }
                    guard "\"`$\\".unicodeScalars.contains(next) else {
                        throw Problem(exec: exec, reason: "'\\\(Character(next))' is not a valid escape inside quotes")
                    }
                    current.append(next)
                } else if scalar == "\"" {
                    quoted = false
                } else {
                    current.append(scalar)
                }
            } else if scalar == "\"" {
                quoted = true
                hasCurrent = true
            } else if scalar == " " || scalar == "\t" {
                if hasCurrent || !current.isEmpty { arguments.append(String(current)) }
                current = String.UnicodeScalarView()
                hasCurrent = false
            } else {
                current.append(scalar)
            }
        }
        guard !quoted else { throw Problem(exec: exec, reason: "a quote is not closed") }
        if hasCurrent || !current.isEmpty { arguments.append(String(current)) }
        guard !arguments.isEmpty else { throw Problem(exec: exec, reason: "it is empty") }
        self.arguments = arguments
    }

    /// An argument written so that ``init(_:)`` reads it back (quoted when needed).
    public static func quote(_ argument: String) -> String {
        guard argument.isEmpty || argument.unicodeScalars.contains(where: { " \t\"'\\$`".unicodeScalars.contains($0) })
        else { return argument }
        var output = String.UnicodeScalarView()
        output.append("\"")
        for scalar in argument.unicodeScalars {
            if "\"`$\\".unicodeScalars.contains(scalar) { output.append("\\") }
            output.append(scalar)
        }
        output.append("\"")
        return String(output)
    }

    /// What the field codes stand for when launching.
    public struct Context: Sendable {
        public var urls: [String]
        /// Local paths for `%f`/`%F` (a `file:` URL's path); the URLs when nil.
        public var files: [String]?
        public var icon: String?
        public var name: String?
        public var desktopFile: String?
        public init(
            urls: [String], files: [String]? = nil, icon: String? = nil, name: String? = nil, desktopFile: String? = nil
        ) {
            self.urls = urls
            self.files = files
            self.icon = icon
            self.name = name
            self.desktopFile = desktopFile
        }
    }

    /// The argument vector to run: `%u` one URL, `%U` all of them, `%f`/`%F`
    /// the same as local paths when they are local files,
    /// `%i` `--icon ICON`, `%c` the name, `%k` the desktop file, `%%` a percent;
    /// deprecated codes are dropped. A command with no URL code gets the URL
    /// appended, as launchers do.
    public func expanded(_ context: Context) -> [String] {
        var output: [String] = []
        var usedURL = false
        for argument in arguments {
            let files = context.files ?? context.urls
            switch argument {
            case "%u":
                if let first = context.urls.first { output.append(first) }
                usedURL = true
                continue
            case "%f":
                if let first = files.first { output.append(first) }
                usedURL = true
                continue
            case "%U":
                output += context.urls
                usedURL = true
                continue
            case "%F":
                output += files
                usedURL = true
                continue
            case "%i":
                if let icon = context.icon { output += ["--icon", icon] }
                continue
            default:
                break
            }
            var text = ""
            var iterator = Array(argument).makeIterator()
            while let character = iterator.next() {
                guard character == "%" else { text.append(character); continue }
                switch iterator.next() {
                case "%"?: text.append("%")
                case "u"?:
                    text += context.urls.first ?? ""
                    usedURL = true
                case "f"?:
                    text += files.first ?? ""
                    usedURL = true
                case "U"?:
                    text += context.urls.joined(separator: " ")
                    usedURL = true
                case "F"?:
                    text += files.joined(separator: " ")
                    usedURL = true
                case "c"?: text += context.name ?? ""
                case "k"?: text += context.desktopFile ?? ""
                case "i"?: text += context.icon ?? ""
                case let other?: _ = other // deprecated (%d %D %n %N %v %m) or unknown: removed
                case nil: break
                }
            }
            output.append(text)
        }
        if !usedURL { output += context.urls }
        return output
    }
}

extension ExecCommand {
    /// Shells: a command run through one cannot take arguments placed
    /// safely (its script, not its arguments, decides what runs).
    static let shells: Set<String> = ["sh", "bash", "dash", "zsh", "ksh", "mksh", "fish", "csh", "tcsh", "busybox"]

    /// The index of the browser's own program in this command: past `env`
    /// and its `NAME=VALUE` settings, past `flatpak run` and its options to
    /// the application id, past `snap run` to the snap's name. Arguments
    /// placed right after it go to the browser, never to a launcher.
    /// - Throws: ``Problem`` when the program cannot be found safely: a
    ///   shell, an `env` option other than `-i`, a `flatpak run` without an
    ///   application id (three dot-separated parts), a `snap run` without a name.
    /// A Flatpak application id: three dot-separated parts at least
    /// (org.chromium.Chromium), each of ASCII letters, digits, '_' and '-',
    /// none starting with a digit, as Flatpak itself requires. Anything else
    /// (a path, a field code, an option) is no application Flatpak starts.
    static func isFlatpakApplicationID(_ name: String) -> Bool {
        let parts = name.utf8.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard parts.count >= 3, name.utf8.count <= 255 else { return false }
        return parts.allSatisfy { part in
            guard let first = part.first, !(0x30...0x39).contains(first) else { return false }
            return part.allSatisfy { byte in
                (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte)
                    || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "-")
            }
        }
    }

    /// A snap's name, with an optional instance key (`firefox_work`):
    /// lowercase ASCII letters, digits, '-' and '_', never starting with '-'.
    static func isSnapName(_ name: String) -> Bool {
        guard let first = name.utf8.first, first != UInt8(ascii: "-"), name.utf8.count <= 80 else { return false }
        return name.utf8.allSatisfy { byte in
            (0x30...0x39).contains(byte) || (0x61...0x7A).contains(byte) || byte == UInt8(ascii: "_")
                || byte == UInt8(ascii: "-")
        }
    }

    public func browserProgramIndex() throws(Problem) -> Int {
        /// Whether a program reads `argument` as an option: its first byte is '-'.
        func isOption(_ argument: String) -> Bool { argument.utf8.first == UInt8(ascii: "-") }
        let exec = arguments.map(Self.quote).joined(separator: " ")
        func refuse(_ reason: String) -> Problem { Problem(exec: exec, reason: reason) }
        var index = 0
        while true {
            guard index < arguments.count else { throw refuse("it names no program after its launcher") }
            let program = arguments[index].split(separator: "/").last.map(String.init) ?? arguments[index]
            if Self.shells.contains(program) {
                throw refuse(
                    "a shell runs it, so arguments cannot be given to the browser safely (set this machine's own command instead)"
                )
            }
            switch program {
            case "env":
                index += 1
                while index < arguments.count,
                    arguments[index] == "-i" || arguments[index] == "--ignore-environment"
                        || (!isOption(arguments[index]) && arguments[index].utf8.contains(UInt8(ascii: "=")))
                {
                    index += 1
                }
                if index < arguments.count, isOption(arguments[index]) {
                    throw refuse(
                        "'env' is given an option brsync does not read ('\(DisplayText.printable(arguments[index].prefix(40)))')"
                    )
                }
            case "flatpak", "snap":
                // `flatpak [OPTION…] run [OPTION…] APPID`, `snap run [OPTION…] NAME`: anything else starts no browser.
                func skipOptions() { while index < arguments.count, isOption(arguments[index]) { index += 1 } }
                index += 1
                skipOptions()
                guard index < arguments.count, arguments[index] == "run" else {
                    throw refuse("'\(program)' without 'run' starts no application")
                }
                index += 1
                skipOptions()
                let name = index < arguments.count ? arguments[index] : ""
                guard program == "snap" ? Self.isSnapName(name) : Self.isFlatpakApplicationID(name) else {
                    throw refuse(
                        program == "snap"
                            ? "'snap run' is followed by no snap"
                            : "'flatpak run' is followed by no application id (such as org.chromium.Chromium)")
                }
                return index
            default:
                return index
            }
        }
    }
}
