import ArgumentParser
import EvidenceConfig
import EvidencePipeline
import EvidenceProcess
import EvidenceStore
import Foundation
import Glibc

struct Evidence: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "evidence",
        abstract: "Store, notarize and archive evidence files; verify them offline.",
        discussion: Help.reflow("""
        Files are stored once by their SHA-256 in a content-addressed store under the home
        folder (--home, $EVIDENCE_HOME, the config's `home`, or ./.evidence), recorded in a
        catalog with a hash-chained custody log.

        Exit codes: 0 ok · 1 some inputs failed or problems were found · 2 usage or config error.
        """),
        version: EvidenceVersion.string,
        subcommands: [
            HashCommand.self, IngestCommand.self, StatusCommand.self, ShowCommand.self,
            VerifyCommand.self, FsckCommand.self, LogCommand.self, RunCommand.self, RulesCommand.self,
            InitCommand.self, DoctorCommand.self, RetryCommand.self, CertCommand.self, BundleCommand.self, ArchiveCommand.self, AccountsCommand.self,
            ServeCommand.self, CatalogCommand.self, ProbeCommand.self, HoldCommand.self, CaseCommand.self, TagCommand.self, DiscloseCommand.self, DeclareCommand.self, RenewCommand.self,
        ]
    )

    /// Parses and runs one command line (the arguments after the program name) and answers
    /// its exit status; every message goes through `Output`. Usage errors exit 2 (not
    /// ArgumentParser's 64), as documented.
    static func execute(_ arguments: [String]) async -> Int32 {
        do {
            var command = try parseAsRoot(GlobalOptions.hoist(arguments))
            if var asyncCommand = command as? any AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
            return 0
        } catch let error as CLIError {
            for line in error.description.split(separator: "\n") { Output.err(String(line)) }
            if case .busy = error { return 1 }
            return 2
        } catch {
            let code = exitCode(for: error)
            if code == .validationFailure || (error is ValidationError) {
                Output.writeError(Data((fullMessage(for: error) + "\n").utf8))
                return 2
            }
            // As ArgumentParser's exit(withError:): help and a clean exit on stdout, the rest on stderr.
            let message = fullMessage(for: error)
            if !message.isEmpty {
                let data = Data((message + "\n").utf8)
                if code.isSuccess { Output.writeOutput(data) } else { Output.writeError(data) }
            }
            return code.rawValue
        }
    }
}

/// The entry points of `evidence`: the executable's `main.swift`, and the CLI tests, which run
/// most command lines in-process with their output captured (`OutputCapture`).
public enum EvidenceCLI {
    /// Runs the process's command line and exits with its status.
    public static func main() async -> Never {
        // Least privilege: everything evidence creates (home, catalog, objects, tokens, bundles,
        // logs) is its owner's alone unless a mode is set on purpose.
        umask(0o077)
        // One malloc arena per core: the heap of a long `run` stays a third smaller (MallocArenas).
        MallocArenas.limitToCores(ProcessInfo.processInfo.activeProcessorCount, environment: ProcessInfo.processInfo.environment)
        let status = await Evidence.execute(Array(CommandLine.arguments.dropFirst()))
        exit(status)
    }

    /// Runs `arguments` in this process as `evidence` would, with `environment` instead of the
    /// process's (as a child would be given it), and answers the exit status and what the
    /// command wrote. `executable` is the `evidence` binary for the children a command starts
    /// (the media probe). The process's umask becomes 077, as `main` sets it.
    public static func run(_ arguments: [String], environment: [String: String],
                           executable: String) async -> (status: Int32, stdout: String, stderr: String) {
        umask(0o077)
        TaskLog.installRouting()
        let capture = OutputCapture()
        let log = TaskLog { capture.append(error: $0) }
        let status = await OutputCapture.$current.withValue(capture) {
            await TaskLog.$current.withValue(log) {
                await CommandEnvironment.$values.withValue(environment) {
                    await ProbeCommand.$evidenceExecutable.withValue(executable) {
                        await Evidence.execute(arguments)
                    }
                }
            }
        }
        return (status, capture.standardOutput, capture.standardError)
    }
}
