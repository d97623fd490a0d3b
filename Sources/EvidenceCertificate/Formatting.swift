import EvidenceCore
import Foundation

/// Text helpers shared by the layout: human sizes, safe strings.
enum CertificateFormat {
    /// "1,234,567 bytes (1.18 MiB)"; "512 bytes"; "1 byte".
    static func size(_ bytes: Int64) -> String {
        let grouped = groupDigits(bytes)
        let unit = bytes == 1 ? "byte" : "bytes"
        let magnitude = Double(bytes.magnitude)
        guard magnitude >= 1024 else { return "\(grouped) \(unit)" }
        let units = ["KiB", "MiB", "GiB", "TiB", "PiB", "EiB"]
        var value = magnitude
        var index = -1
        while value >= 1024, index < units.count - 1 {
            value /= 1024
            index += 1
        }
        let number: String
        if value < 10 { number = String(format: "%.2f", value) }
        else if value < 100 { number = String(format: "%.1f", value) }
        else { number = String(format: "%.0f", value) }
        return "\(grouped) \(unit) (\(bytes < 0 ? "-" : "")\(number) \(units[index]))"
    }

    static func groupDigits(_ n: Int64) -> String {
        let digits = Array(String(n.magnitude))
        var out = ""
        for (i, d) in digits.enumerated() {
            if i > 0, (digits.count - i) % 3 == 0 { out.append(",") }
            out.append(d)
        }
        return n < 0 ? "-" + out : out
    }

    static func time(_ date: Date?) -> String {
        guard let date else { return "—" }
        return Timestamp.string(date)
    }

    /// Makes any string safe to hand to cairo as a C string: control characters
    /// (NUL would cut the string, newlines and tabs have no glyph) become spaces or U+FFFD.
    /// Bidirectional controls become U+FFFD too: on a certificate a name like
    /// "clip\u{202E}4pm.exe" must show that it carries one, not hide it.
    static func clean(_ s: String) -> String {
        var scalars = String.UnicodeScalarView()
        for u in s.unicodeScalars {
            switch u.value {
            case 0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x85, 0x2028, 0x2029:
                scalars.append(" ")
            case 0x00..<0x20, 0x7F..<0xA0, 0x061C, 0x200E, 0x200F, 0x202A...0x202E, 0x2066...0x2069:
                scalars.append("\u{FFFD}")
            default:
                scalars.append(u)
            }
        }
        return String(scalars)
    }
}
