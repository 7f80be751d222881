/// What changes when any process commits to a store
/// (``StoreDialect/outsideWriteMarker()``). Compared, never interpreted.
public struct WriteMarker: Sendable, Equatable {
    private let parts: (Int64, Int64, Int64, Int64)

    init(_ first: Int64, _ second: Int64, _ third: Int64, _ fourth: Int64) {
        parts = (first, second, third, fourth)
    }

    /// For a store whose every writer announces itself (PostgreSQL's `NOTIFY`).
    public static let announced = WriteMarker(0, 0, 0, 0)

    public static func == (left: WriteMarker, right: WriteMarker) -> Bool {
        left.parts == right.parts
    }
}
