/// What changes when any process commits to a store
/// (``StoreDialect/commitState()``). Compared, never interpreted.
public struct CommitState: Sendable, Equatable {
    private let parts: (Int64, Int64, Int64, Int64)

    init(_ first: Int64, _ second: Int64, _ third: Int64, _ fourth: Int64) {
        parts = (first, second, third, fourth)
    }

    /// For a store whose every writer announces itself (PostgreSQL's `NOTIFY`).
    public static let announced = CommitState(0, 0, 0, 0)

    public static func == (left: CommitState, right: CommitState) -> Bool {
        left.parts == right.parts
    }
}
