import Glibc
import Replica
import SystemServices

/// The account key on this machine: `HOME/account-key`, mode 0600, holding
/// the recovery code (its checksum catches a damaged file) and, after it,
/// the codes of keys rotated away (kept to recognise a server restored from
/// before a rotation; never used to seal). A key change waits in
/// `HOME/account-key.next` until the server has it. Written and read as
/// every secret is (``SecretFile``).
public enum AccountKeyFile {
    public static func path(home: String, pending: Bool = false) -> String {
        pending ? "\(home)/account-key.next" : "\(home)/account-key"
    }

    static let header =
        "# brsync account key: it opens every synced rule. Keep it secret; keep the recovery code apart from it.\n"

    /// The key, or nil when this machine has none.
    /// - Throws: ``SyncError/usage(_:)`` for a file others can read (the key
    ///   would no longer be secret), one that cannot be read, or one that
    ///   holds no valid code.
    public static func read(home: String, pending: Bool = false) throws(SyncError) -> AccountKey? {
        try read(file: path(home: home, pending: pending))
    }

    /// Where a key change's key waits when the server did not take it (its
    /// code was shown, so another machine may still take it there).
    public static func unusedPath(home: String) -> String { "\(home)/account-key.unused" }

    static func read(file: String) throws(SyncError) -> AccountKey? {
        guard let keys = try readAll(file: file) else { return nil }
        guard let key = keys.first else { throw .usage("the account key at \(file) holds no recovery code") }
        return key
    }

    /// The keys this machine held before its current one, newest first
    /// (empty without a key file).
    public static func readOlder(home: String) throws(SyncError) -> [AccountKey] {
        guard try read(home: home) != nil else { return [] }
        return Array(try readAll(file: path(home: home))?.dropFirst() ?? [])
    }

    /// Every code in the file, checked, or nil when there is no file.
    private static func readAll(file: String) throws(SyncError) -> [AccountKey]? {
        let bytes: [UInt8]
        do throws(SecretFile.Failure) {
            guard let read = try SecretFile.read(file, what: "the account key") else { return nil }
            bytes = read
        } catch {
            throw .usage(
                error.kind == .readableByOthers ? error.message + ", and consider the key seen" : error.message)
        }
        var keys: [AccountKey] = []
        for code in codeLines(bytes) {
            do { keys.append(try AccountKey(recoveryCode: code)) } catch {
                throw .usage("the account key at \(file) is damaged: \(error)")
            }
        }
        return keys
    }

    static let olderHeader =
        "# Keys rotated away, newest first: kept to recognise a server restored from before a rotation, never used to seal.\n"

    /// Writes the key (replacing any), with the keys held before it, mode
    /// 0600, durably.
    public static func write(
        _ key: AccountKey, home: String, pending: Bool = false, older: [AccountKey] = []
    ) throws(SyncError) {
        var seen: Set<String> = [key.id]
        let kept = older.filter { seen.insert($0.id).inserted }
        let olderText = kept.isEmpty ? "" : "\n" + olderHeader + kept.map { $0.recoveryCode + "\n" }.joined()
        let bytes = Array((header + key.recoveryCode + "\n" + olderText).utf8)
        do throws(SecretFile.Failure) {
            try SecretFile.write(bytes, to: path(home: home, pending: pending), what: "the account key")
        } catch {
            throw .usage(error.message)
        }
        WatchWake.poke(home: home) // a running watch syncs with the key as it is now
    }

    /// Makes `key` this machine's key (`brsync key add`, `join`); a key it
    /// replaces is kept as an older key.
    public static func add(_ key: AccountKey, home: String) throws(SyncError) {
        let current = try read(home: home)
        try write(key, home: home, older: (current.map { [$0] } ?? []) + readOlder(home: home))
        unlink(unusedPath(home: home))
    }

    public static func remove(home: String, pending: Bool = false) {
        unlink(path(home: home, pending: pending))
        WatchWake.poke(home: home)
    }

    /// The pending key (of a key change the server took) takes the current
    /// one's place; the current one is kept after it, as an older key.
    /// Stopped half way, the pending file is still there and this is done
    /// again.
    public static func promotePending(home: String) throws(SyncError) {
        guard let pending = try read(home: home, pending: true) else { return }
        let current = try read(home: home)
        let older = current.map { [$0] } ?? []
        try write(pending, home: home, older: older + (try readOlder(home: home)))
        remove(home: home, pending: true)
        unlink(unusedPath(home: home))
    }

    /// Whether ``settle(home:accountKeyID:)`` has anything to settle.
    public static func unsettled(home: String) -> Bool {
        access(path(home: home, pending: true), F_OK) == 0 || access(unusedPath(home: home), F_OK) == 0
    }

    /// Finishes a key change a stopped machine left half done: the pending
    /// key becomes the key when the account is sealed with it (the server
    /// agreed). When the account does not use it (the server never took it,
    /// or was restored from before), it is kept aside, not deleted: its code
    /// was shown, and another machine may take it to the server yet; when
    /// the account turns out to use it, it becomes the key here too. A key
    /// added or changed later drops it.
    /// - Parameter accountKeyID: the key id the account uses now, nil when
    ///   it is not encrypted.
    /// - Returns: whether a key took the current one's place, or nil when
    ///   there was nothing to settle.
    @discardableResult
    public static func settle(home: String, accountKeyID: () throws -> String?) throws -> Bool? {
        let pending = try read(home: home, pending: true)
        let unused = try read(file: unusedPath(home: home))
        guard pending != nil || unused != nil else { return nil }
        let current = try accountKeyID()
        if let pending, current == pending.id {
            try promotePending(home: home)
            return true
        }
        if let unused, current == unused.id {
            try add(unused, home: home)
            return true
        }
        if pending != nil, rename(path(home: home, pending: true), unusedPath(home: home)) != 0 {
            throw SyncError.usage(
                "cannot move the account key at \(path(home: home, pending: true)) aside: \(SystemError.text())")
        }
        return false
    }

    /// The lines of a key file, or of codes pasted or piped in, that can hold
    /// a code: not blank, not a `#` comment.
    public static func codeLines(_ bytes: [UInt8]) -> [String] {
        String(decoding: bytes, as: UTF8.self).split(whereSeparator: { $0 == "\n" || $0 == "\r" })
            .filter { !$0.hasPrefix("#") && !$0.allSatisfy(\.isWhitespace) }.map(String.init)
    }

    /// A file of at most 4 KiB (a recovery code is 66 bytes; anything much
    /// larger is not one).
    public static func readSmallFile(_ file: String, what: String) throws(SyncError) -> [UInt8] {
        let descriptor = open(file, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw .usage("cannot read \(what) at \(file): \(SystemError.text())") }
        defer { close(descriptor) }
        return try readSmall(descriptor, what: "\(what) at \(file)")
    }

    /// At most 4 KiB from `descriptor` (a file or standard input).
    public static func readSmall(_ descriptor: Int32, what: String) throws(SyncError) -> [UInt8] {
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4097)
        while bytes.count <= 4096 {
            let count = Glibc.read(descriptor, &buffer, 4097 - bytes.count)
            if count < 0 {
                if errno == EINTR { continue }
                throw .usage("cannot read \(what): \(SystemError.text())")
            }
            if count == 0 { break }
            bytes += buffer[0..<count]
        }
        guard bytes.count <= 4096 else { throw .usage("\(what) is larger than 4 KiB: not a recovery code") }
        return bytes
    }
}
