import BrsyncCommands
import Cryptography
import Glibc
import Net
import Replica
import SyncClient
import SyncCore
import SystemServices

/// What `brsync join CODE` does, as a library call: one-step pairing.
public enum Joining {
    /// What a join did.
    public struct Outcome: Sendable {
        /// The server joined.
        public let remote: RemoteURL
        /// Where its CA, pinned by the code's fingerprint, was kept.
        public let caFile: String
        /// The account key, when the account is end-to-end encrypted.
        public let key: AccountKey?
        /// The server this machine synced with before (`replace`).
        public let previousRemote: String?
    }

    /// Joins the server `code` names from the home `home` (made for the
    /// join when there is none; removed again if the join fails): the CA is
    /// pinned, the token and, for an encrypted account, the recovery code are
    /// checked before anything is kept, and a join secret is exchanged for a
    /// token made here. The caller syncs after (``Transfer``).
    /// - Parameters:
    ///   - replace: a machine that syncs with a server already takes this one instead.
    ///   - recoveryGiven: whether the user gave a recovery code (asked once the
    ///     server said whether the account is encrypted): one given to a
    ///     server that says it is not is refused.
    ///   - recoveryCode: the recovery code, asked for only when the account is encrypted.
    public static func join(
        home: String, code join: JoinCode, replace: Bool, recoveryGiven: () -> Bool,
        recoveryCode: () throws -> AccountKey
    ) throws -> Outcome {
        let homeExisted = access(home, F_OK) == 0
        let (replica, created) = try Replica.initialize(home: home, deviceName: nil)
        var joined = false
        // A replica made for this join goes again if the join fails, and the
        // folder when the join made it (and nothing was kept in it): nothing changes.
        defer {
            if created && !joined {
                for suffix in ["", "-wal", "-shm"] { unlink("\(home)/\(Replica.fileName)\(suffix)") }
                if !homeExisted {
                    unlink("\(home)/sync.lock")
                    rmdir(home) // only when empty: a token kept aside for a retry stays
                }
            }
        }
        let previousRemote = try replica.syncState().remoteURL
        if let previousRemote, !replace {
            throw CLIFailure(
                message:
                    "this machine syncs with \(previousRemote) already; join with --replace to use this code instead "
                    + "(its rules and unpushed edits stay and go up; nothing was changed)")
        }
        let remote: RemoteURL
        do { remote = try RemoteURL(parsing: join.server) } catch {
            throw CLIFailure(message: "the join code's server: \(error)")
        }

        // The CA, pinned by the code's fingerprint, in a file of its own until everything checked out.
        let ca = try fetchCA(remote, pinnedBy: join)
        let caFile = "\(home)/ca.pem"
        let pending = "\(home)/.ca.pem.joining"
        do {
            try SecretFile.write(Array(CertificatePinning.pem(der: ca).utf8), to: pending, what: "the CA")
        } catch { throw CLIFailure(message: "\(error)") }
        var saved = false
        defer { if !saved { unlink(pending) } }

        // The token and, for an encrypted account, the recovery code are checked before anything is kept.
        let probe = try SyncClient(replica: replica, remote: remote, token: join.token, caFile: pending)
        let key = try checkEncryption(
            probe, code: join, recoveryGiven: recoveryGiven, recoveryCode: recoveryCode)
        let joiningToken = "\(home)/.join-token"
        let (token, serverName) = try deviceToken(
            for: join, probe: probe, keptAside: joiningToken, replica: replica, homeMadeForJoin: created)
        defer { if saved { unlink(joiningToken) } }
        joined = true
        guard rename(pending, caFile) == 0 else {
            throw CLIFailure(message: "cannot write \(caFile): \(SystemError.text())")
        }
        saved = true
        try TokenFile.write(token, home: home)
        // Replacing: the old server's cursors and acknowledgements go; every local edit is sent again (the server takes each once).
        if previousRemote != nil { try replica.removeRemote() }
        try replica.setRemote(url: remote.text, caFile: caFile)
        // `brsyncd device list` names this device so: `brsync device` says it beside its own name.
        try replica.setServerDeviceName(serverName)
        if let key { try AccountKeyFile.write(key, home: home) }
        return Outcome(remote: remote, caFile: caFile, key: key, previousRemote: previousRemote)
    }

    /// The server's CA, fetched and checked against the fingerprint the
    /// join code names.
    private static func fetchCA(_ remote: RemoteURL, pinnedBy join: JoinCode) throws -> [UInt8] {
        do {
            return try CertificatePinning.fetchCA(
                address: SocketAddress(host: remote.host, port: remote.port), serverName: remote.host,
                fingerprint: join.caFingerprint)
        } catch .tls(let message) {
            throw SyncError.unreachable("\(remote) is not trusted: \(message)")
        } catch {
            throw SyncError.unreachable("\(remote): \(error)")
        }
    }

    /// Whether the account is end-to-end encrypted, checked against what the
    /// code and the user claim; its key, checked with the server, when it is.
    private static func checkEncryption(
        _ probe: SyncClient, code join: JoinCode, recoveryGiven: () -> Bool, recoveryCode: () throws -> AccountKey
    ) throws -> AccountKey? {
        let encrypted = try joinCodeChecked { try probe.accountKeyID() } != nil
        // Whoever says the account is encrypted (the code itself, or the user
        // with a recovery code, however it came) is believed over a server
        // that says it is not: joining anyway would send every rule made
        // here readable.
        let given = recoveryGiven()
        let claim =
            join.encrypted == true
            ? "the join code says the account was end-to-end encrypted when the code was made"
            : given ? "a recovery code was given" : nil
        if !encrypted, let claim {
            throw CLIFailure(
                message: "\(claim), but the server says this account is not end-to-end encrypted: "
                    + "nothing was saved, and nothing will be sent readable. If the account was encrypted, its operator may have "
                    + "reset its encryption, or the server is not the one it was, or was set back; ask its operator. If it never was, "
                    + "join with a new code and no recovery code, then encrypt it with 'brsync key init'",
                code: ExitStatus.refused)
        }
        if encrypted {
            let recovery = try recoveryCode()
            try probe.checkKey(recovery)
            return recovery
        }
        return nil
    }

    /// The token this device syncs with, and the device name the server
    /// gave it (nil for a code of an older server).
    private static func deviceToken(
        for join: JoinCode, probe: SyncClient, keptAside joiningToken: String, replica: Replica,
        homeMadeForJoin created: Bool
    ) throws -> (token: String, serverName: String?) {
        // A join code's secret is exchanged, once, for a token made here; a
        // code of an older server holds the device's token itself.
        // The token is kept aside first: a join whose answer never came is
        // run again with the same token, which the server takes as done.
        var token = join.token
        var serverName: String?
        if SyncClient.isJoinSecret(join.token) {
            do {
                token =
                    try SecretFile.read(joiningToken, what: "the token of an earlier join").map {
                        String(decoding: $0, as: UTF8.self)
                    }
                    .flatMap { JoinRequest.isWellFormed($0) ? $0 : nil } ?? SyncClient.makeDeviceToken()
                try SecretFile.write(Array(token.utf8), to: joiningToken, what: "the token of this join")
            } catch {
                throw CLIFailure(message: "\(error)")
            }
            let answer = try joinCodeChecked { try probe.exchangeJoinSecret(for: token) }
            serverName = answer.device
            // A home made for this join goes by the name the server gave its device
            // (`brsyncd device list` and `brsync device` then name it alike).
            if created, Replica.problem(withDeviceName: answer.device) == nil {
                try replica.renameDevice(answer.device)
            }
        }
        return (token, serverName)
    }

    /// Runs a request made with the join code's token: a refusal of it says
    /// what to do with a join code (this machine has no token of its own
    /// yet, so the advice for a replaced token does not apply).
    @discardableResult
    private static func joinCodeChecked<T>(_ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch SyncError.refused(let code, let message) where code == .unauthorized {
            // The server says what happened to a code it knows (used, expired).
            if message.contains("join code") {
                throw CLIFailure(
                    message: "the server refused this join code: \(message); nothing was saved",
                    code: ExitStatus.refused)
            }
            throw CLIFailure(
                message:
                    "the server refused this join code (\(message)): it was mistyped, or the server was set up anew. "
                    + "Ask the server's operator for a new join code; nothing was saved", code: ExitStatus.refused)
        }
    }

    /// ``join(home:code:replace:recoveryGiven:recoveryCode:)`` with the
    /// recovery code as typed beside the join code (a window asks for both
    /// at once; empty: none given).
    public static func join(home: String, code: JoinCode, replace: Bool, recoveryText: String) throws -> Outcome {
        try join(
            home: home, code: code, replace: replace, recoveryGiven: { !recoveryText.isEmpty },
            recoveryCode: {
                guard !recoveryText.isEmpty else {
                    throw CLIFailure(
                        message:
                            "this account is end-to-end encrypted: type its recovery code under the join code "
                            + "(nothing was saved)")
                }
                do { return try AccountKey(recoveryCode: recoveryText) } catch {
                    throw CLIFailure(message: "not a recovery code: \(error)")
                }
            })
    }

    /// The SHA-256 fingerprint (hex) of the first certificate of the CA
    /// file a replica pins, as a join code names it; nil when it cannot be read.
    public static func fingerprint(caFile: String) -> String? {
        guard let der = try? CertificatePinning.certificates(pemFile: caFile).first else { return nil }
        return Crypto.hex(CertificatePinning.fingerprint(der: der))
    }
}
