import Glibc
import SystemServices

/// How `brsync watch` runs once per replica and how an edit wakes it at
/// once, with nothing another user of the machine can reach:
///
/// - the watch holds a write lock (`fcntl`) on `HOME/watch.lock` (mode
///   0600) for its whole life, and writes the time since boot into it at
///   least once a minute (``beat(_:)``; not the wall clock, which can be
///   set back): ``status(home:)`` tells a running watch (and its pid) from
///   none, or from one that stopped answering (frozen). A lock file or
///   socket that is not this user's own (planted while the folder was
///   open to others) counts for nothing, and a watch replaces it;
/// - it binds a datagram socket of mode 0600 in a folder only this user
///   can enter (``socketPath(home:)``), which every local edit sends a byte
///   after its commit (``poke(home:)``); only this user (and root) can.
///
/// Nothing polls: the edit's byte wakes the watch.
public enum WatchWake {
    /// A heartbeat older than this means the watch no longer runs as it
    /// should (stopped with SIGSTOP, hung): the sync timer then syncs anyway.
    public static let staleMilliseconds: Int64 = 180_000

    public static func lockPath(home: String) -> String { "\(realHome(home))/watch.lock" }

    static func realHome(_ home: String) -> String {
        realpath(home, nil).map { pointer in
            defer { free(pointer) }
            return String(cString: pointer)
        } ?? home
    }

    /// The wake-up socket of the replica in `home`: `HOME/watch.sock` when
    /// that path fits a socket address (107 bytes), else in
    /// `$XDG_RUNTIME_DIR` (the user's own), else in `/tmp/brsync-UID`
    /// (made mode 0700, and used only when it is this user's and no one
    /// else's); nil when none of them will do (the watch then syncs edits
    /// at its next answer, within a minute).
    public static func socketPath(home: String) -> String? {
        let real = realHome(home)
        let inHome = "\(real)/watch.sock"
        if inHome.utf8.count <= 107 { return inHome }
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325 // FNV-1a of the folder's real path
        for byte in real.utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x100_0000_01b3
        }
        let name = "brsync-watch-\(String(hash, radix: 16)).sock"
        if let runtime = getenv("XDG_RUNTIME_DIR").map({ String(cString: $0) }), runtime.hasPrefix("/"),
            isPrivateFolder(runtime)
        {
            let path = "\(runtime)/\(name)"
            if path.utf8.count <= 107 { return path }
        }
        let folder = "/tmp/brsync-\(getuid())"
        _ = mkdir(folder, 0o700)
        return isPrivateFolder(folder) ? "\(folder)/\(name)" : nil
    }

    /// A folder (not a link) owned by this user that no one else can enter.
    static func isPrivateFolder(_ path: String) -> Bool {
        var status = stat()
        guard lstat(path, &status) == 0 else { return false }
        return (status.st_mode & S_IFMT) == S_IFDIR && status.st_uid == getuid() && status.st_mode & 0o077 == 0
    }

    private static func withAddress<T>(_ path: String, _ body: (UnsafePointer<sockaddr>, socklen_t) -> T) -> T {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8.prefix(107))
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (index, byte) in bytes.enumerated() { raw[index] = byte }
            raw[bytes.count] = 0
        }
        let length = socklen_t(MemoryLayout<sa_family_t>.size + bytes.count + 1)
        return withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, length) }
        }
    }

    private static func datagramSocket() -> Int32 {
        socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    }

    /// What a watch holds while it runs.
    public struct Claim: Sendable {
        /// The lock file, locked (``beat(_:)`` writes into it).
        public let lock: Int32
        /// The wake-up socket, readable when an edit was made; nil when no
        /// private place for it was found.
        public let socket: Int32?
    }

    /// For a watch: takes the replica's lock and binds its wake-up socket.
    /// - Returns: nil when another watch holds the lock.
    /// - Throws: the system's reason when the lock file cannot be made.
    public static func claim(home: String) throws(WatchWakeError) -> Claim? {
        // One that is not ours (or not a plain file) is someone else's plant: it goes.
        if !isOwnFile(lockPath(home: home), type: S_IFREG) { unlink(lockPath(home: home)) }
        let lock = open(lockPath(home: home), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard lock >= 0 else { throw WatchWakeError(call: "open \(lockPath(home: home))", code: errno) }
        var request = flock()
        request.l_type = Int16(F_WRLCK)
        request.l_whence = Int16(SEEK_SET)
        guard fcntl(lock, F_SETLK, &request) == 0 else {
            let code = errno
            close(lock)
            if code == EACCES || code == EAGAIN { return nil }
            throw WatchWakeError(call: "lock \(lockPath(home: home))", code: code)
        }
        _ = fchmod(lock, 0o600)
        beat(lock)
        guard let path = socketPath(home: home) else { return Claim(lock: lock, socket: nil) }
        let descriptor = datagramSocket()
        guard descriptor >= 0 else { return Claim(lock: lock, socket: nil) }
        // Holding the lock, a socket file left there by a watch that died is ours to replace.
        unlink(path)
        let previous = umask(0o177)
        let status = withAddress(path) { bind(descriptor, $0, $1) }
        umask(previous)
        guard status == 0 else {
            close(descriptor)
            return Claim(lock: lock, socket: nil)
        }
        return Claim(lock: lock, socket: descriptor)
    }

    /// Milliseconds since boot, suspend included: what heartbeats are
    /// measured in (every process of the machine reads the same clock, and
    /// no one sets it).
    public static func bootMillis() -> Int64 {
        var now = timespec()
        clock_gettime(CLOCK_BOOTTIME, &now)
        return Int64(now.tv_sec) * 1000 + Int64(now.tv_nsec) / 1_000_000
    }

    /// The watch is alive: the time since boot into its lock file.
    public static func beat(_ lock: Int32) {
        let text = Array(String(bootMillis()).utf8)
        _ = ftruncate(lock, 0)
        _ = pwrite(lock, text, text.count, 0)
    }

    /// Whether `path` is a file of `type` (not a link) owned by this user.
    static func isOwnFile(_ path: String, type: mode_t) -> Bool {
        var status = stat()
        guard lstat(path, &status) == 0 else { return true } // nothing there: nothing to remove
        return (status.st_mode & S_IFMT) == type && status.st_uid == getuid()
    }

    /// A running watch of a replica: its pid and its last sign of life.
    public struct Running: Sendable, Equatable {
        public let pid: Int32
        public let lastBeatMillis: Int64?

        /// Whether it gave a sign of life within ``WatchWake/staleMilliseconds``
        /// (both in ``WatchWake/bootMillis()``; a beat from the future — a
        /// reboot's leftover, or a plant — is no sign of life).
        public func isAlive(nowMillis: Int64) -> Bool {
            guard let lastBeatMillis, lastBeatMillis <= nowMillis + 1000 else { return false }
            return nowMillis - lastBeatMillis < WatchWake.staleMilliseconds
        }
    }

    /// The watch that runs for the replica in `home`, or nil when none does
    /// (a lock file not this user's own says nothing).
    public static func status(home: String) -> Running? {
        let lock = open(lockPath(home: home), O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        guard lock >= 0 else { return nil }
        defer { close(lock) }
        var file = stat()
        guard fstat(lock, &file) == 0, (file.st_mode & S_IFMT) == S_IFREG, file.st_uid == getuid() else { return nil }
        var request = flock()
        request.l_type = Int16(F_WRLCK)
        request.l_whence = Int16(SEEK_SET)
        guard fcntl(lock, F_GETLK, &request) == 0, request.l_type != Int16(F_UNLCK) else { return nil }
        var buffer = [UInt8](repeating: 0, count: 32)
        let count = pread(lock, &buffer, buffer.count, 0)
        let beat = count > 0 ? Int64(String(decoding: buffer[0..<count], as: UTF8.self)) : nil
        return Running(pid: request.l_pid, lastBeatMillis: beat)
    }

    /// Whether process `pid` runs as the `brsync-watch` systemd user service
    /// (its cgroup names the unit), not started by hand or by a window.
    public static func runsAsService(pid: Int32) -> Bool {
        String(decoding: procFile(pid: pid, "cgroup"), as: UTF8.self).contains("/brsync-watch.service")
    }

    /// Whether process `pid` is a `brsync … watch`, by its command line.
    public static func isWatchProcess(pid: Int32) -> Bool {
        let words = procFile(pid: pid, "cmdline").split(separator: 0).map { String(decoding: $0, as: UTF8.self) }
        return words.contains("watch") && words.contains { $0.hasSuffix("brsync") || $0.hasSuffix("brsync-sync") }
    }

    /// The first 16 KiB of `/proc/PID/NAME` (nothing when it cannot be read).
    private static func procFile(pid: Int32, _ name: String) -> [UInt8] {
        let descriptor = open("/proc/\(pid)/\(name)", O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return [] }
        defer { close(descriptor) }
        var buffer = [UInt8](repeating: 0, count: 16_384)
        let count = read(descriptor, &buffer, buffer.count)
        return count > 0 ? Array(buffer[0..<count]) : []
    }

    /// Whether a watch runs for the replica in `home` and gave a sign of
    /// life lately (the sync timer stands down only then).
    public static func isWatching(home: String) -> Bool {
        status(home: home)?.isAlive(nowMillis: bootMillis()) == true
    }

    /// Tells the replica's watch, if one runs, that an edit was made. Never
    /// waits and never fails (no watch: nothing to tell).
    public static func poke(home: String) {
        // Only to this user's own socket: another user's there learns nothing.
        guard let path = socketPath(home: home), isOwnFile(path, type: S_IFSOCK) else { return }
        let descriptor = datagramSocket()
        guard descriptor >= 0 else { return }
        var byte: UInt8 = 1
        _ = withAddress(path) { address, length in sendto(descriptor, &byte, 1, Int32(MSG_DONTWAIT), address, length) }
        close(descriptor)
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
    public var description: String { "cannot start the watch (\(call)): \(SystemError.text(code))" }
}
