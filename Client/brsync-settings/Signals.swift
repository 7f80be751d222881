import CGtk
import Foundation

/// Swift closures as GLib signal handlers and timers. The connection owns the
/// closure (retained here, released by GLib when the handler goes away), so
/// a page can connect its own methods without a global.
enum Signals {
    /// A closure kept alive by the connection it serves.
    private final class Box<Body> {
        let body: Body
        init(_ body: Body) { self.body = body }
    }

    private static let release: GClosureNotify = { data, _ in
        guard let data else { return }
        Unmanaged<AnyObject>.fromOpaque(data).release()
    }

    private static func connect<Body>(_ instance: gpointer, _ signal: String, _ trampoline: GCallback, _ body: Body) {
        let data = Unmanaged.passRetained(Box(body) as AnyObject).toOpaque()
        brsync_signal_connect_owned(instance, signal, trampoline, data, release)
    }

    private static func body<Body>(_ data: gpointer?) -> Body {
        // Safe: `data` is the Box<Body> passed to `connect` with this trampoline.
        (Unmanaged<AnyObject>.fromOpaque(data!).takeUnretainedValue() as! Box<Body>).body
    }

    /// A signal of no arguments and no result ("clicked", "changed", "activate", "toggled").
    static func on(_ instance: gpointer, _ signal: String, _ body: @escaping () -> Void) {
        let trampoline: @convention(c) (gpointer?, gpointer?) -> Void = { _, data in
            (Self.body(data) as () -> Void)()
        }
        connect(instance, signal, unsafeBitCast(trampoline, to: GCallback.self), body)
    }

    /// A signal that answers whether it handled the event ("close-request").
    static func handling(_ instance: gpointer, _ signal: String, _ body: @escaping () -> Bool) {
        let trampoline: @convention(c) (gpointer?, gpointer?) -> gboolean = { _, data in
            (Self.body(data) as () -> Bool)() ? 1 : 0
        }
        connect(instance, signal, unsafeBitCast(trampoline, to: GCallback.self), body)
    }

    /// A signal with one pointer argument: a list item factory's "setup" and
    /// "bind" (the GtkListItem), "notify::…" (the property's spec).
    static func withObject(_ instance: gpointer, _ signal: String, _ body: @escaping (gpointer) -> Void) {
        let trampoline: @convention(c) (gpointer?, gpointer?, gpointer?) -> Void = { _, object, data in
            guard let object else { return }
            (Self.body(data) as (gpointer) -> Void)(object)
        }
        connect(instance, signal, unsafeBitCast(trampoline, to: GCallback.self), body)
    }

    /// A signal with one integer argument (a dialog's "response").
    static func withInteger(_ instance: gpointer, _ signal: String, _ body: @escaping (Int32) -> Void) {
        let trampoline: @convention(c) (gpointer?, gint, gpointer?) -> Void = { _, value, data in
            (Self.body(data) as (Int32) -> Void)(value)
        }
        connect(instance, signal, unsafeBitCast(trampoline, to: GCallback.self), body)
    }

    /// "key-pressed" of a key controller: the key and whether Control, Shift
    /// and Alt are held; true when handled.
    static func keys(
        _ controller: gpointer, _ body: @escaping (_ key: guint, _ control: Bool, _ shift: Bool, _ alt: Bool) -> Bool
    ) {
        let trampoline: @convention(c) (gpointer?, guint, guint, GdkModifierType, gpointer?) -> gboolean = {
            _, key, _, state, data in
            let handle = Self.body(data) as (guint, Bool, Bool, Bool) -> Bool
            return handle(
                key, state.rawValue & GDK_CONTROL_MASK.rawValue != 0,
                state.rawValue & GDK_SHIFT_MASK.rawValue != 0, state.rawValue & GDK_ALT_MASK.rawValue != 0)
                ? 1 : 0
        }
        connect(controller, "key-pressed", unsafeBitCast(trampoline, to: GCallback.self), body)
    }

    /// Runs `body` every `milliseconds` on the main loop while it returns true.
    static func every(milliseconds: UInt32, _ body: @escaping () -> Bool) {
        addSource(priority: G_PRIORITY_DEFAULT, milliseconds: milliseconds, body)
    }

    /// Runs `body` once, after what is waiting to be drawn has been drawn
    /// (a low priority: GTK's layout and painting come first).
    static func afterDrawing(_ body: @escaping () -> Void) {
        addSource(priority: G_PRIORITY_LOW, milliseconds: nil) {
            body()
            return false
        }
    }

    /// A main-loop source (a timeout, or with no interval an idle one) that
    /// owns `body` and runs it while it returns true.
    private static func addSource(priority: Int32, milliseconds: UInt32?, _ body: @escaping () -> Bool) {
        let data = Unmanaged.passRetained(Box(body) as AnyObject).toOpaque()
        let trampoline: @convention(c) (gpointer?) -> gboolean = { data in
            (Self.body(data) as () -> Bool)() ? 1 : 0
        }
        let destroy: GDestroyNotify = { data in
            guard let data else { return }
            Unmanaged<AnyObject>.fromOpaque(data).release()
        }
        if let milliseconds {
            g_timeout_add_full(priority, milliseconds, trampoline, data, destroy)
        } else {
            g_idle_add_full(priority, trampoline, data, destroy)
        }
    }

    /// Runs `work` on a thread of its own (a check that may wait on the
    /// network), then `done` with its result on the main loop.
    static func inBackground<Result>(_ work: @escaping @Sendable () -> Result, then done: @escaping (Result) -> Void) {
        // Safe: the one value `work` made, of this type.
        let hand = Hand { done($0 as! Result) }
        let thread = Thread {
            hand.result = work()
            let data = Unmanaged.passRetained(hand as AnyObject).toOpaque()
            g_idle_add(
                { data in
                    // Safe: `data` is the Hand retained just above, released here once.
                    let hand = Unmanaged<AnyObject>.fromOpaque(data!).takeRetainedValue() as! Hand
                    if let result = hand.result { hand.done(result) }
                    return 0
                }, data)
        }
        thread.start()
    }

    /// Runs `body` once, when the main loop is next idle.
    static func soon(_ body: @escaping () -> Void) {
        every(milliseconds: 0) {
            body()
            return false
        }
    }
}

/// A background result handed to the main loop: the worker writes `result`
/// before it queues the main loop's call, which alone reads it and runs
/// `done` (GLib orders the two, so no lock is needed).
private final class Hand: @unchecked Sendable {
    var result: Any?
    let done: (Any) -> Void
    init(_ done: @escaping (Any) -> Void) { self.done = done }
}
