import CSQLite
import Glibc
import Synchronization

/// The header of a database's WAL index (its `-shm` file) as SQLite maps it
/// in this process, read with a few loads and no system call. Its change
/// counter moves with every transaction any process commits, and its frame
/// count and salts with every write to the log; SQLite itself starts each
/// read transaction by reading it.
///
/// The mapping is SQLite's own, asked of a connection kept for it
/// (`xShmMap` of its file, after a read made SQLite map it): mapping the file
/// a second time would mean a descriptor of it, and closing one drops the
/// POSIX locks SQLite holds on it, locks being per process and file. The
/// header is read without a lock: a read that races a commit sees the
/// values before it or after it, and only equality is asked of them.
public final class WALIndexHeader: @unchecked Sendable {
    // @unchecked: `database` is used by init and close alone; `header` is
    // read only between `users` going up and down while `closed` is false,
    // and close() unmaps only once no reader is left.
    private var database: Database?
    private let header: UnsafeRawPointer
    private let users = Atomic<Int>(0)
    private let closed = Atomic<Bool>(false)

    /// What the header says: equal values, no commit in between.
    public struct Reading: Sendable, Equatable {
        public let change: UInt32
        public let frames: UInt32
        public let salt1: UInt32
        public let salt2: UInt32
    }

    /// Maps the WAL index of the database at `path` (in WAL mode, with at
    /// least one table); nil when SQLite has none to give (another journal
    /// mode, a VFS without shared memory).
    public init?(path: String) {
        guard let database = try? Database(path: path, mode: .readWrite),
            (try? database.scalar("PRAGMA journal_mode"))??.stringValue?.lowercased() == "wal",
            (try? database.transaction(.deferred) { try database.scalar("SELECT count(*) FROM sqlite_master") }) != nil
        else { return nil }
        var file: UnsafeMutablePointer<sqlite3_file>?
        guard sqlite3_file_control(database.handle, "main", SQLITE_FCNTL_FILE_POINTER, &file) == SQLITE_OK, let file,
            let methods = file.pointee.pMethods, methods.pointee.iVersion >= 2, let map = methods.pointee.xShmMap
        else { return nil }
        var region: UnsafeMutableRawPointer?
        // Region 0 (32 KiB, SQLite's WALINDEX_PGSZ), not extended: the one SQLite mapped for that read.
        guard map(file, 0, 32_768, 0, &region) == SQLITE_OK, let region else { return nil }
        self.database = database
        header = UnsafeRawPointer(region)
        guard read() != nil else {
            close()
            return nil
        }
    }

    deinit { close() }

    /// The header now (its first copy: iChange at byte 8, mxFrame at 16,
    /// the salts at 32 and 36, native byte order); nil once closed or
    /// before SQLite initialised it.
    public func read() -> Reading? {
        // Sequentially consistent: close() sees this reader, or this reader sees it closed.
        users.add(1, ordering: .sequentiallyConsistent)
        defer { users.subtract(1, ordering: .sequentiallyConsistent) }
        guard !closed.load(ordering: .sequentiallyConsistent), header.load(fromByteOffset: 12, as: UInt8.self) != 0
        else { return nil }
        return Reading(
            change: header.load(fromByteOffset: 8, as: UInt32.self),
            frames: header.load(fromByteOffset: 16, as: UInt32.self),
            salt1: header.load(fromByteOffset: 32, as: UInt32.self),
            salt2: header.load(fromByteOffset: 36, as: UInt32.self))
    }

    /// Closes the connection whose mapping is read (after any read under
    /// way); later reads are nil.
    public func close() {
        guard !closed.exchange(true, ordering: .sequentiallyConsistent) else { return }
        while users.load(ordering: .sequentiallyConsistent) > 0 { sched_yield() }
        database = nil
    }
}
