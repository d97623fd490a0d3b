import Foundation

/// The one JSON encoding used wherever bytes are hashed or compared (custody events,
/// manifests): sorted keys, no escaped slashes, ISO 8601 dates with milliseconds in UTC.
public enum CanonicalJSON {
    public static func encoder(pretty: Bool = false) -> JSONEncoder {
        let e = JSONEncoder()
        e.outputFormatting = pretty ? [.sortedKeys, .withoutEscapingSlashes, .prettyPrinted]
                                    : [.sortedKeys, .withoutEscapingSlashes]
        e.dateEncodingStrategy = .custom { date, enc in
            var c = enc.singleValueContainer()
            try c.encode(Timestamp.string(date))
        }
        return e
    }

    public static func decoder() -> JSONDecoder {
        let d = JSONDecoder()
        d.dateDecodingStrategy = .custom { dec in
            let c = try dec.singleValueContainer()
            let s = try c.decode(String.self)
            guard let date = Timestamp.parse(s) else {
                throw DecodingError.dataCorruptedError(in: c, debugDescription: "not an ISO 8601 date: \(s)")
            }
            return date
        }
        return d
    }

    /// `encode` of an object of strings (custody details, job parameters): the same bytes,
    /// written by `FlatStringJSON.write` instead of the encoder. Throws nothing; declared
    /// `throws` as the general one is, so call sites read the same.
    public static func encode(_ value: [String: String]) throws -> Data {
        Data(FlatStringJSON.write(value))
    }

    public static func encode(_ value: some Encodable) throws -> Data {
        try encoder().encode(value)
    }
}

/// ISO 8601 timestamps in UTC with milliseconds: `2026-11-22T22:22:08.123Z`.
public enum Timestamp {
    public static func string(_ date: Date) -> String {
        utc(date, dateTimeSeparator: "T", suffix: "Z", milliseconds: .down)
    }

    /// `yyyy-MM-dd<separator>HH:mm:ss.SSS<suffix>` in UTC, from the C library's calendar: no
    /// DateFormatter, whose locale, calendar and zone come from ICU data. `milliseconds` says
    /// how the fraction is cut: `.down` (ours), `.toNearestOrAwayFromZero` (a DateFormatter's).
    public static func utc(_ date: Date, dateTimeSeparator: String, suffix: String,
                           milliseconds: FloatingPointRoundingRule) -> String {
        // Whole milliseconds so that a value written and read back is the same Date.
        let ms = (date.timeIntervalSince1970 * 1000).rounded(milliseconds)
        let secs = ms / 1000
        let t = time_t(secs.rounded(.down))
        var tmv = tm()
        var tt = t
        gmtime_r(&tt, &tmv)
        let milli = Int(ms) - Int(secs.rounded(.down)) * 1000
        // Digits written by hand: `String(format:)` (CoreFoundation's format parser, an NSString
        // per call) was 1% of the pipeline's CPU, for every row's dates.
        var out = ""
        out.reserveCapacity(24 + dateTimeSeparator.utf8.count + suffix.utf8.count)
        func digits(_ value: Int, _ width: Int) {
            var v = value, buf = [Character](repeating: "0", count: width)
            for i in stride(from: width - 1, through: 0, by: -1) { buf[i] = Character(Unicode.Scalar(UInt8(48 + v % 10))); v /= 10 }
            if v > 0 { out += String(value) } else { out += String(buf) }
        }
        digits(Int(tmv.tm_year) + 1900, 4); out += "-"; digits(Int(tmv.tm_mon) + 1, 2); out += "-"; digits(Int(tmv.tm_mday), 2)
        out += dateTimeSeparator
        digits(Int(tmv.tm_hour), 2); out += ":"; digits(Int(tmv.tm_min), 2); out += ":"; digits(Int(tmv.tm_sec), 2)
        out += "."; digits(milli, 3); out += suffix
        return out
    }

    /// Rounds to whole milliseconds, as stored.
    public static func truncated(_ date: Date) -> Date {
        Date(timeIntervalSince1970: (date.timeIntervalSince1970 * 1000).rounded(.down) / 1000)
    }

    public static func parse(_ s: String) -> Date? {
        let f = ISO8601DateFormatter()
        f.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        if let d = f.date(from: s) { return d }
        f.formatOptions = [.withInternetDateTime]
        return f.date(from: s)
    }
}

extension Timestamp {
    /// Parses the many ISO 8601 shapes devices write (`2024-05-01T12:34:56Z`,
    /// `…56.000000Z`, `…56+02:00`, `2024-05-01 12:34:56`); no zone means UTC.
    public static func parseLenient(_ text: String) -> Date? {
        let s = Array(text.trimmingCharacters(in: .whitespaces).utf8)
        guard s.count >= 19 else { return nil }
        func num(_ r: Range<Int>) -> Int? {
            var v = 0
            for i in r { guard s[i] >= 48, s[i] <= 57 else { return nil }; v = v * 10 + Int(s[i] - 48) }
            return v
        }
        guard let y = num(0..<4), s[4] == 45, let mo = num(5..<7), s[7] == 45, let d = num(8..<10),
              s[10] == 84 || s[10] == 32 || s[10] == 116,
              let h = num(11..<13), s[13] == 58, let mi = num(14..<16), s[16] == 58, let se = num(17..<19),
              (1...12).contains(mo), (1...31).contains(d), h < 24, mi < 60, se < 61 else { return nil }
        var i = 19
        var fraction = 0.0
        if i < s.count, s[i] == 46 || s[i] == 44 {
            i += 1
            var scale = 0.1
            while i < s.count, s[i] >= 48, s[i] <= 57 { fraction += Double(s[i] - 48) * scale; scale /= 10; i += 1 }
        }
        var offset = 0
        if i < s.count {
            if s[i] == 90 || s[i] == 122 { i += 1 }
            else if s[i] == 43 || s[i] == 45, s.count >= i + 3, let oh = num(i + 1..<i + 3) {
                let sign = s[i] == 45 ? -1 : 1
                var om = 0
                if s.count >= i + 6, s[i + 3] == 58, let m = num(i + 4..<i + 6) { om = m }
                else if s.count >= i + 5, let m = num(i + 3..<i + 5) { om = m }
                offset = sign * (oh * 3600 + om * 60)
            } else { return nil }
        }
        var t = tm()
        t.tm_year = Int32(y - 1900); t.tm_mon = Int32(mo - 1); t.tm_mday = Int32(d)
        t.tm_hour = Int32(h); t.tm_min = Int32(mi); t.tm_sec = Int32(se)
        let epoch = timegm(&t)
        return Date(timeIntervalSince1970: Double(epoch) - Double(offset) + fraction)
    }
}
