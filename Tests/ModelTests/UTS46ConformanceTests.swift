import Foundation
import Testing
@testable import Model

/// UTS #46 against Unicode's own conformance data (Tests/Data/IdnaTestV2.txt),
/// read with the URL Standard's flags: the toAsciiN column, with the errors
/// of the checks the URL Standard turns off (VerifyDnsLength: A4_1, A4_2;
/// CheckHyphens: V2, V3; toUnicode's X4_2) not counted, and the rows whose
/// outcome depends on UseSTD3ASCIIRules (true in the data, false in the URL
/// Standard: `$`, `≠`, …) left out. (The data file's header lists P4 for
/// VerifyDnsLength; P4 is Punycode that does not decode, an error here.)
@Suite struct UTS46ConformanceTests {
    struct Row: CustomStringConvertible {
        let line: Int
        let source: String
        let expected: String
        let errors: [String]
        /// It holds a character whose status depends on UseSTD3ASCIIRules
        /// (the data is made with it true; the URL Standard sets it false).
        let dependsOnSTD3: Bool
        var description: String { "line \(line): \(source.debugDescription) → \(errors.isEmpty ? expected.debugDescription : "error \(errors)")" }
    }

    /// Rows where Unicode 15.1 decides otherwise than the 13.0 data, by line.
    static let knownDifferences: [Int: String] = [
        301: "15.1 added: with CheckHyphens=false a label must not begin with xn-- (here the decoded 'xn--a-ä')",
        3075: "U+18C4E (Khitan Small Script) was not assigned when the data was made (13.0 beta, 2019-11-07); valid since 13.0",
        3076: "the same label, from its Punycode",
    ]

    static let ignored: Set<String> = ["A4_1", "A4_2", "V2", "V3", "X4_2"]

    static func unescape(_ text: Substring) -> String {
        var output = String.UnicodeScalarView()
        var scalars = Array(text.unicodeScalars)[...]
        while let scalar = scalars.popFirst() {
            if scalar == "\\", scalars.first == "u", scalars.count >= 5, let value = UInt32(String(String.UnicodeScalarView(scalars.dropFirst().prefix(4))), radix: 16),
               let decoded = Unicode.Scalar(value) {
                output.append(decoded)
                scalars = scalars.dropFirst(5)
            } else if scalar == "\\", scalars.first == "x", scalars.dropFirst().first == "{", let close = scalars.firstIndex(of: "}"),
                      let value = UInt32(String(String.UnicodeScalarView(scalars[(scalars.startIndex + 2)..<close])), radix: 16),
                      let decoded = Unicode.Scalar(value) {
                output.append(decoded)
                scalars = scalars[(close + 1)...]
            } else {
                output.append(scalar)
            }
        }
        return String(output)
    }

    static func rows() throws -> [Row] {
        let path = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Data/IdnaTestV2.txt").path
        let text = try String(contentsOfFile: path, encoding: .utf8)
        var rows: [Row] = []
        // Split by scalar, not by Character: U+0600 and other prepended marks
        // join the ';' after them into one Character.
        for (number, line) in text.unicodeScalars.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let content = line.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).first ?? []
            let columns = content.split(separator: ";", omittingEmptySubsequences: false)
                .map { String(String.UnicodeScalarView($0)).trimmingCharacters(in: .whitespaces) }
            guard columns.count >= 5 else { continue }
            let source = unescape(Substring(columns[0]))
            let toUnicode = columns[1].isEmpty ? source : unescape(Substring(columns[1]))
            let toASCII = columns[3].isEmpty ? toUnicode : unescape(Substring(columns[3]))
            let status = columns[4].isEmpty ? columns[2] : columns[4]
            let codes = status.trimmingCharacters(in: CharacterSet(charactersIn: "[]")).split(whereSeparator: { $0 == " " || $0 == "," }).map(String.init)
            // (≠, ≮ and ≯ decompose to = < > and a combining mark: STD3 too in 13.0.)
            let std3 = (source + toUnicode).unicodeScalars.contains { NFC.decompose([$0.value]).contains(where: UTS46.isSTD3) }
            rows.append(Row(line: number + 1, source: source, expected: toASCII, errors: codes.filter { !ignored.contains($0) }, dependsOnSTD3: std3))
        }
        return rows
    }

    @Test func idnaTestV2() throws {
        let rows = try Self.rows()
        #expect(rows.count > 6000)
        var failures: [String] = []
        // A row whose outcome depends on UseSTD3ASCIIRules is still compared
        // when the data expects success (STD3 rules only add errors).
        let compared = rows.filter { !$0.dependsOnSTD3 || $0.errors.isEmpty }
        var differences: [Int] = []
        for row in compared {
            if Self.knownDifferences[row.line] != nil {
                differences.append(row.line)
                continue
            }
            switch UTS46.toASCII(row.source) {
            case .success(let ascii):
                if !row.errors.isEmpty { failures.append("\(row): got \(ascii.debugDescription)") }
                else if ascii != row.expected { failures.append("\(row): got \(ascii.debugDescription)") }
            case .failure(let problem):
                if row.errors.isEmpty { failures.append("\(row): refused (\(problem.reason))") }
            }
        }
        print("IdnaTestV2 (Unicode 13.0.0 data, tables \(UTS46Data.unicodeVersion)): \(compared.count - failures.count - differences.count) of \(compared.count) rows pass, "
              + "\(differences.count) differ as Unicode changed since the data (listed in the test), \(rows.count - compared.count) of \(rows.count) expect an error that depends on UseSTD3ASCIIRules")
        #expect(differences.count == Self.knownDifferences.count)
        for failure in failures.prefix(60) { print("  " + failure) }
        #expect(failures.isEmpty)
    }
}
