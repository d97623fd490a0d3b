import ArgumentParser
import Foundation

@main
struct Evidence: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "evidence",
        abstract: "Store, notarize and archive evidence files; verify them offline.",
        discussion: """
        Files are stored once by their SHA-256 in a content-addressed store under the home
        folder (--home, $EVIDENCE_HOME, the config's `home`, or ./.evidence), recorded in a
        catalog with a hash-chained custody log.

        Exit codes: 0 ok · 1 some inputs failed or problems were found · 2 usage or config error.
        """,
        subcommands: [
            HashCommand.self, IngestCommand.self, StatusCommand.self, ShowCommand.self,
            VerifyCommand.self, FsckCommand.self, LogCommand.self, RunCommand.self, RulesCommand.self,
            InitCommand.self, DoctorCommand.self, RetryCommand.self, CertCommand.self, BundleCommand.self, ArchiveCommand.self, AccountsCommand.self,
            ServeCommand.self, CatalogCommand.self, ProbeCommand.self, HoldCommand.self,
        ]
    )

    /// Usage errors exit 2 (not ArgumentParser's 64), as documented.
    static func main() async {
        // Least privilege: everything evidence creates (home, catalog, objects, tokens, bundles,
        // logs) is its owner's alone unless a mode is set on purpose.
        umask(0o077)
        do {
            var command = try parseAsRoot(GlobalOptions.hoist(Array(CommandLine.arguments.dropFirst())))
            if var asyncCommand = command as? any AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch let error as CLIError {
            for line in error.description.split(separator: "\n") { Output.err(String(line)) }
            if case .busy = error { Foundation.exit(1) }
            Foundation.exit(2)
        } catch {
            let code = exitCode(for: error)
            if code == .validationFailure || (error is ValidationError) {
                FileHandle.standardError.write(Data((fullMessage(for: error) + "\n").utf8))
                Foundation.exit(2)
            }
            exit(withError: error)
        }
    }
}
