import Glibc
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Writing to standard output: JSON for scripts, aligned tables for people.
enum Output {
    static func json<T: Encodable>(_ value: T) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes]
        print(String(decoding: try encoder.encode(value), as: UTF8.self))
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
