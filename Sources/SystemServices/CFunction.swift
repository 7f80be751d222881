import Glibc

/// A C library function looked up by name at run time, for what Swift's
/// Glibc module does not declare (`malloc_trim`, glibc 2.34's
/// `posix_spawn_file_actions_addclosefrom_np`): nil when this C library has
/// none, and the caller goes without.
public enum CFunction {
    /// The function `name` as `type` (a `@convention(c)` function type).
    public static func named<Function>(_ name: String, as type: Function.Type) -> Function? {
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), name) else { return nil }
        return unsafeBitCast(symbol, to: type)
    }
}
