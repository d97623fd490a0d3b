import Foundation

/// A JSON document as the emulations see it on the wire.
///
/// Objects keep their members in order so that responses come out in the same field order
/// as the real services' serializers write them (clients must not depend on it, but humans
/// reading a capture do). `serialized()` writes compact JSON; it never fails.
public enum JSONValue: Sendable, Equatable, CustomStringConvertible {
    case null
    case bool(Bool)
    case int(Int64)
    case double(Double)
    case string(String)
    case array([JSONValue])
    case object([(String, JSONValue)])

    public static func == (a: JSONValue, b: JSONValue) -> Bool {
        switch (a, b) {
        case (.null, .null): return true
        case (.bool(let x), .bool(let y)): return x == y
        case (.int(let x), .int(let y)): return x == y
        case (.double(let x), .double(let y)): return x == y
        case (.string(let x), .string(let y)): return x == y
        case (.array(let x), .array(let y)): return x == y
        case (.object(let x), .object(let y)):
            return x.count == y.count && zip(x, y).allSatisfy { $0.0 == $1.0 && $0.1 == $1.1 }
        default: return false
        }
    }

    /// Member lookup for objects (first match); nil for anything else.
    public subscript(key: String) -> JSONValue? {
        guard case .object(let members) = self else { return nil }
        return members.first { $0.0 == key }?.1
    }

    /// A member by name in any letter case (an exact match first), as .NET model binding reads
    /// request bodies: ShareFile takes `fileName` and `FileName` alike.
    public subscript(anyCase key: String) -> JSONValue? {
        guard case .object(let members) = self else { return nil }
        if let exact = members.first(where: { $0.0 == key }) { return exact.1 }
        let lower = key.lowercased()
        return members.first { $0.0.lowercased() == lower }?.1
    }

    /// The compact JSON text.
    public var description: String { String(decoding: serialized(), as: UTF8.self) }

    public var stringValue: String? {
        if case .string(let s) = self { return s }
        return nil
    }

    /// The name Python's `json`/DRF would use for the type, for error messages.
    public var typeName: String {
        switch self {
        case .null: return "NoneType"
        case .bool: return "bool"
        case .int: return "int"
        case .double: return "float"
        case .string: return "str"
        case .array: return "list"
        case .object: return "dict"
        }
    }

    // MARK: Parsing

    /// Parses a complete JSON text, keeping object member order. Throws `JSONParseError`
    /// worded like Python's `json` module (what a Django REST service answers with).
    public static func parse(_ data: Data) throws(JSONParseError) -> JSONValue {
        var parser = JSONParser(bytes: Array(data))
        return try parser.parseDocument()
    }

    // MARK: Writing

    /// Compact JSON text (UTF-8), with `/` unescaped like Python's `json.dumps`.
    public func serialized() -> Data {
        var out = ""
        write(into: &out)
        return Data(out.utf8)
    }

    private func write(into out: inout String) {
        switch self {
        case .null: out += "null"
        case .bool(let b): out += b ? "true" : "false"
        case .int(let i): out += String(i)
        case .double(let d):
            if d.isFinite { out += d == d.rounded() && abs(d) < 1e15 ? String(Int64(d)) + ".0" : "\(d)" } else { out += "null" }
        case .string(let s): JSONValue.writeString(s, into: &out)
        case .array(let items):
            out += "["
            for (i, item) in items.enumerated() {
                if i > 0 { out += "," }
                item.write(into: &out)
            }
            out += "]"
        case .object(let members):
            out += "{"
            for (i, (key, value)) in members.enumerated() {
                if i > 0 { out += "," }
                JSONValue.writeString(key, into: &out)
                out += ":"
                value.write(into: &out)
            }
            out += "}"
        }
    }

    private static func writeString(_ s: String, into out: inout String) {
        out += "\""
        for scalar in s.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20:
                out += String(format: "\\u%04x", scalar.value)
            default: out.unicodeScalars.append(scalar)
            }
        }
        out += "\""
    }
}

extension JSONValue: Codable {
    // Persisted as its JSON text so member order survives a round trip through a state file.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.singleValueContainer()
        let text = try c.decode(String.self)
        do {
            self = try JSONValue.parse(Data(text.utf8))
        } catch {
            throw DecodingError.dataCorruptedError(in: c, debugDescription: error.description)
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        try c.encode(String(decoding: serialized(), as: UTF8.self))
    }
}
