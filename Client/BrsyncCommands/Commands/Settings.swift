import ArgumentParser
import Glibc
import SystemServices

/// `brsync settings`: the settings window (`brsync-settings`, beside this
/// binary: brsync itself never loads GTK). It runs in this process's place,
/// on the replica --home names, until it is closed.
public struct Settings: ParsableCommand {
    public init() {}
    public static let configuration = CommandConfiguration(
        commandName: "settings",
        abstract: "Open the settings window: browsers, rules (with a link test) and this desktop.",
        discussion: """
            The window edits the same replica as the commands, with the same checks and messages; changes made \
            elsewhere (a sync, a command) show in it as they happen. It needs a display; the application menu's \
            "brsync Settings" opens it too ('brsync install' adds it).
            """)
    @OptionGroup var global: GlobalOptions

    static let programName = "brsync-settings"

    public func run() throws {
        let environment = ProcessEnvironment.all()
        guard [environment["DISPLAY"], environment["WAYLAND_DISPLAY"]].contains(where: { !($0 ?? "").isEmpty }) else {
            throw CLIFailure(
                message: "settings: no display to open the window on (DISPLAY or WAYLAND_DISPLAY); every setting is "
                    + "also a command (brsync --help)", code: ExitStatus.error)
        }
        let executable = currentExecutable()
        let program = ProcessEnvironment.beside(executable, named: Self.programName)
        guard access(program, X_OK) == 0 else {
            throw CLIFailure(
                message: "settings: \(Self.programName) is not beside \(executable) (install it with brsync)",
                code: ExitStatus.error)
        }
        setenv("BRSYNC_HOME", global.resolvedHome, 1)
        let arguments = [program]
        var pointers = arguments.map { strdup($0) } + [nil]
        execv(program, &pointers)
        throw CLIFailure(
            message: "settings: cannot start \(program): \(SystemError.text(errno))", code: ExitStatus.error)
    }
}
