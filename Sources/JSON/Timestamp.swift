/// UTC times as ISO 8601 text with milliseconds (`2026-11-21T22:45:10.123Z`),
/// computed arithmetically so the result never depends on a locale or time zone.
public enum Timestamp {
    /// Formats milliseconds since 1970 as `YYYY-MM-DDTHH:MM:SS.mmmZ`.
    public static func iso8601(millis: Int64) -> String {
        let (days, msOfDay) = floorDivMod(millis, 86_400_000)
        let (year, month, day) = civil(fromDays: days)
        let hour = msOfDay / 3_600_000
        let minute = msOfDay / 60_000 % 60
        let second = msOfDay / 1000 % 60
        let ms = msOfDay % 1000
        if (0...9999).contains(year) {
            // The common case, written as bytes: listing 20,000 rules formats 20,000 times.
            return String(unsafeUninitializedCapacity: 24) { buffer in
                var index = 0
                func put(_ value: Int64, _ width: Int) {
                    var divisor: Int64 = 1
                    for _ in 1..<width { divisor *= 10 }
                    while divisor > 0 {
                        buffer[index] = UInt8(48 + value / divisor % 10)
                        index += 1
                        divisor /= 10
                    }
                }
                func put(_ byte: Character) {
                    buffer[index] = byte.asciiValue!
                    index += 1
                }
                put(year, 4); put("-"); put(month, 2); put("-"); put(day, 2); put("T")
                put(hour, 2); put(":"); put(minute, 2); put(":"); put(second, 2); put("."); put(ms, 3); put("Z")
                return index
            }
        }
        return
            "\(pad(year, 4))-\(pad(month, 2))-\(pad(day, 2))T\(pad(hour, 2)):\(pad(minute, 2)):\(pad(second, 2)).\(pad(ms, 3))Z"
    }

    /// The UTC calendar fields of a time in milliseconds since 1970
    /// (weekday 0 is Sunday).
    public static func utcFields(
        millis: Int64
    ) -> (year: Int64, month: Int64, day: Int64, hour: Int64, minute: Int64, second: Int64, weekday: Int64) {
        let (days, msOfDay) = floorDivMod(millis, 86_400_000)
        let (year, month, day) = civil(fromDays: days)
        let weekday = floorDivMod(days + 4, 7).1 // 1970-01-01 was a Thursday
        return (year, month, day, msOfDay / 3_600_000, msOfDay / 60_000 % 60, msOfDay / 1000 % 60, weekday)
    }

    /// Parses `YYYY-MM-DDTHH:MM:SS[.fff]Z` (or `+00:00`); nil for anything else.
    public static func millis(fromISO8601 text: String) -> Int64? {
        let bytes = Array(text.utf8)
        func number(_ start: Int, _ count: Int) -> Int64? {
            guard start + count <= bytes.count else { return nil }
            var value: Int64 = 0
            for byte in bytes[start..<start + count] {
                guard byte >= 48 && byte <= 57 else { return nil }
                value = value * 10 + Int64(byte - 48)
            }
            return value
        }
        guard bytes.count >= 20,
            let year = number(0, 4), bytes[4] == UInt8(ascii: "-"),
            let month = number(5, 2), bytes[7] == UInt8(ascii: "-"),
            let day = number(8, 2), bytes[10] == UInt8(ascii: "T") || bytes[10] == UInt8(ascii: " "),
            let hour = number(11, 2), bytes[13] == UInt8(ascii: ":"),
            let minute = number(14, 2), bytes[16] == UInt8(ascii: ":"),
            let second = number(17, 2),
            (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60, second < 61
        else { return nil }
        var index = 19
        var fraction: Int64 = 0
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            index += 1
            var digits = 0
            while index < bytes.count, bytes[index] >= 48, bytes[index] <= 57 {
                if digits < 3 { fraction = fraction * 10 + Int64(bytes[index] - 48) }
                digits += 1
                index += 1
            }
            guard digits > 0 else { return nil }
            for _ in digits..<max(digits, 3) { fraction *= 10 }
        }
        let rest = String(decoding: bytes[index...], as: UTF8.self)
        guard rest == "Z" || rest == "z" || rest == "+00:00" else { return nil }
        let days = days(fromCivil: year, month, day)
        return ((days * 24 + hour) * 60 + minute) * 60_000 + second * 1000 + fraction
    }

    private static func pad(_ value: Int64, _ width: Int) -> String {
        let text = String(value)
        return text.count >= width ? text : String(repeating: "0", count: width - text.count) + text
    }

    private static func floorDivMod(_ a: Int64, _ b: Int64) -> (Int64, Int64) {
        var quotient = a / b
        var remainder = a % b
        if remainder < 0 { quotient -= 1; remainder += b }
        return (quotient, remainder)
    }

    // Howard Hinnant's days_from_civil / civil_from_days.
    private static func days(fromCivil year: Int64, _ month: Int64, _ day: Int64) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    private static func civil(fromDays days: Int64) -> (Int64, Int64, Int64) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let mp = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }
}
