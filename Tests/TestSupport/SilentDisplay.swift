import Foundation
import Glibc

/// An X display that takes connections and never answers (a frozen X
/// server): a Unix socket at /tmp/.X11-unix/X<number>, each connection
/// accepted and held. `hangUp` closes each at once instead; `reply` answers
/// each connection's first bytes with these (a compositor that answers).
/// Stopped by `stop()`.
public final class SilentDisplay: @unchecked Sendable {
    // The listener is closed once by stop(); the thread only accepts from it.
    public let number: Int
    public var display: String { ":\(number)" }
    private let listener: Int32
    private let socketPath: String

    /// - Parameter path: the socket's path instead (a Wayland compositor's, say); `number` is then -1.
    public init(hangUp: Bool = false, reply: [UInt8]? = nil, at path: String? = nil) throws {
        try FileManager.default.createDirectory(atPath: "/tmp/.X11-unix", withIntermediateDirectories: true)
        // A number no Xvfb of the tests takes (they pick from 0 up).
        var chosen = -1
        var socketPath = path ?? ""
        for candidate in (700 + Int(getpid() % 200))..<1_000
        where path == nil && !FileManager.default.fileExists(atPath: "/tmp/.X11-unix/X\(candidate)") {
            chosen = candidate
            socketPath = "/tmp/.X11-unix/X\(candidate)"
            break
        }
        guard !socketPath.isEmpty else { throw POSIXError(.EADDRINUSE) }
        number = chosen
        self.socketPath = socketPath
        let descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        listener = descriptor
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (index, byte) in socketPath.utf8.enumerated() { raw[index] = byte }
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard descriptor >= 0, bound == 0, listen(descriptor, 64) == 0 else { throw POSIXError(.EADDRINUSE) }
        Thread.detachNewThread {
            var held: [Int32] = []
            while true {
                let client = accept(descriptor, nil, nil)
                if client < 0 { break } // stopped
                if hangUp {
                    close(client)
                    continue
                }
                if let reply {
                    var request = [UInt8](repeating: 0, count: 64)
                    if read(client, &request, request.count) > 0 {
                        _ = reply.withUnsafeBytes { write(client, $0.baseAddress, $0.count) }
                    }
                }
                held.append(client)
            }
            for client in held { close(client) }
        }
    }

    public func stop() {
        shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
        unlink(socketPath)
    }
}
