import Glibc

/// The server's use of the C allocator. A thread per connection would let
/// glibc make up to eight arenas per core, each keeping what a large page
/// of records once took; brsyncd keeps four, and hands memory freed by a
/// large answer back to the system at once (`malloc_trim`), so a burst of
/// large pulls leaves no lasting footprint. (`<malloc.h>` is not in Swift's
/// Glibc module: the two functions are looked up by name; without them,
/// as with another C library, nothing is done.)
public enum Memory {
    private typealias Mallopt = @convention(c) (Int32, Int32) -> Int32
    private typealias MallocTrim = @convention(c) (Int) -> Int32
    /// `M_ARENA_MAX` in `<malloc.h>`.
    private static let arenaMax: Int32 = -8

    private static func function<T>(_ name: String, as type: T.Type) -> T? {
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), name) else { return nil }
        return unsafeBitCast(symbol, to: type)
    }

    /// At most four allocator arenas (once, at start).
    public static func configure() {
        _ = function("mallopt", as: Mallopt.self)?(arenaMax, 4)
    }

    /// Returns free memory at the top of the heaps and whole free pages
    /// inside them to the system.
    static func giveBack() {
        _ = function("malloc_trim", as: MallocTrim.self)?(0)
    }
}
