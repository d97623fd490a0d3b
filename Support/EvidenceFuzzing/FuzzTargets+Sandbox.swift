import EvidenceSandbox
import Foundation

extension FuzzTargets {
    /// The sandbox's own strict JSON parser (the emulations read every client request with it).
    /// Accepted documents must serialize to JSON that parses back to the same value; refusals
    /// carry a Python-style position inside the input.
    static let sandboxJSON = FuzzTarget(
        name: "sandbox-json", summary: "evidence-sandbox JSONValue.parse (strict RFC 8259)", tokens: jsonTokens + [
            "\\u", "\\udc00", "\\ud83d\\ude00", "\\ud800\\u0041", "1.5e-400", "0.", "-", "01", "\u{7f}", "\u{ff}",
        ]
    ) { data throws(FuzzViolation) in
        let value: JSONValue
        do throws(JSONParseError) {
            value = try JSONValue.parse(data)
        } catch {
            let d = error.description
            guard let open = d.range(of: "(char "), let close = d[open.upperBound...].firstIndex(of: ")"),
                  let char = Int(d[open.upperBound..<close]) else {
                throw FuzzViolation("sandbox-json", "error without a position: \(d)")
            }
            try require(char >= 0 && char <= data.count, "sandbox-json", "position \(char) outside \(data.count) bytes: \(d)")
            return
        }
        let again: JSONValue
        do throws(JSONParseError) { again = try JSONValue.parse(value.serialized()) } catch {
            throw FuzzViolation("sandbox-json", "serialized form does not parse (\(error)): \(value)")
        }
        if value.allFinite { try require(again == value, "sandbox-json", "round trip changed \(value) to \(again)") }
    }
}

extension JSONValue {
    /// Infinite numbers (`1e999`) are written as `null`, as Python would not; they are the one lossy case.
    var allFinite: Bool {
        switch self {
        case .double(let d): return d.isFinite
        case .array(let items): return items.allSatisfy(\.allFinite)
        case .object(let members): return members.allSatisfy { $0.1.allFinite }
        default: return true
        }
    }
}
