/// Unicode Normalization Form C (UAX #15) over code points, from the static
/// tables in UTS46Data.swift: the full canonical decomposition (Hangul by
/// arithmetic), the canonical ordering of combining marks, then canonical
/// composition of the pairs that compose (no exclusions, no singletons).
/// (The standard library's normaliser is underscored API and not on the
/// phone's iOS 17; Foundation's is not in Model.)
enum NFC {
    // Hangul (Unicode chapter 3.12).
    static let sBase: UInt32 = 0xAC00, lBase: UInt32 = 0x1100, vBase: UInt32 = 0x1161, tBase: UInt32 = 0x11A7
    static let lCount: UInt32 = 19, vCount: UInt32 = 21, tCount: UInt32 = 28
    static let nCount = vCount * tCount, sCount = lCount * nCount

    static func combiningClass(_ scalar: UInt32) -> UInt8 {
        if scalar < 0x300 { return 0 }
        return UTS46Data.combiningClasses[UTS46.run(UTS46Data.combiningStarts, scalar)]
    }

    static func normalize(_ scalars: [UInt32]) -> [UInt32] {
        if scalars.allSatisfy({ $0 < 0x300 }) { return scalars } // nothing below U+0300 decomposes or combines
        return compose(decompose(scalars))
    }

    /// The full canonical decomposition, with marks in canonical order.
    static func decompose(_ scalars: [UInt32]) -> [UInt32] {
        var output: [UInt32] = []
        output.reserveCapacity(scalars.count + 8)
        for scalar in scalars {
            if scalar >= sBase && scalar < sBase + sCount {
                let index = scalar - sBase
                output.append(lBase + index / nCount)
                output.append(vBase + (index % nCount) / tCount)
                if index % tCount != 0 { output.append(tBase + index % tCount) }
            } else if scalar >= 0xC0, let parts = decomposition(scalar) {
                output += parts
            } else {
                output.append(scalar)
            }
        }
        // Canonical ordering: a stable sort of each run of marks by class.
        var index = 1
        while index < output.count {
            let current = combiningClass(output[index])
            if current != 0 {
                var position = index
                while position > 0 {
                    let previous = combiningClass(output[position - 1])
                    guard previous > current else { break }
                    output.swapAt(position, position - 1)
                    position -= 1
                }
            }
            index += 1
        }
        return output
    }

    static func decomposition(_ scalar: UInt32) -> ArraySlice<UInt32>? {
        let keys = UTS46Data.decompositionKeys
        let index = UTS46.run(keys, scalar)
        guard !keys.isEmpty, keys[index] == scalar else { return nil }
        let head = UTS46Data.decompositionHeads[index]
        let offset = Int(head >> 3)
        return UTS46Data.decompositionScalars[offset..<(offset + Int(head & 7))]
    }

    static func composite(_ first: UInt32, _ second: UInt32) -> UInt32? {
        // Hangul LV and LVT.
        if first >= lBase && first < lBase + lCount && second >= vBase && second < vBase + vCount {
            return sBase + ((first - lBase) * vCount + (second - vBase)) * tCount
        }
        if first >= sBase && first < sBase + sCount && (first - sBase) % tCount == 0 && second > tBase
            && second < tBase + tCount
        {
            return first + (second - tBase)
        }
        let key = UInt64(first) << 21 | UInt64(second)
        let pairs = UTS46Data.compositionPairs
        let index = UTS46.run(pairs, key)
        guard !pairs.isEmpty, pairs[index] == key else { return nil }
        return UTS46Data.compositionResults[index]
    }

    /// Canonical composition of a decomposed, ordered sequence.
    static func compose(_ scalars: [UInt32]) -> [UInt32] {
        var output: [UInt32] = []
        output.reserveCapacity(scalars.count)
        var starter: Int?
        var lastClass: UInt8 = 0
        for scalar in scalars {
            let currentClass = combiningClass(scalar)
            if let at = starter {
                // Not blocked: the last mark kept has a lower class, or this
                // follows the starter directly.
                let blocked = output.count - 1 != at && (lastClass == 0 || lastClass >= currentClass)
                if !blocked, let combined = composite(output[at], scalar) {
                    output[at] = combined
                    continue
                }
            }
            if currentClass == 0 {
                starter = output.count
                lastClass = 0
            } else {
                lastClass = currentClass
            }
            output.append(scalar)
        }
        return output
    }
}
