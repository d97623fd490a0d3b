import ArgumentParser
import EvidenceConfig
import EvidenceCore
import EvidencePipeline
import Foundation

// Option values parsed once, by ArgumentParser, into the types the commands use: a bad value is
// refused before `run` (exit 2, naming the option and the value), and `run` never parses it again.

/// `--log-format`: `text` or `json`.
enum LogFormat: String, ExpressibleByArgument, CaseIterable {
    case text, json

    var handlerFormat: StderrLogHandler.Format { self == .json ? .json : .text }
}

/// `--listen`, `--metrics`: `HOST:PORT` or `[v6]:PORT` (port 0 picks a free one).
struct ListenAddress: ExpressibleByArgument, CustomStringConvertible {
    let host: String
    let port: Int
    /// As the operator wrote it (for messages).
    let description: String

    init?(argument: String) {
        guard let parsed = ServeConfig.parseListen(argument) else { return nil }
        (host, port, description) = (parsed.host, parsed.port, argument)
    }
}

/// `--min-free`: bytes, or with K, M, G or T (powers of 1,024; `B`/`iB` ignored): 1048576, 500M, 2G.
struct ByteSize: ExpressibleByArgument, CustomStringConvertible {
    let bytes: Int64
    let description: String

    init?(argument: String) {
        let t = argument.trimmingCharacters(in: .whitespaces).uppercased()
            .replacingOccurrences(of: "IB", with: "").replacingOccurrences(of: "B", with: "")
        let digits = t.prefix { $0.isNumber }
        guard let n = Int64(digits) else { return nil }
        let shift: Int64
        switch t.dropFirst(digits.count) {
        case "": shift = 0
        case "K": shift = 10
        case "M": shift = 20
        case "G": shift = 30
        case "T": shift = 40
        default: return nil
        }
        guard n <= Int64.max >> shift else { return nil }
        (bytes, description) = (n << shift, argument)
    }
}

/// `--older-than`: a duration as the config writes them (`90s`, `10m`, `2h`, `1d`).
struct DurationArgument: ExpressibleByArgument, CustomStringConvertible {
    let seconds: Double
    let description: String

    init?(argument: String) {
        guard let s = try? DurationText.seconds(argument) else { return nil }
        (seconds, description) = (s, argument)
    }
}

/// `--since`, `--until`: ISO 8601 (`2026-04-12T14:00:00Z`, `…+02:00`; no zone means UTC), or a
/// date alone (its midnight UTC).
struct DateArgument: ExpressibleByArgument, CustomStringConvertible {
    let date: Date
    let description: String

    init?(argument: String) {
        let text = argument.count == 10 ? argument + "T00:00:00Z" : argument
        guard let d = Timestamp.parseLenient(text) else { return nil }
        (date, description) = (d, argument)
    }
}
