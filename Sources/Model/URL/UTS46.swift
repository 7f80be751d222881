import JSON

/// UTS #46 (Unicode IDNA Compatibility Processing) ToASCII with the URL
/// Standard's flags: Transitional_Processing=false, CheckHyphens=false,
/// CheckBidi=true, CheckJoiners=true, UseSTD3ASCIIRules=false,
/// VerifyDnsLength=false. The tables are static data generated from Unicode's
/// files (UTS46Data.swift, scripts/generate-uts46); ASCII names that hold no
/// `xn--` label never reach them.
/// https://www.unicode.org/reports/tr46/#ToASCII
/// https://url.spec.whatwg.org/#concept-domain-to-ascii
enum UTS46 {
    enum Status: UInt32 {
        case valid = 0, mapped, deviation, ignored, disallowed
    }

    /// Why a domain is refused, for the person who typed or clicked it.
    struct Problem: Error, Equatable {
        let reason: String
    }

    /// The index of the run `value` falls in: the last start ≤ value.
    @inline(__always)
    static func run<T: BinaryInteger>(_ starts: [T], _ value: T) -> Int {
        var low = 0
        var high = starts.count
        while high - low > 1 {
            let middle = (low + high) / 2
            if starts[middle] <= value { low = middle } else { high = middle }
        }
        return low
    }

    static func status(_ scalar: UInt32) -> (Status, ArraySlice<UInt32>) {
        let value = UTS46Data.mappingValues[run(UTS46Data.mappingStarts, scalar)]
        let status = Status(rawValue: value & 7) ?? .disallowed
        guard status == .mapped else { return (status, []) }
        let offset = Int(value >> 8)
        return (status, UTS46Data.mappingScalars[offset..<(offset + Int(value >> 3 & 31))])
    }

    static func bidiClass(_ scalar: UInt32) -> UInt8 { UTS46Data.bidiClasses[run(UTS46Data.bidiStarts, scalar)] }
    static func joiningType(_ scalar: UInt32) -> UInt8 { UTS46Data.joiningTypes[run(UTS46Data.joiningStarts, scalar)] }
    static func isMark(_ scalar: UInt32) -> Bool {
        let index = run(UTS46Data.markStarts, scalar)
        return (index % 2 == 0) == UTS46Data.markFirstIsMark
    }

    /// A code point that UseSTD3ASCIIRules=true disallows (its mapped form
    /// holds ASCII other than a-z, 0-9, '-' and '.'); valid or mapped here,
    /// where UseSTD3ASCIIRules=false. For the conformance test, whose data
    /// is made with it true.
    static func isSTD3(_ scalar: UInt32) -> Bool {
        (run(UTS46Data.std3Starts, scalar) % 2 == 0) == UTS46Data.std3FirstIsSTD3
    }

    /// The ASCII form of `domain`, or the first reason it is not a valid one.
    static func toASCII(_ domain: String) -> Result<String, Problem> {
        // 1. Map (and find what is disallowed).
        var mapped: [UInt32] = []
        mapped.reserveCapacity(domain.unicodeScalars.count)
        for scalar in domain.unicodeScalars {
            let (status, replacement) = status(scalar.value)
            switch status {
            case .valid, .deviation: mapped.append(scalar.value)
            case .mapped: mapped += replacement
            case .ignored: break
            case .disallowed:
                return .failure(Problem(reason: "it contains \(describe(scalar.value)), which no domain may hold"))
            }
        }
        // 2. Normalise; 3. break into labels; 4. convert and check each.
        let normalized = NFC.normalize(mapped)
        var labels: [[UInt32]] = []
        var asciiLabels: [String] = []
        for label in normalized.split(separator: 0x2E, omittingEmptySubsequences: false) {
            let label = Array(label)
            if label.count >= 4, isACEPrefix(label) {
                guard label.allSatisfy({ $0 < 0x80 }) else {
                    return .failure(Problem(reason: "the label '\(text(label))' starts with xn-- but is not ASCII"))
                }
                let encoded = String(decoding: label.dropFirst(4).map { UInt8($0) }, as: UTF8.self).lowercased()
                guard let decoded = Punycode.decode(encoded),
                    Punycode.encode(decoded.compactMap(Unicode.Scalar.init)) == encoded
                else {
                    return .failure(Problem(reason: "'\(text(label))' is not valid Punycode"))
                }
                guard decoded.contains(where: { $0 >= 0x80 }) else {
                    return .failure(
                        Problem(reason: "'\(text(label))' encodes \(decoded.isEmpty ? "nothing" : "only ASCII")"))
                }
                if let problem = checkLabel(decoded, decodedFrom: true) { return .failure(problem) }
                labels.append(decoded)
                asciiLabels.append(encoded.isEmpty ? "xn--" : "xn--" + encoded)
            } else {
                if let problem = checkLabel(label, decodedFrom: false) { return .failure(problem) }
                labels.append(label)
                if label.allSatisfy({ $0 < 0x80 }) {
                    asciiLabels.append(String(decoding: label.map { UInt8($0) }, as: UTF8.self))
                } else {
                    guard let encoded = Punycode.encode(label.compactMap(Unicode.Scalar.init)) else {
                        return .failure(Problem(reason: "a label is too long to encode"))
                    }
                    asciiLabels.append("xn--" + encoded)
                }
            }
        }
        if let problem = checkBidi(labels) { return .failure(problem) }
        return .success(asciiLabels.joined(separator: "."))
    }

    /// `xn--`, in any case.
    static func isACEPrefix(_ label: [UInt32]) -> Bool {
        (label[0] | 0x20) == 0x78 && (label[1] | 0x20) == 0x6E && label[2] == 0x2D && label[3] == 0x2D
    }

    /// UTS #46 section 4.1, the validity criteria, with the URL Standard's flags.
    static func checkLabel(_ label: [UInt32], decodedFrom punycode: Bool) -> Problem? {
        guard let first = label.first else { return nil } // an empty label: VerifyDnsLength=false lets it be
        if punycode {
            guard NFC.normalize(label) == label else {
                return Problem(reason: "the label '\(text(label))' is not in Unicode normal form C")
            }
            if label.count >= 4, isACEPrefix(label) {
                return Problem(reason: "the label '\(text(label))' starts with xn--")
            }
            for scalar in label {
                let (status, _) = status(scalar)
                guard status == .valid || status == .deviation else {
                    return Problem(
                        reason: "the label '\(text(label))' holds \(describe(scalar)), which a domain may not")
                }
            }
        }
        if label.contains(0x2E) { return Problem(reason: "a label holds a dot") }
        if isMark(first) { return Problem(reason: "the label '\(text(label))' begins with a combining mark") }
        // CheckJoiners: RFC 5892 appendix A.1 and A.2.
        for (index, scalar) in label.enumerated() where scalar == 0x200C || scalar == 0x200D {
            if index > 0, NFC.combiningClass(label[index - 1]) == 9 { continue } // after a virama
            if scalar == 0x200C, joinsAround(label, index) { continue }
            return Problem(
                reason: "\(describe(scalar)) is not allowed where it is in '\(text(label))' (the CONTEXTJ rule)")
        }
        return nil
    }

    /// (Joining_Type L or D)(T)* ZWNJ (T)*(R or D).
    static func joinsAround(_ label: [UInt32], _ index: Int) -> Bool {
        // Joining types: 0 U, 1 D, 2 L, 3 R, 4 T, 5 C.
        var before = index - 1
        while before >= 0, joiningType(label[before]) == 4 { before -= 1 }
        guard before >= 0, [1, 2].contains(joiningType(label[before])) else { return false }
        var after = index + 1
        while after < label.count, joiningType(label[after]) == 4 { after += 1 }
        return after < label.count && [1, 3].contains(joiningType(label[after]))
    }

    /// CheckBidi: in a domain with a right-to-left label, every label meets
    /// the six conditions of RFC 5893 section 2.
    static func checkBidi(_ labels: [[UInt32]]) -> Problem? {
        // Bidi classes: 0 L, 1 R, 2 AL, 3 AN, 4 EN, 5 ES, 6 CS, 7 ET, 8 ON, 9 BN, 10 NSM.
        let isBidiDomain = labels.contains { $0.contains { [1, 2, 3].contains(bidiClass($0)) } }
        guard isBidiDomain else { return nil }
        for label in labels where !label.isEmpty {
            let classes = label.map(bidiClass)
            func fail(_ rule: String) -> Problem {
                Problem(reason: "the label '\(text(label))' breaks the bidi rule (\(rule), RFC 5893)")
            }
            let last = classes.lastIndex { $0 != 10 }.map { classes[$0] }
            switch classes[0] {
            case 1, 2: // right to left
                guard classes.allSatisfy({ [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].contains($0) }) else {
                    return fail("2: a character not allowed right to left")
                }
                guard let last, [1, 2, 4, 3].contains(last) else { return fail("3: how it ends") }
                if classes.contains(4) && classes.contains(3) { return fail("4: European and Arabic digits together") }
            case 0: // left to right
                guard classes.allSatisfy({ [0, 4, 5, 6, 7, 8, 9, 10].contains($0) }) else {
                    return fail("5: a character not allowed left to right")
                }
                guard let last, [0, 4].contains(last) else { return fail("6: how it ends") }
            default:
                return fail("1: how it begins")
            }
        }
        return nil
    }

    static func text(_ scalars: [UInt32]) -> String {
        var text = String.UnicodeScalarView()
        for value in scalars.prefix(80) { text.append(Unicode.Scalar(value) ?? "\u{FFFD}") }
        return DisplayText.printable(String(text))
    }

    static func describe(_ scalar: UInt32) -> String {
        var hex = String(scalar, radix: 16, uppercase: true)
        while hex.count < 4 { hex = "0" + hex }
        return "U+" + hex
    }
}
