/// "Did you mean" suggestions for mistyped names.
public enum Suggestions {
    /// Names from `candidates` within a small edit distance of `name`, closest first.
    public static func closeMatches(to name: String, in candidates: some Sequence<String>, limit: Int = 3) -> [String] {
        let target = Array(name.lowercased().unicodeScalars)
        let threshold = max(2, target.count / 3)
        var scored: [(String, Int)] = []
        for candidate in candidates {
            let distance = editDistance(target, Array(candidate.lowercased().unicodeScalars))
            let isPrefix = candidate.lowercased().hasPrefix(name.lowercased()) && !name.isEmpty
            if distance <= threshold || isPrefix { scored.append((candidate, isPrefix ? min(distance, 1) : distance)) }
        }
        scored.sort { $0.1 != $1.1 ? $0.1 < $1.1 : $0.0 < $1.0 }
        var seen: Set<String> = []
        return scored.map(\.0).filter { seen.insert($0).inserted }.prefix(limit).map { $0 }
    }

    static func editDistance(_ a: [Unicode.Scalar], _ b: [Unicode.Scalar]) -> Int {
        if a.isEmpty { return b.count }
        if b.isEmpty { return a.count }
        var previous = Array(0...b.count)
        var current = [Int](repeating: 0, count: b.count + 1)
        for i in 1...a.count {
            current[0] = i
            for j in 1...b.count {
                current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
            }
            swap(&previous, &current)
        }
        return previous[b.count]
    }
}

extension StringProtocol {
    /// Empty or only white space.
    public var isBlank: Bool { allSatisfy(\.isWhitespace) }
}
