/// A fragment of HTML that is safe by construction: string literals written in our code are
/// markup, every interpolated `String` is escaped, and only another `HTML` value is inserted
/// as is. Catalog data (file names, paths, notary answers) can therefore never become markup.
///
/// ```swift
/// let row: HTML = "<td>\(source.name)</td>"      // a name "<script>" is shown, not run
/// ```
public struct HTML: Sendable, Equatable, CustomStringConvertible, ExpressibleByStringInterpolation {
    /// The markup.
    public private(set) var rendered: String

    public init(stringLiteral value: String) { rendered = value }
    public init(stringInterpolation: StringInterpolation) { rendered = stringInterpolation.output }
    private init(rendered: String) { self.rendered = rendered }

    public var description: String { rendered }

    public static let empty = HTML(rendered: "")

    /// Text shown as text.
    public static func text(_ s: String) -> HTML { HTML(rendered: escape(s)) }

    /// Several fragments one after another.
    public static func join(_ parts: some Sequence<HTML>, separator: HTML = .empty) -> HTML {
        HTML(rendered: parts.map(\.rendered).joined(separator: separator.rendered))
    }

    public static func + (a: HTML, b: HTML) -> HTML { HTML(rendered: a.rendered + b.rendered) }
    public static func += (a: inout HTML, b: HTML) { a.rendered += b.rendered }

    public struct StringInterpolation: StringInterpolationProtocol {
        var output = ""
        public init(literalCapacity: Int, interpolationCount: Int) { output.reserveCapacity(literalCapacity * 2) }
        public mutating func appendLiteral(_ literal: String) { output += literal }
        public mutating func appendInterpolation(_ text: String) { output += HTML.escape(text) }
        public mutating func appendInterpolation(_ text: Substring) { output += HTML.escape(String(text)) }
        public mutating func appendInterpolation(_ html: HTML) { output += html.rendered }
        public mutating func appendInterpolation(_ parts: [HTML]) { output += parts.map(\.rendered).joined() }
        public mutating func appendInterpolation<N: BinaryInteger>(_ n: N) { output += String(n) }
    }

    /// Escapes text for element content and quoted attribute values alike. Control characters
    /// and Unicode direction overrides (which can make `evil\u{202E}gpj.exe` look like
    /// `evilexe.jpg`) are shown as `[U+XXXX]` so that what an auditor reads is what is stored.
    public static func escape(_ s: String) -> String {
        var out = ""
        out.reserveCapacity(s.utf8.count)
        for scalar in s.unicodeScalars {
            switch scalar {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&#39;"
            case "\n", "\t": out.unicodeScalars.append(scalar)
            default:
                if isInvisibleControl(scalar) {
                    let hex = String(scalar.value, radix: 16, uppercase: true)
                    out += "[U+" + String(repeating: "0", count: max(0, 4 - hex.count)) + hex + "]"
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        return out
    }

    static func isInvisibleControl(_ c: Unicode.Scalar) -> Bool {
        switch c.value {
        case 0x00...0x1F, 0x7F...0x9F: return true                 // C0/C1 controls
        case 0x200E, 0x200F, 0x202A...0x202E, 0x2066...0x2069: return true  // bidi marks and overrides
        default: return false
        }
    }

    /// A link for a URL that came from outside (a notary's explorer URL, a share link): only
    /// `http`/`https` become links; anything else (`javascript:`, `data:`) is shown as text.
    public static func externalLink(_ url: String, text: String? = nil) -> HTML {
        let lower = url.lowercased()
        guard lower.hasPrefix("https://") || lower.hasPrefix("http://") else { return .text(text ?? url) }
        return "<a href=\"\(url)\" rel=\"noopener noreferrer\">\(text ?? url)</a>"
    }

    /// Percent-encodes a path segment or query value (RFC 3986 unreserved characters stay).
    public static func urlComponent(_ s: String) -> String {
        var out = ""
        for b in s.utf8 {
            switch b {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                 UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
                out.unicodeScalars.append(Unicode.Scalar(b))
            default:
                out += "%" + (b < 16 ? "0" : "") + String(b, radix: 16, uppercase: true)
            }
        }
        return out
    }
}
