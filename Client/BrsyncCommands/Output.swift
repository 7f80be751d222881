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
        // Each cell's width counted once (a character count walks the text).
        let counts = all.map { row in row.map(width) }
        var widths = [Int](repeating: 0, count: header.count)
        for row in counts {
            for (index, count) in row.enumerated() where index < widths.count {
                widths[index] = max(widths[index], count)
            }
        }
        // Written as bytes in large pieces, not a print call a line: 20,000 rules are 20,000 lines.
        var bytes: [UInt8] = []
        bytes.reserveCapacity(1 << 16 + 4096)
        for (row, rowCounts) in zip(all, counts) {
            for (index, cell) in row.enumerated() {
                bytes.append(contentsOf: cell.utf8)
                if index < row.count - 1 {
                    bytes.append(
                        contentsOf: repeatElement(UInt8(ascii: " "), count: widths[index] - rowCounts[index] + 2))
                }
            }
            bytes.append(UInt8(ascii: "\n"))
            if bytes.count >= 1 << 16 {
                write(bytes)
                bytes.removeAll(keepingCapacity: true)
            }
        }
        write(bytes)
    }

    /// The characters of a cell: its bytes when they are ASCII (most cells; counting characters walks the text).
    static func width(_ cell: String) -> Int {
        let ascii = cell.utf8.withContiguousStorageIfAvailable { $0.allSatisfy { $0 < 0x80 } } ?? false
        return ascii ? cell.utf8.count : cell.count
    }

    /// Writes `bytes` (UTF-8) to standard output as they are, through
    /// `print`, so what each prints stays in order.
    static func write(_ bytes: [UInt8]) {
        Swift.print(String(decoding: bytes, as: UTF8.self), terminator: "")
    }
}
