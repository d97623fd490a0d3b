/// An invalid config file or watch rule, located as precisely as possible.
///
/// `description` is the one line an operator sees (exit code 2):
/// `evidence.toml:12: field `workers.jobs`: expected an integer, found string`.
/// `file` is the path as the caller gave it; `line` (and `column`, for TOML syntax errors)
/// is omitted when unknown; `field` is the dotted key path (`notaries.qed.poll_max`).
/// Messages never contain secret values.
public struct ConfigError: Error, CustomStringConvertible, Sendable, Equatable {
    public var file: String
    public var line: Int?
    public var column: Int?
    public var field: String?
    public var message: String

    public init(file: String, line: Int? = nil, column: Int? = nil, field: String? = nil, message: String) {
        self.file = file
        self.line = line
        self.column = column
        self.field = field
        self.message = message
    }

    public var description: String {
        var s = file
        if let line {
            s += ":\(line)"
            if let column { s += ":\(column)" }
        }
        s += ": "
        if let field { s += "field `\(field)`: " }
        return s + message
    }
}
