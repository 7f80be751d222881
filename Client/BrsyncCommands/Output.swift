import Glibc
import JSON
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Writing to standard output: JSON for scripts, aligned tables for people.
public enum Output {
    /// Prints `value` as one line of compact JSON, members in name order:
    /// the one form of everything `--json` prints. Control and bidirectional
    /// characters are escaped (``JSONValue/writeString(_:into:)``), so it is
    /// safe on a terminal and the same text a script parses.
    public static func json(_ value: JSONValue) {
        Swift.print(value.jsonText)
    }

    /// ``json(_:)`` of a value with a `Codable` form (rules, browsers, an export).
    public static func json(encoding value: some Encodable) throws {
        json(try JSONValue(encoding: value))
    }

    /// Prints rows as columns separated by two spaces; the last column is not padded.
    static func table(_ header: [String], _ rows: [[String]]) {
        let all = [header] + rows
        var widths = [Int](repeating: 0, count: header.count)
        for row in all {
            for (index, cell) in row.enumerated() where index < widths.count { widths[index] = max(widths[index], cell.count) }
        }
        for row in all {
            var line = ""
            for (index, cell) in row.enumerated() {
                let isLast = index == row.count - 1
                line += isLast ? cell : cell + String(repeating: " ", count: widths[index] - cell.count + 2)
            }
            print(line)
        }
    }
}
