import ArgumentParser
import Glibc
import Replica
import SystemServices

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

public struct Export: ParsableCommand {

    public init() {}
    public static let configuration = CommandConfiguration(
        commandName: "export",
        abstract: "Print browsers, rules and settings as JSON (launch commands are device-local and left out).")
    @OptionGroup var global: GlobalOptions

    public func run() throws {
        try Output.json(encoding: try global.openReplica().export())
    }
}

public struct Import: ParsableCommand {

    public init() {}
    public static let configuration = CommandConfiguration(
        commandName: "import",
        abstract: "Import a JSON export ('-' reads standard input). All or nothing: any invalid record changes nothing."
    )
    @OptionGroup var global: GlobalOptions
    @Argument(help: "The file to import, or '-'.", completion: .file(extensions: ["json"])) var file: String

    public func run() throws {
        let data = file == "-" ? readStandardInput() : try FileInput.read(file, what: "the file")
        let summary = try Self.importExport(
            data, named: file == "-" ? "standard input" : file, into: global.openReplica())
        print(
            "imported \(summary.browsers) browser(s), \(summary.rules) rule(s), \(summary.settings) setting(s) that changed"
        )
    }

    /// Imports `data`, an export read from `name`: all or nothing (the
    /// command and the settings window).
    /// - Throws: `CLIFailure` naming where an export that does not read
    ///   went wrong; the replica's errors for a record it refuses.
    public static func importExport(
        _ data: Data, named name: String, into replica: Replica
    ) throws
        -> Replica.ImportSummary
    {
        let document: ExportDocument
        do {
            document = try JSONDecoder().decode(ExportDocument.self, from: data)
        } catch let error as DecodingError {
            throw CLIFailure(message: "\(name) is not a valid brsync export: \(describe(error))")
        }
        return try replica.importDocument(document)
    }

    private func readStandardInput() -> Data {
        var data = Data()
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = read(0, &buffer, buffer.count)
            if count <= 0 { break }
            data.append(contentsOf: buffer[0..<count])
        }
        return data
    }

    static func describe(_ error: DecodingError) -> String {
        func path(_ context: DecodingError.Context) -> String {
            let keys = context.codingPath.map { $0.intValue.map { "[\($0)]" } ?? ".\($0.stringValue)" }.joined()
            return keys.isEmpty ? "" : " at \(keys)"
        }
        switch error {
        case .dataCorrupted(let context): return "\(context.debugDescription)\(path(context))"
        case .keyNotFound(let key, let context): return "missing \"\(key.stringValue)\"\(path(context))"
        case .typeMismatch(_, let context), .valueNotFound(_, let context):
            return "\(context.debugDescription)\(path(context))"
        @unknown default: return "\(error)"
        }
    }
}
