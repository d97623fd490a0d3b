import EvidenceProcess
import Foundation

/// Runs the `openssl` command-line tool (found on PATH) and captures its combined output.
/// Used by the test TSA and by tests that check artefacts the way an auditor would.
public enum OpenSSLCLI {
    public typealias Result = ChildProcess.Result

    /// Runs `openssl <arguments>` in `directory` (the current directory when nil).
    public static func run(_ arguments: [String], in directory: String? = nil) throws -> Result {
        try ChildProcess.run("openssl", arguments, directory: directory)
    }

    /// Like `run`, but throws `TestTSAError.commandFailed` on a non-zero exit.
    @discardableResult
    public static func check(_ arguments: [String], in directory: String? = nil) throws -> String {
        let result = try run(arguments, in: directory)
        guard result.succeeded else {
            throw TestTSAError.commandFailed(command: "openssl " + arguments.joined(separator: " "),
                                             status: result.status, output: result.output)
        }
        return result.output
    }
}
public enum TestTSAError: Error, CustomStringConvertible, Sendable {
    case commandFailed(command: String, status: Int32, output: String)
    case io(String)

    public var description: String {
        switch self {
        case let .commandFailed(command, status, output):
            return "`\(command)` exited with \(status): \(output.trimmingCharacters(in: .whitespacesAndNewlines).prefix(2000))"
        case let .io(message):
            return message
        }
    }
}
