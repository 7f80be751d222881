import Foundation
import TestSupport
import Testing

/// The README's commands run as written: every `sh` block that needs no
/// network, server or desktop, with the built binaries and a throw-away
/// home. A line whose comment shows what it prints (`resolve`, `suggest`,
/// `rules test`) must print that.
@Suite struct ReadmeTests {
    static let readme: String = {
        (try? String(contentsOfFile: Repository.file("README.md"), encoding: .utf8)) ?? ""
    }()

    /// The README's `sh` blocks, in order.
    static var blocks: [String] {
        var blocks: [String] = []
        var current: [Substring]?
        for line in readme.split(separator: "\n", omittingEmptySubsequences: false) {
            if current == nil, line == "```sh" {
                current = []
            } else if current != nil, line == "```" {
                blocks.append(current!.joined(separator: "\n"))
                current = nil
            } else if current != nil {
                current!.append(line)
            }
        }
        return blocks
    }

    /// Words, spaces and tabs made one space.
    static func words(_ text: some StringProtocol) -> String {
        text.split(whereSeparator: { $0 == " " || $0 == "\t" }).joined(separator: " ")
    }

    /// "Using brsync": each line, in order, in one home.
    @Test func theUsageExamplesRunAsWritten() throws {
        let block = try #require(Self.blocks.first { $0.hasPrefix("brsync init") }, "the README's usage block")
        let cli = try CLIHarness()
        let folder = URL(fileURLWithPath: cli.binary).deletingLastPathComponent().path
        var ran = 0
        for line in block.split(separator: "\n") where !line.trimmingCharacters(in: .whitespaces).isEmpty {
            let command = line.split(separator: "#", maxSplits: 1)[0]
            let comment = line.contains("#") ? Self.words(line.split(separator: "#", maxSplits: 1)[1]) : ""
            let result = try cli.run(
                ["-c", String(command)], environment: ["PATH": folder + ":/usr/bin:/bin"], program: "/bin/bash")
            let noMatch = comment == "no match"
            #expect(result.status == (noMatch ? 1 : 0), "\(line): \(result)")
            if command.contains("brsync resolve") || command.contains("brsync suggest")
                || command.contains("brsync rules test")
            {
                #expect(
                    comment.hasPrefix(Self.words(result.stdout.trimmingCharacters(in: .newlines)))
                        && !result.stdout.isEmpty,
                    "the README says \(comment); it prints \(result.stdout)")
            }
            ran += 1
        }
        #expect(ran >= 12)
    }

    /// "Try the selector offline", with the built binaries for `.build/release/`.
    @Test func theOfflineTryRunsAsWritten() throws {
        let block = try #require(Self.blocks.first { $0.contains("resolve --json") }, "the README's offline block")
        let cli = try CLIHarness()
        let folder = URL(fileURLWithPath: cli.binary).deletingLastPathComponent().path
        let script = block.replacingOccurrences(of: "swift build -c release && ", with: "")
            .replacingOccurrences(of: ".build/release/", with: folder + "/")
        #expect(!script.contains("swift build"))
        let result = try cli.run(
            ["-c", script], environment: ["PATH": "/usr/bin:/bin", "TMPDIR": cli.directory.path], program: "/bin/bash")
        #expect(result.status == 0, "\(result)")
        #expect(result.stdout.contains(#""browser":"firefox""#), "\(result.stdout)")
    }
}
