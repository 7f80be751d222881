import Glibc

/// The C library's words for an error number (`strerror`): the one place
/// brsync turns `errno` into text for a message.
public enum SystemError {
    /// The text for `code` (by default the calling thread's `errno`, read
    /// when the call is made).
    public static func text(_ code: Int32 = errno) -> String {
        String(cString: strerror(code))
    }
}
