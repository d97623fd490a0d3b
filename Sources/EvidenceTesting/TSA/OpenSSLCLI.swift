import Foundation

/// Runs the `openssl` command-line tool (found on PATH) and captures its combined output.
/// Used by the test TSA and by tests that check artefacts the way an auditor would.
public enum OpenSSLCLI {
    public struct Result: Sendable {
        public let status: Int32
        /// stdout and stderr, interleaved as written.
        public let output: String
        public var succeeded: Bool { status == 0 }
    }

    /// Runs `openssl <arguments>` in `directory` (the current directory when nil).
    public static func run(_ arguments: [String], in directory: String? = nil) throws -> Result {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["openssl"] + arguments
        if let directory { process.currentDirectoryURL = URL(fileURLWithPath: directory, isDirectory: true) }
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        process.standardInput = FileHandle.nullDevice
        try startSerialized(process)
        // Read to EOF before waiting so a chatty child can never block on a full pipe.
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return Result(status: process.terminationStatus, output: String(decoding: data, as: UTF8.self))
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
