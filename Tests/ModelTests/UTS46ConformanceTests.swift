import Foundation
import TestSupport
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
        var description: String {
            "line \(line): \(source.debugDescription) → \(errors.isEmpty ? expected.debugDescription : "error \(errors)")"
        }
    }

    /// Rows where a later Unicode decides otherwise than the 13.0 data, by line.
    static let knownDifferences: [Int: String] = [
        301: "15.1 added: with CheckHyphens=false a label must not begin with xn-- (here the decoded 'xn--a-ä')",
        3075:
            "U+18C4E (Khitan Small Script) was not assigned when the data was made (13.0 beta, 2019-11-07); valid since 13.0",
        3076: "the same label, from its Punycode",
        3281: "its Punycode decodes to U+3F8CD (Small Seal Script), unassigned in 13.0, valid since 18.0",
        4098: "U+32931 (CJK Unified Ideographs Extension J), unassigned in 13.0, valid since 17.0",
        4099: "the same labels, from their Punycode",
        4279: "its Punycode decodes to U+32B9A (CJK Extension J), valid since 17.0",
        5700: "U+3E8AC (Small Seal Script), unassigned in 13.0, valid since 18.0",
        5701: "the same label, written with another full stop",
        5702: "the same labels, from their Punycode",
    ]

    static let ignored: Set<String> = ["A4_1", "A4_2", "V2", "V3", "X4_2"]

    /// Code points the data (13.0) calls disallowed that UTS #46 16.0 allows
    /// (mapped: Cyrillic palochka, Georgian capitals, Ⅎ, Ↄ and five CJK
    /// compatibility ideographs; ignored: Hangul fillers, Khmer inherent
    /// vowels, invisible operators and musical formatting; valid: U+1806).
    /// The tables say so since 18.0; every one was disallowed in 15.1, so no
    /// rule key made before changes (`idnKeysMadeWithOlderTablesStayTheSame`).
    static let allowedSince16: [ClosedRange<UInt32>] = [
        0x04C0...0x04C0, 0x10A0...0x10C5, 0x115F...0x1160, 0x17B4...0x17B5, 0x1806...0x1806, 0x180E...0x180E,
        0x2061...0x2063, 0x206A...0x206F, 0x2132...0x2132, 0x2183...0x2183, 0x3164...0x3164, 0xFFA0...0xFFA0,
        0x1D173...0x1D17A, 0x2F868...0x2F868, 0x2F874...0x2F874, 0x2F91F...0x2F91F, 0x2F95F...0x2F95F,
        0x2F9BF...0x2F9BF,
    ]

    static func unescape(_ text: Substring) -> String {
        var output = String.UnicodeScalarView()
        var scalars = Array(text.unicodeScalars)[...]
        while let scalar = scalars.popFirst() {
            if scalar == "\\", scalars.first == "u", scalars.count >= 5,
                let value = UInt32(String(String.UnicodeScalarView(scalars.dropFirst().prefix(4))), radix: 16),
                let decoded = Unicode.Scalar(value)
            {
                output.append(decoded)
                scalars = scalars.dropFirst(5)
            } else if scalar == "\\", scalars.first == "x", scalars.dropFirst().first == "{",
                let close = scalars.firstIndex(of: "}"),
                let value = UInt32(
                    String(String.UnicodeScalarView(scalars[(scalars.startIndex + 2)..<close])), radix: 16),
                let decoded = Unicode.Scalar(value)
            {
                output.append(decoded)
                scalars = scalars[(close + 1)...]
            } else {
                output.append(scalar)
            }
        }
        return String(output)
    }

    static func rows() throws -> [Row] {
        let path = Repository.file("Tests/Data/IdnaTestV2.txt")
        let text = try String(contentsOfFile: path, encoding: .utf8)
        var rows: [Row] = []
        // Split by scalar, not by Character: U+0600 and other prepended marks
        // join the ';' after them into one Character.
        for (number, line) in text.unicodeScalars.split(separator: "\n", omittingEmptySubsequences: false).enumerated()
        {
            let content = line.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).first ?? []
            let columns = content.split(separator: ";", omittingEmptySubsequences: false)
                .map { String(String.UnicodeScalarView($0)).trimmingCharacters(in: .whitespaces) }
            guard columns.count >= 5 else { continue }
            let source = unescape(Substring(columns[0]))
            let toUnicode = columns[1].isEmpty ? source : unescape(Substring(columns[1]))
            let toASCII = columns[3].isEmpty ? toUnicode : unescape(Substring(columns[3]))
            let status = columns[4].isEmpty ? columns[2] : columns[4]
            let codes = status.trimmingCharacters(in: CharacterSet(charactersIn: "[]")).split(whereSeparator: {
                $0 == " " || $0 == ","
            }).map(String.init)
            // (≠, ≮ and ≯ decompose to = < > and a combining mark: STD3 too in 13.0.)
            let std3 = (source + toUnicode).unicodeScalars.contains {
                NFC.decompose([$0.value]).contains(where: UTS46.isSTD3)
            }
            rows.append(
                Row(
                    line: number + 1, source: source, expected: toASCII, errors: codes.filter { !ignored.contains($0) },
                    dependsOnSTD3: std3))
        }
        return rows
    }

    @Test func idnaTestV2() throws {
        let rows = try Self.rows()
        #expect(rows.count > 6000)
        var failures: [String] = []
        // A row whose outcome depends on UseSTD3ASCIIRules is still compared
        // when the data expects success (STD3 rules only add errors).
        // A row that expects a code point allowed since to be refused is left out.
        let allowedSince = rows.filter { row in
            row.errors.contains { $0 == "P1" || $0 == "V6" }
                && row.source.unicodeScalars.contains { scalar in
                    Self.allowedSince16.contains { $0.contains(scalar.value) }
                }
        }
        let left = Set(allowedSince.map(\.line))
        let compared = rows.filter { (!$0.dependsOnSTD3 || $0.errors.isEmpty) && !left.contains($0.line) }
        var differences: [Int] = []
        for row in compared {
            if Self.knownDifferences[row.line] != nil {
                differences.append(row.line)
                continue
            }
            switch UTS46.toASCII(row.source) {
            case .success(let ascii):
                if !row.errors.isEmpty {
                    failures.append("\(row): got \(ascii.debugDescription)")
                } else if ascii != row.expected {
                    failures.append("\(row): got \(ascii.debugDescription)")
                }
            case .failure(let problem):
                if row.errors.isEmpty { failures.append("\(row): refused (\(problem.reason))") }
            }
        }
        print(
            "IdnaTestV2 (Unicode 13.0.0 data, tables \(UTS46Data.unicodeVersion)): \(compared.count - failures.count - differences.count) of \(compared.count) rows pass, "
                + "\(differences.count) differ as Unicode changed since the data (listed in the test), \(left.count) expect a code point "
                + "refused that Unicode 16.0 allows, \(rows.count - compared.count - left.count) of \(rows.count) expect an error that depends on UseSTD3ASCIIRules"
        )
        #expect(left.count < 700, "only the rows of the code points listed")
        #expect(differences.count == Self.knownDifferences.count)
        for failure in failures.prefix(60) { print("  " + failure) }
        #expect(failures.isEmpty)
    }

    /// The rows of Unicode's 18.0.0 conformance data that expect no error
    /// (the version of the tables), as the PyPI package `idna` 3.20 carries
    /// them (Tests/Data/IdnaTestV2-18.0.0-valid.json; the file itself is not
    /// installable here): each gives its ASCII form.
    @Test func idnaTestV2Version18ValidRows() throws {
        let path = Repository.file("Tests/Data/IdnaTestV2-18.0.0-valid.json")
        struct Row: Decodable { let line: Int; let source: String; let toASCII: String }
        struct File: Decodable { let rows: [Row] }
        let rows = try JSONDecoder().decode(File.self, from: Data(contentsOf: URL(fileURLWithPath: path))).rows
        #expect(rows.count > 350 && rows.filter { !$0.source.unicodeScalars.allSatisfy(\.isASCII) }.count > 250)
        var failures: [String] = []
        for row in rows {
            switch UTS46.toASCII(row.source) {
            case .success(let ascii) where ascii == row.toASCII: continue
            case .success(let ascii):
                failures.append("line \(row.line): \(row.source.debugDescription) → \(ascii), not \(row.toASCII)")
            case .failure(let problem):
                failures.append("line \(row.line): \(row.source.debugDescription) refused (\(problem.reason))")
            }
        }
        print(
            "IdnaTestV2 18.0.0, rows without error: \(rows.count - failures.count) of \(rows.count) pass (tables \(UTS46Data.unicodeVersion))"
        )
        #expect(failures.isEmpty, "\(failures.prefix(20))")
    }
}
