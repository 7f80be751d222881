import Glibc
import JSON
import SystemServices

/// Which of this session's displays answer now. Checked before a window or
/// a menu is shown on one: a display that takes the connection and never
/// answers (a frozen X server) would otherwise hold the click until the
/// picker's 10 minutes are up. X11: the connection set-up, within
/// ``HeldKeys/timeoutMillis`` (about 0.7 ms when it answers); Wayland: the
/// compositor's socket takes a connection. A remote X display is not checked.
public struct SessionDisplay: Sendable, Equatable {
    public var x11: Bool
    public var wayland: Bool
    /// Why a display that is set does not answer, one line each.
    public var problems: [String]

    /// Whether a window can open on one of them.
    public var any: Bool { x11 || wayland }

    public static func check(environment: [String: String]) -> SessionDisplay {
        var result = SessionDisplay(x11: false, wayland: false, problems: [])
        if let display = environment["DISPLAY"], !display.isEmpty {
            do throws(HeldKeys.Failure) {
                try HeldKeys.checkDisplayAnswers(environment: environment)
                result.x11 = true
            } catch {
                result.problems.append("the X display \(DisplayText.printable(display.prefix(80))): \(error)")
            }
        }
        if let name = environment["WAYLAND_DISPLAY"], !name.isEmpty {
            if let problem = waylandProblem(name: name, runtimeDirectory: environment["XDG_RUNTIME_DIR"]) {
                result.problems.append("the Wayland display \(DisplayText.printable(name.prefix(80))): \(problem)")
            } else {
                result.wayland = true
            }
        }
        return result
    }

    /// Why the compositor does not answer; nil when it does: its socket
    /// takes a connection (not blocking: a full queue counts as no answer)
    /// and answers `wl_display.sync` within ``HeldKeys/timeoutMillis``.
    static func waylandProblem(name: String, runtimeDirectory: String?) -> String? {
        let path: String
        if name.hasPrefix("/") {
            path = name
        } else {
            guard let runtimeDirectory, !runtimeDirectory.isEmpty else {
                return "XDG_RUNTIME_DIR is not set, so its socket cannot be found"
            }
            path = "\(runtimeDirectory)/\(name)"
        }
        let socket = Glibc.socket(
            AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        guard socket >= 0 else { return "no socket (errno \(errno))" }
        defer { close(socket) }
        guard Self.connect(socket, to: path) else {
            return errno == EAGAIN
                ? "its compositor is not taking connections" : "cannot connect to \(path) (\(SystemError.text()))"
        }
        // wl_display (object 1) sync (opcode 0, 12 bytes) with a new callback, object 2;
        // the compositor answers with that callback's done event.
        let sync: [UInt32] = [1, 12 << 16, 2]
        let sent = sync.withUnsafeBytes { send(socket, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        guard sent == 12 else { return "its compositor did not take a request" }
        var ready = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
        var answer = [UInt8](repeating: 0, count: 64)
        guard poll(&ready, 1, Int32(HeldKeys.timeoutMillis)) > 0, read(socket, &answer, answer.count) > 0 else {
            return "its compositor did not answer within \(HeldKeys.timeoutMillis) ms"
        }
        return nil
    }

    /// Connects `socket` to the Unix socket at `path` (with `abstract`, the
    /// abstract name `path`, which starts with a zero byte): whether it did
    /// (errno says why not; a path too long is ENAMETOOLONG).
    static func connect(_ socket: Int32, to path: String, abstract: Bool = false) -> Bool {
        var address = sockaddr_un()
        let bytes = Array(path.utf8), offset = abstract ? 1 : 0
        guard bytes.count + offset < MemoryLayout.size(ofValue: address.sun_path) else {
            errno = ENAMETOOLONG
            return false
        }
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (index, byte) in bytes.enumerated() { raw[index + offset] = byte }
        }
        let length = socklen_t(MemoryLayout<sa_family_t>.size + bytes.count + offset + (abstract ? 0 : 1))
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(socket, $0, length) }
        } == 0
    }
}
