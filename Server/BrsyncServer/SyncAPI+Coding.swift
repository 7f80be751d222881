import ContentCoding
import HTTP
import JSON
import ServerStore

/// gzip bodies (`Content-Encoding: gzip`), for readable accounts only
/// (docs/protocol.md, "Compressed bodies"; Deploy/SECURITY.md says why
/// compression tells nothing a token holder cannot read). Every answer says
/// `Accept-Encoding: gzip` (RFC 7694): clients compress their pushes and
/// relays once they have seen it, so an older server is never sent one.
/// An encrypted account's bodies are never compressed, either way: sizes
/// after compression would tell what its sealed records have alike.
extension SyncAPI {
    /// Says on an answer that this server takes gzip request bodies.
    static func advertiseCoding(_ response: inout HTTPResponse) {
        response.headers.add("Accept-Encoding", Gzip.name)
    }

    /// Checks a request's `Content-Encoding` on its head, before its body
    /// is read: gzip only, and only for a push or relay of a readable
    /// account (`device`: the request's, authenticated already; nil when
    /// it has none).
    static func checkCoding(_ head: HTTPRequest, route: Route, device: Store.Device?) throws(ServerError) {
        let codings = head.headers.values("Content-Encoding")
        guard !codings.isEmpty else { return }
        guard codings.count == 1, codings[0].asciiLowercased() == Gzip.name else {
            throw .badRequest(
                "Content-Encoding '\(DisplayText.printable(codings.joined(separator: ", ").prefix(40)))' is not taken: "
                    + "send the body as it is, or as gzip")
        }
        guard route == .push || route == .relay, let device else {
            throw .badRequest("only a push or a relay may send its body compressed")
        }
        if device.accountEncrypted {
            throw .badRequest(
                "an end-to-end encrypted account's records are never sent compressed (sizes would tell what they have alike): "
                    + "send the body as it is")
        }
    }

    /// The request with its body as sent, inflated when it came as gzip
    /// (to no more bytes than a body may have).
    func decoded(_ request: HTTPRequest) throws(ServerError) -> HTTPRequest {
        guard let coding = request.headers["Content-Encoding"] else { return request }
        guard coding.asciiLowercased() == Gzip.name else {
            throw .badRequest("Content-Encoding '\(DisplayText.printable(coding.prefix(40)))' is not taken")
        }
        var plain = request
        do {
            plain.body = try Gzip.decompress(request.body, limit: configuration.limits.maxBodyBytes)
        } catch {
            throw .badRequest("the gzip body is refused: \(error)")
        }
        plain.headers.remove("Content-Encoding")
        return plain
    }

    /// A pull's answer, compressed when the client takes gzip, the page is
    /// worth it and the account is readable.
    func encoded(_ response: HTTPResponse, for request: HTTPRequest, token: String) throws -> HTTPResponse {
        var response = response
        // Chosen by Accept-Encoding, compressed or not (RFC 9110 §12.5.5).
        response.headers.add("Vary", "Accept-Encoding")
        guard response.status == 200, response.body.count >= Gzip.minimumBytes,
            Gzip.isAccepted(by: request.headers["Accept-Encoding"]),
            !(try store.authenticate(token: token)).accountEncrypted
        else { return response }
        var compressed = response
        compressed.body = Gzip.compress(response.body)
        compressed.headers.add("Content-Encoding", Gzip.name)
        return compressed
    }
}
