/// Where a client's cursor comes from: the timeline (epoch) and the
/// account of the answer that gave it (a pull's `epoch` and `account`, a
/// push's). A server takes a rollback from a cursor past the account's
/// latest record only when the cursor is of that account's own timeline:
/// a home pointed at another account's token brings a cursor that says
/// nothing about this one (two accounts that never started a timeline of
/// their own share their store's epoch).
public struct CursorOrigin: Sendable, Equatable {
    /// The timeline the cursor belongs to, or nil when the client names none.
    public var epoch: String?
    /// The account id the client last met (``PullResponse/account``), or
    /// nil when it names none (it met none yet, or it is older).
    public var account: String?

    public init(epoch: String? = nil, account: String? = nil) {
        self.epoch = epoch
        self.account = account
    }

    /// Whether a cursor of this origin counts on timeline `epoch` of the
    /// account `account`: what the client does not name is taken to be so
    /// (clients older than the member, a first pull).
    public func isOf(epoch current: String, account uid: String) -> Bool {
        (epoch == nil || epoch == current) && (account == nil || account == uid)
    }

    /// Whether `text` may be an account id as the client sends it: 1 to 64
    /// lowercase letters and digits (a server's account ids are 16 hex digits).
    public static func isAccountID(_ text: String) -> Bool {
        !text.isEmpty && text.utf8.count <= 64 && SessionRules.isPlainEpoch(text)
    }
}
