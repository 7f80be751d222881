import ArgumentParser
import Desktop
import Glibc
import JSON
import Replica
import SystemServices

/// `brsync ask-next`: the next link opened asks which browser opens it, even
/// when a rule decides — a desktop shortcut's command, the same on X11 and
/// Wayland. The request is a file in the replica's folder holding the time
/// since boot (a wall clock set back or forward does not stretch it); it
/// lasts ``lifetimeMillis`` and one link takes it.
public struct AskNext: ParsableCommand {
    public init() {}
    public static let configuration = CommandConfiguration(
        commandName: "ask-next",
        abstract: "Make the next link opened within a minute ask which browser opens it, even when a rule decides.",
        discussion: """
            Bind it to a keyboard shortcut, press it, then click the link. GNOME: Settings, Keyboard, View and Customise \
            Shortcuts, Custom Shortcuts, command 'brsync ask-next'. KDE Plasma: System Settings, Shortcuts, Add New, \
            Command or Script, 'brsync ask-next'. The picker then offers the rule's pattern to remember, so choosing \
            another browser with Remember replaces the rule. With a replica folder of its own, give the shortcut the same \
            --home as 'brsync install' was given.
            """)
    @OptionGroup var global: GlobalOptions
    @Flag(help: "Take the request back: the next link opens as its rules decide.") var cancel = false

    /// How long a request waits for its link.
    public static let lifetimeMillis: Int64 = 60_000

    static func path(home: String) -> String { "\(home)/ask-next" }

    public func run() throws {
        let home = global.resolvedHome
        _ = try global.openReplica() // a replica, or the usual message
        if cancel {
            print(
                try Self.cancel(home: home)
                    ? "taken back: the next link opens as its rules decide" : "no link was going to ask")
            return
        }
        try Self.request(home: home)
        print(
            "the next link opened within a minute asks which browser opens it ('brsync ask-next --cancel' takes it back)"
        )
    }

    /// Makes the next link opened within ``lifetimeMillis`` ask (the command
    /// and the settings window's button).
    public static func request(home: String) throws(CLIFailure) {
        do throws(SecretFile.Failure) {
            try SecretFile.write(
                Array(String(WatchWake.bootMillis()).utf8), to: path(home: home), what: "the ask-next request")
        } catch {
            throw CLIFailure(message: error.message)
        }
    }

    /// Takes the request back: true when there was one.
    public static func cancel(home: String) throws -> Bool { try removeSetting(path(home: home)) }

    /// Takes a request made within its lifetime, for one link: true when there
    /// was one (a stale one is removed and says nothing). Only one process
    /// takes it (whoever removes the file).
    static func take(home: String) -> Bool {
        let file = path(home: home)
        let bytes: [UInt8]
        do throws(SecretFile.Failure) {
            guard let read = try SecretFile.read(file, what: "the ask-next request", othersMayRead: true) else {
                return false
            }
            bytes = read
        } catch {
            // Not one brsync made (a folder, a file others can change): said, and removed when it can be (it is for one link).
            let removed = (try? removeSetting(file)) == true
            ExitStatus.warn(
                "\(error.message): ignored\(removed ? " and removed" : "; remove it by hand (rm -r '\(file)')")")
            return false
        }
        guard unlink(file) == 0 else { return false } // another link took it
        guard let made = Int64(String(decoding: bytes, as: UTF8.self).trimmingASCIIWhitespace()) else { return false }
        let now = WatchWake.bootMillis()
        return made <= now && now - made < lifetimeMillis
    }
}

/// `brsync hold-to-ask KEY`: on X11, a link clicked while KEY is held asks
/// which browser opens it, even when a rule decides. A setting of this
/// machine (the file `hold-to-ask` in the replica's folder, never synced: one
/// machine may run X11 and another Wayland). The key is read when brsync
/// starts (``HeldKeys``); Benchmarks/modifier.sh measures how soon that is.
public struct HoldToAsk: ParsableCommand {
    public init() {}
    public static let configuration = CommandConfiguration(
        commandName: "hold-to-ask",
        abstract:
            "On X11, make links clicked while holding a key ask which browser opens them, even when a rule decides.",
        discussion: """
            KEY is shift, ctrl, alt or super; 'off' stops it; no KEY says what is set. Keep the key down until the \
            picker shows (brsync reads it as it starts, 5 to 50 ms after the click). A Wayland session tells no \
            program which keys are held: there, bind 'brsync ask-next' to a shortcut instead. Ctrl+click is how many \
            terminals and editors open links, and Alt+click moves windows under many window managers, so shift is \
            the usual choice.
            """)
    @OptionGroup var global: GlobalOptions
    @Argument(help: "shift, ctrl, alt, super, or off.", completion: .list(["shift", "ctrl", "alt", "super", "off"]))
    var key: String?

    static func path(home: String) -> String { "\(home)/hold-to-ask" }

    public func run() throws {
        let home = global.resolvedHome
        _ = try global.openReplica() // a replica, or the usual message
        let environment = ProcessEnvironment.all()
        guard let key else {
            guard let chosen = try Self.chosen(home: home) else {
                print("off: links ask only when no rule decides, or after 'brsync ask-next'")
                return
            }
            print(
                "links clicked while holding \(chosen.label) ask which browser opens them\(Self.sessionNote(environment))"
            )
            return
        }
        if key.lowercased() == "off" {
            print(
                try Self.choose(nil, home: home)
                    ? "off: holding a key while clicking changes nothing" : "it was off")
            return
        }
        guard let modifier = HeldKeys.Modifier(named: key) else {
            throw CLIFailure(
                message:
                    "'\(DisplayText.printable(key.prefix(40)))' is not a key brsync can read: use shift, ctrl, alt, super or off"
            )
        }
        try Self.choose(modifier, home: home)
        print(
            "links clicked while holding \(modifier.label) ask which browser opens them\(Self.sessionNote(environment))"
        )
        switch modifier {
        case .ctrl:
            ExitStatus.warn(
                "Ctrl+click is how many terminals and editors open links: every link clicked there will ask")
        case .alt:
            ExitStatus.warn("many window managers take Alt+click to move a window, and the app never sees the click")
        case .shift, .super: break
        }
    }

    /// Makes `modifier` the key held to ask on this machine; nil turns it off.
    /// - Returns: whether anything changed when turning it off (it was on).
    @discardableResult
    public static func choose(_ modifier: HeldKeys.Modifier?, home: String) throws -> Bool {
        guard let modifier else { return try removeSetting(path(home: home)) }
        do throws(SecretFile.Failure) {
            try SecretFile.write(Array(modifier.rawValue.utf8), to: path(home: home), what: "the hold-to-ask setting")
        } catch {
            throw CLIFailure(message: error.message)
        }
        return true
    }

    /// The key chosen on this machine, or nil. A file that does not read or
    /// names no key is reported.
    public static func chosen(home: String) throws -> HeldKeys.Modifier? {
        let bytes: [UInt8]?
        do throws(SecretFile.Failure) {
            bytes = try SecretFile.read(path(home: home), what: "the hold-to-ask setting", othersMayRead: true)
        } catch {
            throw CLIFailure(
                message:
                    "\(error.message): 'brsync hold-to-ask off' removes it, 'brsync hold-to-ask shift' writes it anew")
        }
        guard let bytes else { return nil }
        let text = String(decoding: bytes, as: UTF8.self).trimmingASCIIWhitespace()
        if text.lowercased() == "off" { return nil }
        guard let modifier = HeldKeys.Modifier(named: text) else {
            throw CLIFailure(
                message:
                    "\(path(home: home)) names no key ('\(DisplayText.printable(text.prefix(40)))'): run 'brsync hold-to-ask shift' or 'brsync hold-to-ask off'"
            )
        }
        return modifier
    }

    /// Whether the key is held now, when one is chosen and this session's
    /// keys can be read. Nothing here stops a click: a setting that does not
    /// read, or keys that cannot be read, is warned about and counts as not held.
    /// - Parameter warn: told when the key is set but the keys cannot be read
    ///   (a display that closes the connection or does not answer): the click
    ///   goes on as the rules say, and the person must learn why it did not ask.
    static func isHeld(
        home: String, environment: [String: String], warn: (String) -> Void = { ExitStatus.warn($0) }
    ) -> HeldKeys.Modifier? {
        let modifier: HeldKeys.Modifier
        do {
            guard let chosen = try chosen(home: home) else { return nil }
            modifier = chosen
        } catch {
            warn(Failures.message(of: error))
            return nil
        }
        // Wayland, no display: said by hold-to-ask and doctor
        if HeldKeys.unreadable(environment: environment) != nil { return nil }
        do throws(HeldKeys.Failure) {
            return try HeldKeys.held(environment: environment).contains(modifier) ? modifier : nil
        } catch {
            warn("hold-to-ask: cannot read the keys held (\(error)), so the link opens as the rules say")
            return nil
        }
    }

    /// Whether this session's keys can be read, tried now; else why not.
    public static func sessionNote(_ environment: [String: String]) -> String {
        if let reason = HeldKeys.unreadable(environment: environment) { return " on X11; not here: \(reason)" }
        do throws(HeldKeys.Failure) {
            _ = try HeldKeys.held(environment: environment)
            return " (read here: this X11 session's keys can be read)"
        } catch {
            return "; but here the keys cannot be read: \(error)"
        }
    }
}

/// Removes a setting file of this machine (`ask-next`, `hold-to-ask`), or an
/// empty folder made in its place: true when there was one, false when
/// there was none. Anything else is an error that says how to remove it.
func removeSetting(_ path: String) throws(CLIFailure) -> Bool {
    if unlink(path) == 0 || ((errno == EISDIR || errno == EPERM) && rmdir(path) == 0) { return true }
    if errno == ENOENT { return false }
    throw CLIFailure(message: "cannot remove \(path): \(SystemError.text()); remove it by hand (rm -r '\(path)')")
}
