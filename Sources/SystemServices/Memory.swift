/// The server's use of the C allocator. A thread per connection would let
/// glibc make up to eight arenas per core, each keeping what a large page
/// of records once took; brsyncd keeps four, and hands memory freed by a
/// large answer back to the system at once (`malloc_trim`), so a burst of
/// large pulls leaves no lasting footprint; so does the HTTP server once a
/// burst of connections has gone. (`<malloc.h>` is not in Swift's
/// Glibc module: the two functions are looked up by name; without them,
/// as with another C library, nothing is done.)
public enum Memory {
    private typealias Mallopt = @convention(c) (Int32, Int32) -> Int32
    private typealias MallocTrim = @convention(c) (Int) -> Int32
    /// `M_ARENA_MAX` in `<malloc.h>`.
    private static let arenaMax: Int32 = -8
    private static let mallopt = CFunction.named("mallopt", as: Mallopt.self)
    private static let mallocTrim = CFunction.named("malloc_trim", as: MallocTrim.self)

    /// At most four allocator arenas (once, at start).
    public static func configure() {
        _ = mallopt?(arenaMax, 4)
    }

    /// Returns free memory at the top of the heaps and whole free pages
    /// inside them to the system.
    public static func giveBack() {
        _ = mallocTrim?(0)
    }
}
