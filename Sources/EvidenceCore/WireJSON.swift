import Foundation

/// Any JSON value, for the few places a remote answer is kept or shown as it came (a QED
/// report list entry kept verbatim as a receipt, an error body quoted to the operator) rather
/// than read into a typed model. Integers are kept apart from other numbers so that big ids
/// and block heights survive a round trip exactly.
public indirect enum JSONTree: Codable, Sendable, Equatable {
    case null
    case bool(Bool)
    case integer(Int64)
    case number(Double)
    case string(String)
    case array([JSONTree])
    case object([String: JSONTree])

    public init(from decoder: any Decoder) throws {
        let c = try decoder.singleValueContainer()
        if c.decodeNil() { self = .null; return }
        if let b = try? c.decode(Bool.self) { self = .bool(b); return }
        if let i = try? c.decode(Int64.self) { self = .integer(i); return }
        if let d = try? c.decode(Double.self) { self = .number(d); return }
        if let s = try? c.decode(String.self) { self = .string(s); return }
        if let a = try? c.decode([JSONTree].self) { self = .array(a); return }
        self = .object(try c.decode([String: JSONTree].self))
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        switch self {
        case .null: try c.encodeNil()
        case .bool(let b): try c.encode(b)
        case .integer(let i): try c.encode(i)
        case .number(let d): try c.encode(d.isFinite ? d : 0)
        case .string(let s): try c.encode(s)
        case .array(let a): try c.encode(a)
        case .object(let o): try c.encode(o)
        }
    }

    /// The value as a person reads it: strings bare, arrays joined by spaces, objects as JSON.
    public var text: String {
        switch self {
        case .null: return "null"
        case .bool(let b): return String(b)
        case .integer(let i): return String(i)
        case .number(let d): return String(d)
        case .string(let s): return s
        case .array(let a): return a.map(\.text).joined(separator: " ")
        case .object: return String(decoding: WireJSON.encode(self), as: UTF8.self)
        }
    }
}

/// Reading and writing the JSON of remote APIs with `Codable` models: one decoder and one
/// encoder (sorted keys, slashes unescaped), and the lenient scalars services send in more
/// than one shape.
public enum WireJSON {
    /// `value` decoded from `data`, or nil when the bytes are not that shape.
    public static func decode<T: Decodable>(_ type: T.Type, from data: Data) -> T? {
        try? JSONDecoder().decode(type, from: data)
    }

    /// Whether `data` is one JSON value at all.
    public static func isJSON(_ data: Data) -> Bool { decode(JSONTree.self, from: data) != nil }

    /// JSON bytes of `value`; `null` should encoding fail (it cannot for our models).
    public static func encode(_ value: some Encodable) -> Data {
        let e = JSONEncoder()
        e.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return (try? e.encode(value)) ?? Data("null".utf8)
    }

    /// JSON for an HTTP header: every non-ASCII character as `\uXXXX` (UTF-16 units), as
    /// Dropbox requires for `Dropbox-API-Arg`.
    public static func asciiHeader(_ value: some Encodable) -> String {
        let text = String(decoding: encode(value), as: UTF8.self)
        var out = ""
        for unit in text.utf16 {
            if unit < 0x80 { out.unicodeScalars.append(Unicode.Scalar(UInt8(unit))) }
            else { out += String(format: "\\u%04x", unit) }
        }
        return out
    }
}

/// A string a service sends as a JSON string or as a number (Box ids, error codes).
public struct LenientString: Codable, Sendable, Equatable, CustomStringConvertible {
    public var value: String
    public init(_ value: String) { self.value = value }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.singleValueContainer()
        if let s = try? c.decode(String.self) { value = s; return }
        if let i = try? c.decode(Int64.self) { value = String(i); return }
        if let b = try? c.decode(Bool.self) { value = String(b); return }
        value = String(try c.decode(Double.self))
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        try c.encode(value)
    }

    public var description: String { value }
}

/// An integer a service sends as a JSON number or as a decimal string (sizes, offsets).
public struct LenientInt64: Codable, Sendable, Equatable {
    public var value: Int64
    public init(_ value: Int64) { self.value = value }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.singleValueContainer()
        if let i = try? c.decode(Int64.self) { value = i; return }
        if let s = try? c.decode(String.self), let i = Int64(s.trimmingCharacters(in: .whitespaces)) { value = i; return }
        let d = try c.decode(Double.self)
        guard d.isFinite, d.rounded() == d, abs(d) < 9.2e18 else {
            throw DecodingError.dataCorruptedError(in: c, debugDescription: "not an integer: \(d)")
        }
        value = Int64(d)
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        try c.encode(value)
    }
}

/// A list whose entries are read one by one: an entry of another shape is skipped, not the
/// whole answer refused (a listing must not fail on one odd entry).
public struct LossyList<Element: Decodable>: Decodable {
    public var elements: [Element]
    public init(_ elements: [Element] = []) { self.elements = elements }

    public init(from decoder: any Decoder) throws {
        var c = try decoder.unkeyedContainer()
        var out: [Element] = []
        while !c.isAtEnd {
            if let e = try? c.decode(Element.self) { out.append(e); continue }
            // Step over the odd entry; should even that fail, stop rather than loop.
            guard (try? c.decode(JSONTree.self)) != nil else { break }
        }
        elements = out
    }
}

extension LossyList: Sendable where Element: Sendable {}
