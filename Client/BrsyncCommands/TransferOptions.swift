import ArgumentParser

/// Options of push, pull and sync (run by `brsync-sync`; `brsync` declares
/// them too, for its help and manual).
public struct TransferOptions: ParsableArguments {
    public init() {}
    @Flag(help: "No progress output.") public var quiet = false
    @Flag(help: "Print a JSON summary.") public var json = false
}
