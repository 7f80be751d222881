import CGtk
import Desktop
import Glibc
import JSON
import Model
import SystemServices

// brsync-picker: the window `brsync open` and `brsync pick` show when no rule
// decides a link and the session has a display. It reads a
// WindowPicker.Request (JSON) on standard input and prints a
// WindowPicker.Answer (JSON) on standard output. Exit status: 0 chosen,
// 1 cancelled, 2 a request it cannot read, 4 no display to open.

let program = HelperProgram(
    name: "brsync-picker",
    usage: "brsync-picker reads a request on standard input; brsync runs it (see 'brsync pick --help')")
program.refuseArguments()

// GTK starts first (the longest part), while brsync writes the request. A
// small dialog draws faster with the cairo renderer than by setting up GL
// (measured under Xvfb: ~185 against ~240 ms to the window); GSK_RENDERER, when
// set, still decides.
setenv("GSK_RENDERER", "cairo", 0)
g_set_prgname("brsync-picker") // the window's class
g_set_application_name("brsync") // what screen readers call the program
// A display (or a session bus) that takes the connection and never answers
// would hold GTK, and the click, forever: until the window is shown, a
// watchdog ends the picker as "no display" (exit 4), and brsync tries the
// next picker. (brsync checks the display first; this catches the rest.)
signal(SIGALRM) { _ in
    // no allocation in a handler
    let message: StaticString = "brsync-picker: cannot open a display: it did not answer within 15 s\n"
    _ = write(2, message.utf8Start, message.utf8CodeUnitCount)
    _exit(4)
}
alarm(15)
let hasDisplay = gtk_init_check() != 0

var bytes: [UInt8] = []
var buffer = [UInt8](repeating: 0, count: 65_536)
while true {
    let count = read(0, &buffer, buffer.count)
    if count < 0 && errno == EINTR { continue }
    if count <= 0 { break }
    bytes += buffer[0..<count]
    if bytes.count > WindowPicker.Request.maxBytes {
        program.fail("the request is larger than \(WindowPicker.Request.maxBytes) bytes", 2)
    }
}
let request: WindowPicker.Request
do {
    guard let text = String(validating: bytes, as: UTF8.self) else {
        throw WindowPicker.Problem("the request is not UTF-8")
    }
    request = try WindowPicker.Request(parsing: text)
} catch {
    program.fail(DisplayText.printableLines("\(error)"), 2)
}

guard hasDisplay else { program.fail("cannot open a display (DISPLAY or WAYLAND_DISPLAY)", 4) }
picker = PickerWindow(request)
picker.present()
alarm(0) // shown: the person may take their time
while picker.outcome == nil { g_main_context_iteration(nil, 1) }
switch picker.outcome {
case .chosen(let answer)?:
    print(answer.json.jsonText)
    exit(0)
default:
    exit(1)
}
