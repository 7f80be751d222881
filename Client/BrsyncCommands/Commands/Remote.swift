import ArgumentParser
import Glibc
import JSON
import Model
import Replica
import SyncCore
import SystemServices

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

public struct RemoteCommand: ParsableCommand {
    /// What a sync or key command says when this machine has no server yet.
    public static let noRemote =
        "no remote: join a server with 'brsync join' (a join code from its operator), or set one with 'brsync remote set https://HOST --token-file FILE'"

    public init() {}
    public static let configuration = CommandConfiguration(
        commandName: "remote", abstract: "Set, show or remove the sync server.",
        subcommands: [Set.self, Show.self, Remove.self], defaultSubcommand: Show.self)

    public struct Set: ParsableCommand {

        public init() {}
        public static let configuration = CommandConfiguration(
            commandName: "set",
            abstract: "Use a sync server: its URL, this device's token, and optionally a pinned CA file.")
        @OptionGroup var global: GlobalOptions
        @Argument(help: "https://HOST[:PORT]") var url: String
        @Option(help: "This device's token (from 'brsyncd device add').") var token: String?
        @Option(
            help: ArgumentHelp(
                "Read the token from a file (kept off the command line, where other users' 'ps' can see it).",
                valueName: "file"),
            completion: .file())
        var tokenFile: String?
        @Option(
            help: ArgumentHelp(
                "A PEM CA file to verify the server with, instead of the system CA store.", valueName: "file"),
            completion: .file())
        var ca: String?
        @Flag(
            help:
                "Verify the server with the system CA store, dropping a pinned CA (without --ca, the pinned CA stays for the same server)."
        )
        var systemCa = false

        public func validate() throws {
            if systemCa && ca != nil { throw ValidationError("give --ca FILE or --system-ca, not both") }
            if (token == nil) == (tokenFile == nil) {
                throw ValidationError("give the token with --token TOKEN or --token-file FILE (one of them)")
            }
        }

        public func run() throws {
            let remote = try RemoteURL(parsing: url)
            let token = try readToken()
            if self.token != nil {
                ExitStatus.warn(
                    "the token was given on the command line, where other users of this machine can read it ('ps') and "
                        + "your shell's history keeps it: use --token-file FILE next time")
            }
            let caBytes = try readCA()
            let replica = try global.openReplica()
            var caPath: String?
            if let caBytes {
                let pinned = "\(replica.home)/ca.pem"
                do { try SecretFile.write(caBytes, to: pinned, what: "the CA") } catch {
                    throw CLIFailure(message: "\(error)")
                }
                caPath = pinned
            } else if !systemCa {
                // A new token for the same server (a dev server restarted, a
                // token issued again) keeps the CA pinned for it.
                let state = try replica.syncState()
                if state.remoteURL == remote.text, let pinned = state.caFile, access(pinned, R_OK) == 0 {
                    caPath = pinned
                }
            }
            // The token it replaces for the same server is kept: `remote set`
            // cannot check a token offline, and a mistyped one must not cost
            // the one that worked.
            // Only a token that synced since it was set is kept (a second
            // mistyped one must not push out the one that worked).
            let state = try replica.syncState()
            let sameServer = state.remoteURL == remote.text
            let replaced =
                sameServer ? (try? TokenFile.read(home: replica.home)).flatMap { $0 == token ? nil : $0 } : nil
            let provenSince =
                TokenFile.modifiedMillis(home: replica.home).map { set in (state.lastSyncMillis ?? 0) > set } ?? false
            if let replaced, provenSince { try TokenFile.write(replaced, home: replica.home, previous: true) }
            let kept =
                replaced != nil
                && (provenSince || access(TokenFile.path(home: replica.home, previous: true), F_OK) == 0)
            try TokenFile.write(token, home: replica.home)
            try replica.setRemote(url: remote.text, caFile: caPath)
            let trust =
                caPath.map { ca != nil ? " (CA pinned, copied to \($0))" : " (the CA pinned before, \($0), kept)" }
                ?? " (system CA store)"
            print(
                "remote \(remote)\(trust); token saved in \(TokenFile.path(home: replica.home))"
                    + (kept
                        ? "; the last token that synced is kept in \(TokenFile.path(home: replica.home, previous: true))"
                        : ""))
        }

        /// The token given, checked to be one `brsyncd device add` prints.
        private func readToken() throws -> String {
            let token =
                try token?.trimmingASCIIWhitespace()
                ?? String(
                    decoding: FileInput.read(GlobalOptions.absolute(tokenFile ?? ""), what: "the token file").prefix(
                        4096),
                    as: UTF8.self
                ).trimmingASCIIWhitespace()
            guard token.hasPrefix(JoinRequest.tokenPrefix), token.count >= 20, !token.contains(where: \.isWhitespace)
            else {
                // Say which part is wrong: a token that starts right may be cut short.
                // A join code (or its secret) pasted here is for 'brsync join', which makes a token from it.
                if token.hasPrefix(JoinRequest.secretPrefix) || token.hasPrefix("brsync://join") {
                    throw CLIFailure(
                        message:
                            "that is a join code, not a token: give it to 'brsync join' (it pins the server's CA and makes this machine's token); nothing was changed"
                    )
                }
                let what =
                    !token.hasPrefix(JoinRequest.tokenPrefix)
                    ? "it does not start with \(JoinRequest.tokenPrefix)"
                    : token.contains(where: \.isWhitespace)
                        ? "it contains white space"
                        : "it is too short (\(token.count) characters; a token has at least 20)"
                throw CLIFailure(
                    message:
                        "the token is not one 'brsyncd device add' prints: \(what); copy the whole line (nothing was changed)"
                )
            }
            return token
        }

        /// The CA file's bytes, checked to hold a PEM certificate, or nil
        /// when none is given.
        private func readCA() throws -> [UInt8]? {
            // The CA is checked, then copied into the home: a file moved or
            // deleted later does not stop the sync.
            if let ca {
                let absolute = GlobalOptions.absolute(ca)
                let bytes = [UInt8](try FileInput.read(absolute, what: "the CA file"))
                guard bytes.count <= 1 << 20,
                    String(decoding: bytes, as: UTF8.self).contains("-----BEGIN CERTIFICATE-----")
                else {
                    throw CLIFailure(
                        message:
                            "the CA file \(absolute) holds no PEM certificate ('-----BEGIN CERTIFICATE-----'); nothing was changed"
                    )
                }
                return bytes
            }
            return nil
        }
    }

    public struct Show: ParsableCommand {

        public init() {}
        public static let configuration = CommandConfiguration(
            commandName: "show", abstract: "Show the sync server (never the token).")
        @OptionGroup var global: GlobalOptions
        public func run() throws {
            let state = try global.openReplica().syncState()
            guard let url = state.remoteURL else {
                print(RemoteCommand.noRemote)
                return
            }
            print("remote \(url)")
            print("CA: \(state.caFile ?? "system CA store")")
        }
    }

    public struct Remove: ParsableCommand {

        public init() {}
        public static let configuration = CommandConfiguration(
            commandName: "rm", abstract: "Forget the sync server and the token; local data stays.")
        @OptionGroup var global: GlobalOptions
        public func run() throws {
            let replica = try global.openReplica()
            let had = try replica.syncState().remoteURL
            try replica.removeRemote()
            TokenFile.remove(home: replica.home)
            print(
                had == nil
                    ? "there was no remote; nothing changed" : "remote removed; the replica keeps working offline")
        }
    }
}

/// The token lives in a file only the user can read (``SecretFile``), never in the replica.
public enum TokenFile {
    /// - Parameter previous: the token the last `remote set` replaced (kept
    ///   in case the new one is refused).
    public static func path(home: String, previous: Bool = false) -> String {
        previous ? "\(home)/token.previous" : "\(home)/token"
    }

    public static func write(_ token: String, home: String, previous: Bool = false) throws {
        do throws(SecretFile.Failure) {
            try SecretFile.write(
                Array((token + "\n").utf8), to: path(home: home, previous: previous), what: "the token")
        } catch {
            throw CLIFailure(message: error.message)
        }
    }

    public static func read(home: String, previous: Bool = false) throws -> String {
        let file = path(home: home, previous: previous)
        let read: [UInt8]?
        do throws(SecretFile.Failure) {
            read = try SecretFile.read(file, what: "the token")
        } catch {
            throw CLIFailure(message: error.message)
        }
        guard let bytes = read else {
            throw CLIFailure(
                message: "cannot read the token (set it with 'brsync remote set') at \(file): no such file")
        }
        let token = String(decoding: bytes, as: UTF8.self).trimmingASCIIWhitespace()
        guard !token.isEmpty else {
            throw CLIFailure(message: "the token file is empty; run 'brsync remote set' again")
        }
        return token
    }

    /// When the token file was last written (ms since the epoch), or nil.
    public static func modifiedMillis(home: String) -> Int64? {
        var status = stat()
        guard stat(path(home: home), &status) == 0 else { return nil }
        return Int64(status.st_mtim.tv_sec) * 1000 + Int64(status.st_mtim.tv_nsec) / 1_000_000
    }

    public static func remove(home: String) {
        unlink(path(home: home))
        unlink(path(home: home, previous: true))
    }
}

extension String {
    func trimmingASCIIWhitespace() -> String {
        String(drop(while: \.isWhitespace).reversed().drop(while: \.isWhitespace).reversed())
    }
}

public struct Restore: ParsableCommand {

    public init() {}
    public static let configuration = CommandConfiguration(
        commandName: "restore",
        abstract:
            "Write a value that lost a conflict back, or a record a sync removed, as a new edit (see 'brsync log --conflicts' and '--removed')."
    )
    @OptionGroup var global: GlobalOptions
    @Flag(help: "ID is a removed record's number ('brsync log --removed'), not a conflict's.") var removed = false
    @Argument(
        help: "The conflict's number (or the removed record's, with --removed).", completion: Completions.conflictIDs)
    var id: Int64

    public func run() throws {
        let replica = try global.openReplica()
        if removed {
            let record = try replica.restore(removed: id)
            print("restored \(record.collection)/\(DisplayText.printable(record.key)) (it syncs at the next sync)")
            return
        }
        let (conflict, revived) = try replica.restore(conflict: id)
        let record = "\(conflict.collection)/\(DisplayText.printable(conflict.key))"
        print(
            "restored \(record) \(conflict.field) = \(conflict.lost.value.jsonText)"
                + (revived ? " (\(record) had been deleted since: it is back)" : ""))
    }
}
