import Glibc

/// How an edit wakes `brsync watch` at once: a datagram socket in Linux's
/// abstract namespace, named after the replica's folder (no file left
/// behind by a killed watch, no limit on the folder's path length). The
/// watch binds it (so a second watch of the same replica cannot); every
/// local edit sends it a byte after its commit (``poke(home:)``), and the
/// watch pushes. Nothing polls.
public enum WatchWake {
    /// The socket's name for the replica in `home`: a hash of its real path.
    static func name(home: String) -> [UInt8] {
        let path = realpath(home, nil).map { pointer in
            defer { free(pointer) }
            return String(cString: pointer)
        } ?? home
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325 // FNV-1a
        for byte in path.utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x100_0000_01b3
        }
        let hex = String(hash, radix: 16)
        return Array("brsync-watch-\(String(repeating: "0", count: 16 - hex.count) + hex)".utf8)
    }

    private static func withAddress<T>(home: String, _ body: (UnsafePointer<sockaddr>, socklen_t) -> T) -> T {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let name = Self.name(home: home)
        withUnsafeMutableBytes(of: &address.sun_path) { path in
            path[0] = 0 // abstract
            for (index, byte) in name.enumerated() { path[index + 1] = byte }
        }
        let length = socklen_t(MemoryLayout<sa_family_t>.size + 1 + name.count)
        return withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, length) }
        }
    }

    private static func datagramSocket() -> Int32 {
        socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    }

    /// Binds the replica's wake-up socket, for a watch: its descriptor
    /// (readable when an edit was made), or nil when another watch of this
    /// replica holds it.
    /// - Throws: the system's reason when no socket can be made.
    public static func bind(home: String) throws(WatchWakeError) -> Int32? {
        let descriptor = datagramSocket()
        guard descriptor >= 0 else { throw WatchWakeError(call: "socket", code: errno) }
        let status = withAddress(home: home) { Glibc.bind(descriptor, $0, $1) }
        if status == 0 { return descriptor }
        let code = errno
        close(descriptor)
        if code == EADDRINUSE { return nil }
        throw WatchWakeError(call: "bind", code: code)
    }

    /// Tells the replica's watch, if one runs, that an edit was made. Never
    /// waits and never fails (no watch: nothing to tell).
    public static func poke(home: String) {
        let descriptor = datagramSocket()
        guard descriptor >= 0 else { return }
        var byte: UInt8 = 1
        _ = withAddress(home: home) { address, length in sendto(descriptor, &byte, 1, Int32(MSG_DONTWAIT), address, length) }
        close(descriptor)
    }

    /// Whether a watch of the replica in `home` runs (it holds the socket).
    public static func isWatching(home: String) -> Bool {
        let descriptor = datagramSocket()
        guard descriptor >= 0 else { return false }
        defer { close(descriptor) }
        return withAddress(home: home) { connect(descriptor, $0, $1) } == 0
    }

    /// Reads and drops every poke waiting on a bound socket.
    public static func drain(_ descriptor: Int32) {
        var buffer = [UInt8](repeating: 0, count: 64)
        while recv(descriptor, &buffer, buffer.count, Int32(MSG_DONTWAIT)) > 0 {}
    }
}

public struct WatchWakeError: Error, CustomStringConvertible {
    public let call: String
    public let code: Int32
    public var description: String { "cannot make the watch's wake-up socket (\(call)): \(String(cString: strerror(code)))" }
}
