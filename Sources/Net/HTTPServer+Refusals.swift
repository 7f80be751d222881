import Glibc
import HTTP
import SystemServices

/// How a connection ends without a thread of the pool: 503 past a cap,
/// and the linger after a last answer.
extension HTTPServer {
    /// Answers a connection over a cap with 503 (over TLS too, which needs a
    /// handshake, on a thread of a small separate budget with a short
    /// deadline); past that budget the connection is closed unanswered.
    func refuse(_ socket: Socket, peer: String) {
        guard refusals.add(1, ordering: .relaxed).newValue <= limits.maxConcurrentRefusals else {
            refusals.subtract(1, ordering: .relaxed)
            socket.close()
            return
        }
        var busy = ownAnswers.make(503, .busy, "too many connections; retry later")
        busy.headers.add("Retry-After", "1")
        let response = busy
        do {
            try startThread { [self] in
                defer { refusals.subtract(1, ordering: .relaxed) }
                let deadline = Deadline.after(milliseconds: limits.refusalTimeoutMilliseconds)
                let stream: ByteStream
                if usesTLS {
                    guard let context = tls.withLock({ $0 }),
                        let secured = try? TLSStream.accept(socket: socket, context: context, deadline: deadline)
                    else { socket.close(); return }
                    stream = secured
                } else {
                    stream = PlainStream(socket: socket)
                }
                try? stream.write(
                    response.serialized(keepAlive: false, dateMillis: Clock.wallMillis()), deadline: deadline)
                linger(stream, milliseconds: min(limits.lingerMilliseconds, limits.refusalTimeoutMilliseconds))
            }
        } catch {
            refusals.subtract(1, ordering: .relaxed)
            socket.close()
        }
    }

    /// Answers a connection whose request came while every thread was busy
    /// with 503 and `Retry-After`, on the refusal budget (else closes it).
    func refuse(stream: any ByteStream, address: String) {
        guard refusals.add(1, ordering: .relaxed).newValue <= limits.maxConcurrentRefusals else {
            refusals.subtract(1, ordering: .relaxed)
            stream.close()
            release(address)
            return
        }
        var busy = ownAnswers.make(503, .busy, "too many requests in progress; retry later")
        busy.headers.add("Retry-After", "1")
        let response = busy
        let handed = ConnectionHandoff(stream: stream)
        do {
            try startThread { [self] in
                defer { refusals.subtract(1, ordering: .relaxed) }
                let deadline = Deadline.after(milliseconds: limits.refusalTimeoutMilliseconds)
                try? handed.stream.write(
                    response.serialized(keepAlive: false, dateMillis: Clock.wallMillis()), deadline: deadline)
                // The linger on the loop: the refusal budget is for answers.
                if let loop = loop(for: handed.stream) {
                    loop.linger(handed.stream, peer: "", address: address)
                } else {
                    linger(
                        handed.stream, milliseconds: min(limits.lingerMilliseconds, limits.refusalTimeoutMilliseconds))
                    release(address)
                }
            }
        } catch {
            refusals.subtract(1, ordering: .relaxed)
            stream.close()
            release(address)
        }
    }

    /// Closes after the last answer without losing it: ends the sending side,
    /// then reads and discards what the client still sends (bounded in time
    /// and bytes) until it closes too. Closing with unread input would make
    /// the kernel send a reset, which destroys answers the client has not
    /// read yet (RFC 9112 §9.6).
    func linger(_ stream: ByteStream, milliseconds: Int) {
        stream.finishWriting()
        let deadline = Deadline.after(milliseconds: milliseconds)
        var discarded = 0
        var scratch = [UInt8](repeating: 0, count: 16 * 1024)
        while discarded < limits.lingerMaxBytes {
            guard (try? stream.socket.wait(for: Int16(POLLIN), until: deadline, what: "lingering")) == true else {
                break
            }
            let count = scratch.withUnsafeMutableBytes {
                Glibc.read(stream.socket.descriptor, $0.baseAddress, $0.count)
            }
            if count > 0 {
                discarded += count
            } else if count == 0 || (errno != EAGAIN && errno != EINTR) {
                break
            }
        }
        stream.close()
    }
}
