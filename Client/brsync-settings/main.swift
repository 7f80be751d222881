import BrsyncCommands
import CGtk
import Glibc
import Replica
import SystemServices

// brsync-settings: the settings window (`brsync settings` starts it; so does
// the application menu's "brsync Settings"). It edits the replica in
// $BRSYNC_HOME (else $XDG_DATA_HOME/brsync) through the same library calls
// as the commands. Exit status: 0 closed, 2 no replica it can open, 4 no
// display.

let program = HelperProgram(
    name: "brsync-settings",
    usage: "brsync-settings opens the settings window for the replica in $BRSYNC_HOME; run it as 'brsync settings'")
program.refuseArguments()

setenv("GSK_RENDERER", "cairo", 0) // a form draws faster with cairo than by setting up GL
g_set_prgname("brsync-settings")
g_set_application_name("brsync Settings")
guard gtk_init_check() != 0 else { program.fail("cannot open a display (DISPLAY or WAYLAND_DISPLAY)", 4) }
ColorScheme.follow()

let home = GlobalOptions.home(flag: nil)
// Opened from the application menu on a machine with no replica yet: one is
// made (as 'brsync init' makes it), and the window says so.
let opened: (replica: Replica, created: Bool)
do {
    opened = try Replica.initialize(home: home, deviceName: nil)
} catch {
    // Whoever opened the window sees why it cannot open, not just a log line.
    writeToStandardError("brsync-settings: \(error)\n")
    Dialogs.showAndWait(title: "brsync Settings", text: "The settings cannot open:\n\(error)")
    exit(2)
}
let context = SettingsContext(replica: opened.replica, home: home)
let settings = SettingsWindow(context: context)
settings.present()
// The window shows first; the replica (20,000 rules take ~100 ms) fills it right after.
Signals.afterDrawing { context.reload() }
if opened.created {
    context.show("Made a new replica in \(home). Find the browsers installed here on the Browsers page (Ctrl+D).")
}
while !settings.closed { g_main_context_iteration(nil, 1) }
