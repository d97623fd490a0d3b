#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation

/// Questions to the operator at the terminal. Prompts go to stderr, so `--json` output on
/// stdout stays clean; answers are read from stdin, which may also be a pipe (scripted use).
enum Prompt {
    /// One line, shown as typed. Nil at end of input.
    static func line(_ prompt: String) -> String? {
        Output.writeError(Data(prompt.utf8))
        return readLine(strippingNewline: true)
    }

    /// One line with echo off when stdin is a terminal (passwords): nothing typed appears on
    /// the screen or in the scrollback. Echo comes back even on Ctrl-C. Nil at end of input.
    static func secret(_ prompt: String) -> String? {
        Output.writeError(Data(prompt.utf8))
        guard isatty(STDIN_FILENO) == 1 else { return readLine(strippingNewline: true) }
        var t = termios()
        guard tcgetattr(STDIN_FILENO, &t) == 0 else { return readLine(strippingNewline: true) }
        savedTerminal = t
        signal(SIGINT) { _ in
            if var saved = savedTerminal { tcsetattr(STDIN_FILENO, TCSAFLUSH, &saved) }
            _exit(130)
        }
        var quiet = t
        quiet.c_lflag &= ~tcflag_t(ECHO)
        tcsetattr(STDIN_FILENO, TCSAFLUSH, &quiet)
        let answer = readLine(strippingNewline: true)
        tcsetattr(STDIN_FILENO, TCSAFLUSH, &t)
        signal(SIGINT, SIG_DFL)
        savedTerminal = nil
        Output.writeError(Data("\n".utf8))
        return answer
    }
}

/// The terminal settings to restore from the SIGINT handler (set only while echo is off).
nonisolated(unsafe) private var savedTerminal: termios?
