import EvidenceProcess
import Foundation
import Glibc

/// A real terminal for interactive commands: a private tmux server (its own socket, no user
/// config) running one command in a wide window. Tests read the screen and type into it as an
/// operator would; what the command prints and echoes is exactly what a person would see.
final class Terminal {
    let socket = "evidence-test-\(UUID().uuidString.prefix(8))"
    private let marker = "__EXIT_STATUS="

    /// Starts `argv` (with `environment` added) in the terminal.
    init(_ argv: [String], environment: [String: String] = [:]) throws {
        let quoted = argv.map { "'" + $0.replacingOccurrences(of: "'", with: "'\\''") + "'" }.joined(separator: " ")
        let env = environment.map { "\($0.key)='\($0.value)'" }.joined(separator: " ")
        // Keep the window after the command ends so its last screen and status can be read.
        let script = "env -u EVIDENCE_HOME -u EVIDENCE_CONFIG \(env) \(quoted); echo \(marker)$?; sleep 300"
        // Not CLI.exec: the tmux server it forks keeps the inherited pipes open, so reading them
        // would never end. Stdio on /dev/null, and wait for the client alone.
        let args = ["-L", socket, "-f", "/dev/null", "new-session", "-d", "-x", "400", "-y", "60", script]
        let client: ChildProcess
        do {
            client = try ChildProcess("tmux", args, stdout: .null, stderr: .null)
        } catch {
            throw TerminalError(message: "cannot start tmux: \(error)")
        }
        let done = client.wait()
        guard done == .exited(0) else { throw TerminalError(message: "tmux new-session failed (\(done))") }
    }

    deinit { _ = CLI.exec(["tmux", "-L", socket, "kill-server"]) }

    /// The screen and scrollback, wrapped lines joined.
    func screen() -> String {
        CLI.exec(["tmux", "-L", socket, "capture-pane", "-p", "-J", "-S", "-500", "-t", "0"]).stdout
    }

    /// Waits until the screen contains `text`; the screen, or nil after `timeout` seconds.
    @discardableResult
    func wait(for text: String, timeout: Double = 30) -> String? {
        let deadline = Date().addingTimeInterval(timeout)
        repeat {
            let s = screen()
            if s.contains(text) { return s }
            usleep(100_000)
        } while Date() < deadline
        return nil
    }

    /// Types `text` literally, then Enter.
    func type(_ text: String) {
        _ = CLI.exec(["tmux", "-L", socket, "send-keys", "-t", "0", "-l", text])
        _ = CLI.exec(["tmux", "-L", socket, "send-keys", "-t", "0", "Enter"])
    }

    /// The command's exit status once it ended, or nil after `timeout` seconds.
    func exitStatus(timeout: Double = 60) -> Int32? {
        guard let s = wait(for: marker, timeout: timeout), let r = s.range(of: marker) else { return nil }
        return Int32(s[r.upperBound...].prefix { $0.isNumber })
    }

    struct TerminalError: Error { var message: String }
}
