import ArgumentParser
import Glibc
import Plumbing
import Replica

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
            let had = unlink(Self.path(home: home)) == 0
            print(had ? "taken back: the next link opens as its rules decide" : "no link was going to ask")
            return
        }
        do throws(SecretFile.Failure) {
            try SecretFile.write(Array(String(WatchWake.bootMillis()).utf8), to: Self.path(home: home), what: "the ask-next request")
        } catch {
            throw CLIFailure(message: error.message)
        }
        print("the next link opened within a minute asks which browser opens it ('brsync ask-next --cancel' takes it back)")
    }

    /// Takes a request made within its lifetime, for one link: true when there
    /// was one (a stale one is removed and says nothing). Only one process
    /// takes it (whoever removes the file).
    static func take(home: String) -> Bool {
        let file = path(home: home)
        guard let bytes = try? SecretFile.read(file, what: "the ask-next request") else { return false }
        guard unlink(file) == 0 else { return false } // another link took it
        guard let made = Int64(String(decoding: bytes, as: UTF8.self).trimmingASCIIWhitespace()) else { return false }
        let now = WatchWake.bootMillis()
        return made <= now && now - made < lifetimeMillis
    }
}
