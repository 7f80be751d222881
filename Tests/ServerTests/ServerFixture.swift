import Cryptography
import Foundation
import HTTP
import JSON
import Logging
import Model
import Net
import Postgres
import SyncCore
import TestSupport

@testable import BrsyncServer
@testable import ServerStore

/// A real brsyncd server in this process: an SQLite file in a temporary folder
/// (or a fresh PostgreSQL database), TLS from a fresh CA, listening on
/// 127.0.0.1 with an ephemeral port.
final class ServerFixture: @unchecked Sendable {
    // Built in init, then only read (the server is Sendable on its own).
    let directory: TemporaryDirectory
    let caFile: String
    let store: SyncStore
    let server: SyncServer
    let port: UInt16
    /// The PostgreSQL database of a fixture of that kind (for writes made outside brsyncd).
    private(set) var postgres: PostgresConfiguration?

    init(_ kind: StoreKind = .sqlite, configure: (inout ServerConfiguration) -> Void = { _ in }) throws {
        directory = try TemporaryDirectory(prefix: "brsyncd-test")
        let certificates = try TestCertificates(in: directory)
        caFile = certificates.caFile
        switch kind {
        case .sqlite:
            store = try SyncStore(sqlite: directory.file("store.sqlite"))
        case .postgres:
            let cluster = try PostgresCluster.shared()
            let configuration = try PostgresConfiguration(url: try cluster.createDatabase(), password: cluster.password)
            postgres = configuration
            store = try SyncStore(postgres: configuration)
        }
        (server, port) = try InProcessServer.start(store: store, certificates: directory, configure: configure)
    }

    deinit {
        server.shutdown()
        directory.remove()
    }

    /// A device in `account` (created if needed), with a client holding its token.
    /// A device added to `account` (made when new), speaking `protocol` (nil: the oldest, no header).
    func device(
        _ account: String, _ name: String, clientDevice: String? = nil, protocol version: Int? = nil
    ) throws
        -> TestDevice
    {
        if !(try store.accounts().contains { $0.name == account }) { try store.addAccount(account) }
        let token = try store.addDevice(account: account, name: name)
        let client = HTTPClient(
            .init(
                address: SocketAddress(host: "127.0.0.1", port: port), serverName: "localhost",
                tls: try TLSContext.client(caFile: caFile)))
        let device = TestDevice(client: client, token: token, deviceID: clientDevice ?? "\(account)-\(name)")
        device.protocolVersion = version
        return device
    }
}

/// A client device: its HTTP client, token and device id, and a clock for stamps.
final class TestDevice: @unchecked Sendable {
    // Used by one test thread at a time.
    let client: HTTPClient
    let token: String
    let deviceID: String
    var clock: HybridLogicalClock
    var nextSequence: Int64 = 1
    /// The account and epoch its pushes and pulls name (``CursorOrigin``); nil: none, as older clients.
    var origin = CursorOrigin()

    init(client: HTTPClient, token: String, deviceID: String) {
        self.client = client
        self.token = token
        self.deviceID = deviceID
        clock = HybridLogicalClock(device: deviceID)
    }

    /// The protocol the device speaks (`Brsync-Protocol`); nil sends no header (protocol 1).
    var protocolVersion: Int?
    /// The account key its pushes say they are sealed with (end-to-end encryption).
    var keyID: String?
    /// The key its writes are signed with (``WriteSignature``); nil signs nothing.
    var signingKey: Crypto.SigningKey?

    /// A POST, signed with ``signingKey`` when it is set.
    func post(
        _ target: String, body: [UInt8], signedBy signer: Crypto.SigningKey? = nil
    ) throws -> HTTPResponseParser.ParsedResponse {
        var headers = authorization
        if let signer = signer ?? signingKey {
            headers.add(
                WriteSignature.header,
                WriteAuthority.signatureHeader(by: signer, token: token, path: target, body: body))
        }
        return try client.send(method: "POST", target: target, headers: headers, body: body)
    }

    var authorization: HTTPHeaders {
        var headers: HTTPHeaders = ["Authorization": "Bearer \(token)"]
        if let protocolVersion { headers.add(Wire.protocolHeader, String(protocolVersion)) }
        return headers
    }

    /// A change to one record, stamped now (plus `skewMilliseconds`).
    func change(
        _ key: String, _ fields: [String: JSONValue], collection: RecordCollection = .rules,
        skewMilliseconds: Int64 = 0,
        versions: VersionVector? = nil
    ) -> ChangeRecord {
        let now = Int64(Date().timeIntervalSince1970 * 1000) + skewMilliseconds
        let stamp = clock.tick(wallMillis: now)
        var vector = versions ?? VersionVector()
        if versions == nil { vector.increment(deviceID) }
        let state = RecordState(fields: fields.mapValues { StampedValue($0, stamp: stamp) }, versions: vector)
        defer { nextSequence += 1 }
        return ChangeRecord(sequence: nextSequence, collection: collection, key: key, state: state)
    }

    /// The chain through each change pushed (a real client keeps it in its log).
    var chains: [Int64: String] = [:]

    func push(_ changes: [ChangeRecord]) throws -> HTTPResponseParser.ParsedResponse {
        let from = changes.first?.sequence ?? 1
        let base = chains[from - 1] ?? (from == 1 ? "" : nil)
        if let base {
            for (change, chain) in zip(changes, ChangeRecord.chain(changes, after: base)) {
                chains[change.sequence] = chain
            }
        }
        let request = PushRequest(
            device: deviceID, from: from, to: changes.last?.sequence ?? 1, changes: changes,
            base: from == 1 ? nil : base, epoch: origin.epoch, keyID: keyID)
        var named = request
        named.account = origin.account
        return try post("/v1/push", body: named.body())
    }

    /// A pull, signed with ``signingKey`` when it is set (as a key holder's brsync signs its pulls).
    func pull(since: Int64 = 0, limit: Int? = nil) throws -> HTTPResponseParser.ParsedResponse {
        var request = PullRequest(since: since, limit: limit, epoch: origin.epoch)
        request.account = origin.account
        let target = request.target
        var headers = authorization
        if let signingKey {
            headers.add(
                WriteSignature.header,
                WriteAuthority.signatureHeader(by: signingKey, token: token, path: "/v1/pull", body: [], method: "GET"))
        }
        return try client.send(method: "GET", target: target, headers: headers)
    }

    /// Pulls every page from `since`; returns the records by key and the final cursor.
    func pullAll(
        since: Int64 = 0, limit: Int = 100
    ) throws -> (records: [String: ChangeRecord], cursor: Int64, pages: Int) {
        var cursor = since
        var records: [String: ChangeRecord] = [:]
        var pages = 0
        while true {
            let response = try pull(since: cursor, limit: limit)
            guard response.status == 200 else {
                throw WireError(
                    code: WireError.Code(rawValue: "status"), message: "\(response.status): \(response.text)")
            }
            let page = try Wire.read(response.text, PullResponse.init(reading:))
            pages += 1
            for change in page.changes { records["\(change.collection.rawValue)/\(change.key)"] = change }
            cursor = page.next
            if !page.more { return (records, cursor, pages) }
        }
    }
}

extension HTTPResponseParser.ParsedResponse {
    var text: String { String(decoding: body, as: UTF8.self) }
    var json: JSONValue? { try? JSONValue.parse(text) }
    var errorCode: WireError.Code? { json.flatMap(WireError.init(json:))?.code }
    var errorMessage: String { json.flatMap(WireError.init(json:))?.message ?? "" }
}
