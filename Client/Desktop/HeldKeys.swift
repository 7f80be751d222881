import Foundation
import Glibc
import JSON
import SystemServices

/// The modifier keys held right now, as the X server says (the mask of a
/// QueryPointer request), read over the X protocol itself: one Unix socket,
/// three messages, no X library (about 0.7 ms). brsync asks only when `brsync
/// hold-to-ask` chose a key, and only on X11: a Wayland session tells no
/// program which keys are held, and a remote display (`host:N`) is not read.
/// Measured by Benchmarks/modifier.sh: a GTK app's click reaches this read in
/// about 20 ms, through xdg-open in about 45.
public enum HeldKeys {

    /// A modifier a click can be made with (X's usual mapping: Alt is Mod1, Super is Mod4).
    public enum Modifier: String, CaseIterable, Sendable {
        case shift, ctrl, alt, `super`

        /// Its bit in X's key-and-button mask.
        var bit: UInt16 {
            switch self {
            case .shift: 1
            case .ctrl: 4
            case .alt: 8
            case .super: 64
            }
        }

        /// How it is written on a keyboard.
        public var label: String {
            switch self {
            case .shift: "Shift"
            case .ctrl: "Ctrl"
            case .alt: "Alt"
            case .super: "Super"
            }
        }

        /// `name` as typed: shift, ctrl (or control), alt, super (case does not matter).
        public init?(named name: String) {
            let lowered = name.lowercased()
            if let modifier = Modifier(rawValue: lowered) {
                self = modifier
            } else if lowered == "control" {
                self = .ctrl
            } else {
                return nil
            }
        }
    }

    /// Why the keys could not be read.
    public struct Failure: Error, Equatable, Sendable, CustomStringConvertible {
        public let description: String
        init(_ description: String) { self.description = description }
    }

    /// How long a read may take before the click goes on without it.
    public static let timeoutMillis = 250

    /// Whether this session's keys can be read at all; nil when they can,
    /// else why not, worded for the person.
    public static func unreadable(environment: [String: String]) -> String? {
        if !(environment["WAYLAND_DISPLAY"] ?? "").isEmpty || environment["XDG_SESSION_TYPE"] == "wayland" {
            return "this is a Wayland session, which tells no program which keys are held"
        }
        guard let display = environment["DISPLAY"], !display.isEmpty else {
            return "there is no X display in this environment"
        }
        guard displayNumber(display) != nil else {
            return "the display '\(display)' is not this machine's (only :N is read)"
        }
        return nil
    }

    /// The modifiers held now on this session's X display.
    public static func held(environment: [String: String]) throws(Failure) -> Set<Modifier> {
        if let reason = unreadable(environment: environment) { throw Failure(reason) }
        let connection = try connect(environment: environment)
        defer { close(connection.socket) }
        try send(connection.socket, [38, 0, 2, 0] + connection.root) // QueryPointer, 2 words, on the root window
        let mask = try pointerMask(reply: try receive(connection.socket, 32, deadline: connection.deadline))
        return Set(Modifier.allCases.filter { mask & $0.bit != 0 })
    }

    /// Whether this session's local X display takes a connection and
    /// answers its set-up within ``timeoutMillis`` (what a window about to
    /// open there needs; a display that does not would hold it forever).
    /// - Throws: ``Failure`` saying why not.
    public static func checkDisplayAnswers(environment: [String: String]) throws(Failure) {
        guard let display = environment["DISPLAY"], !display.isEmpty else {
            throw Failure("there is no X display in this environment")
        }
        guard displayNumber(display) != nil else { return } // a remote display is not checked
        close(try connect(environment: environment).socket)
    }

    /// A connection to the local display of `environment`, set up (with the
    /// Xauthority cookie when there is one): its socket, the first screen's
    /// root window and the deadline of the whole exchange.
    private static func connect(
        environment: [String: String]
    ) throws(Failure) -> (socket: Int32, root: [UInt8], deadline: Int64) {
        let display = environment["DISPLAY"] ?? ""
        guard let number = displayNumber(display) else {
            throw Failure("the display '\(DisplayText.printable(display.prefix(80)))' is not this machine's")
        }
        let authority = environment["XAUTHORITY"] ?? environment["HOME"].map { "\($0)/.Xauthority" }
        var secret: [UInt8]?
        if let authority, let data = FileManager.default.contents(atPath: authority) {
            secret = Self.cookie(inAuthority: [UInt8](data), display: number)
        }
        let socket = try connect(display: number)
        do throws(Failure) {
            // One deadline for the whole exchange: a server that trickles its answer does not hold the click.
            let deadline = Clock.monotonicMillis() + Int64(timeoutMillis)
            try send(socket, setupRequest(cookie: secret))
            let head = try receive(socket, 8, deadline: deadline)
            let remainder = try setupRemainder(head: head)
            guard remainder <= 1 << 20 else { throw Failure("a set-up answer from the X server of \(remainder) bytes") }
            let root = try rootWindow(head: head, body: try receive(socket, remainder, deadline: deadline))
            return (socket, root, deadline)
        } catch {
            close(socket)
            throw error
        }
    }

    // MARK: The protocol (pure parts are fuzzed: Fuzz/Sources/FuzzXReplies)

    /// N of a local display ":N" or ":N.S" (also "unix:N"); nil for anything else.
    public static func displayNumber(_ display: String) -> Int? {
        var rest = Substring(display)
        if rest.hasPrefix("unix:") {
            rest = rest.dropFirst(5)
        } else if rest.hasPrefix(":") {
            rest = rest.dropFirst()
        } else {
            return nil
        }
        let digits = rest.prefix { $0.isASCII && $0.isNumber }
        let after = rest.dropFirst(digits.count)
        guard !digits.isEmpty, digits.count <= 6,
            after.isEmpty || (after.first == "." && after.dropFirst().allSatisfy { $0.isASCII && $0.isNumber })
        else {
            return nil
        }
        return Int(digits)
    }

    /// The MIT-MAGIC-COOKIE-1 for display `number` in an Xauthority file's
    /// bytes (records of a family, then address, display number, name and
    /// data, each a big-endian 16-bit length and its bytes; an empty number
    /// stands for any display); nil when there is none or the file is damaged.
    public static func cookie(inAuthority bytes: [UInt8], display number: Int) -> [UInt8]? {
        var at = 0
        func field() -> ArraySlice<UInt8>? {
            guard at + 2 <= bytes.count else { return nil }
            let count = Int(bytes[at]) << 8 | Int(bytes[at + 1])
            guard count <= bytes.count - at - 2 else { return nil }
            defer { at += 2 + count }
            return bytes[at + 2..<at + 2 + count]
        }
        let wanted = Array(String(number).utf8), name = Array("MIT-MAGIC-COOKIE-1".utf8)
        while at + 2 <= bytes.count {
            at += 2 // the family
            guard field() != nil, let display = field(), let kind = field(), let data = field() else { return nil }
            if (display.isEmpty || Array(display) == wanted) && Array(kind) == name && !data.isEmpty
                && data.count <= 255
            {
                return Array(data)
            }
        }
        return nil
    }

    /// The connection set-up a client sends (little-endian, protocol 11.0), with `cookie` when there is one.
    static func setupRequest(cookie: [UInt8]?) -> [UInt8] {
        let name = Array("MIT-MAGIC-COOKIE-1".utf8)
        let nameCount = cookie == nil ? 0 : name.count, dataCount = cookie?.count ?? 0
        var request: [UInt8] = [UInt8(ascii: "l"), 0, 11, 0, 0, 0]
        request += [
            UInt8(nameCount & 0xFF), UInt8(nameCount >> 8), UInt8(dataCount & 0xFF), UInt8(dataCount >> 8), 0, 0,
        ]
        if let cookie { request += padded(name) + padded(cookie) }
        return request
    }

    /// How many more bytes follow the first 8 of a set-up reply.
    public static func setupRemainder(head: [UInt8]) throws(Failure) -> Int {
        guard head.count == 8 else { throw Failure("a short answer from the X server") }
        let words = Int(head[6]) | Int(head[7]) << 8
        return words * 4
    }

    /// The first screen's root window, from a set-up reply (its first 8
    /// bytes and the rest): after the fixed part, the vendor string padded
    /// to 4 bytes and 8 bytes per pixmap format.
    public static func rootWindow(head: [UInt8], body: [UInt8]) throws(Failure) -> [UInt8] {
        guard head.count == 8 else { throw Failure("a short answer from the X server") }
        switch head[0] {
        case 1: break
        case 0, 2:
            // Failed (with a reason) or Authenticate: the X server wants what this client has not.
            let reasonCount = head[0] == 0 ? min(Int(head[1]), body.count) : body.count
            let reason = String(decoding: body.prefix(reasonCount).prefix { $0 != 0 }, as: UTF8.self)
            throw Failure(
                "the X server refused the connection\(reason.isEmpty ? "" : ": \(DisplayText.printable(reason.prefix(200)))")"
            )
        default: throw Failure("the X server answered the set-up with \(head[0])")
        }
        guard body.count >= 32 else { throw Failure("a short set-up answer from the X server") }
        let vendor = Int(body[16]) | Int(body[17]) << 8
        let formats = Int(body[21])
        let root = 32 + (vendor + 3) / 4 * 4 + 8 * formats
        guard Int(body[20]) >= 1, body.count >= root + 4 else {
            throw Failure("a set-up answer from the X server without a screen")
        }
        return Array(body[root..<root + 4])
    }

    /// The key-and-button mask of a QueryPointer reply.
    public static func pointerMask(reply: [UInt8]) throws(Failure) -> UInt16 {
        guard reply.count == 32 else { throw Failure("a short answer from the X server") }
        guard reply[0] == 1 else { throw Failure("the X server refused QueryPointer (error \(reply[1]))") }
        return UInt16(reply[24]) | UInt16(reply[25]) << 8
    }

    /// A socket to display `number`: its file in /tmp/.X11-unix, else the
    /// abstract socket of that name (a sandbox may not see the file).
    private static func connect(display number: Int) throws(Failure) -> Int32 {
        let path = "/tmp/.X11-unix/X\(number)"
        var lastError: Int32 = 0
        for abstract in [false, true] {
            let socket = Glibc.socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            guard socket >= 0 else { throw Failure("no socket (errno \(errno))") }
            var limit = timeval(tv_sec: 0, tv_usec: timeoutMillis * 1_000)
            setsockopt(socket, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
            setsockopt(socket, SOL_SOCKET, SO_SNDTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
            if SessionDisplay.connect(socket, to: path, abstract: abstract) { return socket }
            lastError = errno
            close(socket)
        }
        throw Failure("cannot reach the X display :\(number) (\(SystemError.text(lastError)))")
    }

    private static func padded(_ bytes: [UInt8]) -> [UInt8] {
        bytes + [UInt8](repeating: 0, count: (4 - bytes.count % 4) % 4)
    }

    private static func send(_ socket: Int32, _ bytes: [UInt8]) throws(Failure) {
        var sent = 0
        while sent < bytes.count {
            let count = bytes[sent...].withUnsafeBytes {
                Glibc.send(socket, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
            }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else {
                throw Failure(
                    errno == EAGAIN
                        ? "the X server did not answer within \(timeoutMillis) ms" : "the X server went away")
            }
            sent += count
        }
    }

    private static func receive(_ socket: Int32, _ wanted: Int, deadline: Int64) throws(Failure) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: wanted)
        var got = 0
        while got < wanted {
            var ready = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
            let left = deadline - Clock.monotonicMillis()
            let polled = left > 0 ? poll(&ready, 1, Int32(left)) : 0
            if polled < 0 && errno == EINTR { continue }
            guard polled > 0 else { throw Failure("the X server did not answer within \(timeoutMillis) ms") }
            let count = bytes[got...].withUnsafeMutableBytes { read(socket, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else {
                throw Failure(
                    count < 0 && errno == EAGAIN
                        ? "the X server did not answer within \(timeoutMillis) ms"
                        : "the X server closed the connection")
            }
            got += count
        }
        return bytes
    }
}
