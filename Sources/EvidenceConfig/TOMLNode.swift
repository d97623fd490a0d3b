import TOMLKit

/// A TOML value detached from TOMLKit: plain, Sendable, value semantics.
enum TOMLNode: Sendable, Equatable {
    case string(String)
    case integer(Int)
    case float(Double)
    case boolean(Bool)
    /// Dates, times and date-times, kept as their TOML text.
    case dateTime(String)
    case array([TOMLNode])
    case table([String: TOMLNode])

    /// The type as operators know it from TOML ("string", "integer", "array", ...).
    var typeName: String {
        switch self {
        case .string: return "string"
        case .integer: return "integer"
        case .float: return "float"
        case .boolean: return "boolean"
        case .dateTime: return "date-time"
        case .array: return "array"
        case .table: return "table"
        }
    }

    /// Parses a TOML document. Syntax errors carry TOMLKit's line and column.
    static func parse(_ text: String, file: String) throws(ConfigError) -> [String: TOMLNode] {
        let table: TOMLTable
        do {
            table = try TOMLTable(string: text)
        } catch let e as TOMLParseError {
            throw ConfigError(
                file: file, line: e.source.begin.line, column: e.source.begin.column,
                message: "TOML syntax error: \(e.description)")
        } catch {
            throw ConfigError(file: file, message: "TOML syntax error: \(error)")
        }
        return convert(table)
    }

    private static func convert(_ table: TOMLTable) -> [String: TOMLNode] {
        var out: [String: TOMLNode] = [:]
        for (key, value) in table {
            out[key] = convert(value)
        }
        return out
    }

    private static func convert(_ value: any TOMLValueConvertible) -> TOMLNode {
        switch value.type {
        case .string: return .string(value.string ?? "")
        case .int: return .integer(value.int ?? 0)
        case .double: return .float(value.double ?? 0)
        case .bool: return .boolean(value.bool ?? false)
        case .date, .time, .dateTime: return .dateTime(value.debugDescription)
        case .array: return .array((value.array.map { Array($0) } ?? []).map { convert($0) })
        case .table: return .table(value.table.map { convert($0) } ?? [:])
        }
    }
}
