import ArgumentParser
import Glibc
import Model
import SystemServices

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

public struct Suggest: ParsableCommand {

    public init() {}
    public static let configuration = CommandConfiguration(
        commandName: "suggest",
        abstract: "Print the pattern 'remember for this domain' proposes for a URL (its registrable domain).",
        discussion: """
            Reads the system's Public Suffix List (Debian package 'publicsuffix'):
            \(defaultListPath), or the file in $BRSYNC_PUBLIC_SUFFIX_LIST.
            """)
    static let defaultListPath = "/usr/share/publicsuffix/public_suffix_list.dat"

    @OptionGroup var global: GlobalOptions
    @Argument(help: "The URL.") var url: String

    public func run() throws {
        let url = try NormalizedURL.argument(url)
        print(try Self.loadList().suggestedPattern(for: url))
    }

    /// The system's Public Suffix List (or `$BRSYNC_PUBLIC_SUFFIX_LIST`).
    static func loadList() throws -> PublicSuffixList {
        let path = ProcessEnvironment.value("BRSYNC_PUBLIC_SUFFIX_LIST") ?? Self.defaultListPath
        guard FileManager.default.fileExists(atPath: path) else {
            throw CLIFailure(
                message:
                    "the Public Suffix List is missing at \(path): install the Debian package 'publicsuffix' or set BRSYNC_PUBLIC_SUFFIX_LIST"
            )
        }
        let data = try FileInput.read(path, what: "the Public Suffix List")
        guard let text = String(data: data, encoding: .utf8) else {
            throw CLIFailure(message: "the Public Suffix List at \(path) is not UTF-8 text")
        }
        do { return try PublicSuffixList(text: text) } catch {
            throw CLIFailure(message: "the Public Suffix List at \(path) is unusable: \(error.reason)")
        }
    }
}
