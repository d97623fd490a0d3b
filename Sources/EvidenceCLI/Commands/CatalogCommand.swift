import ArgumentParser
import EvidenceCatalog
import EvidenceConfig
import EvidencePipeline
import Foundation

struct CatalogCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "catalog",
        abstract: "The catalog itself: move a single host's SQLite catalog to PostgreSQL.",
        subcommands: [Migrate.self]
    )

    struct Migrate: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Copy the home's catalog.sqlite into an empty PostgreSQL database, history and all.",
            discussion: Help.reflow("""
            For a host that grows into several nodes. Every row is copied as it is (item ids,
            custody events with their hashes, jobs with their state and due time), in one
            transaction. The SQLite custody chain must verify first; the copy must verify after,
            ending at the same head, or nothing is kept. catalog.sqlite is left untouched.

            Stop `evidence run` first. The password comes from --password-env or
            --password-file (mode 0600), never from the command line. Afterwards add to
            evidence.toml:

                [catalog]
                url = "postgres://USER@HOST:PORT/DATABASE"
                password_file = "…"          # or password_env
                tls_ca_file = "…"            # required unless the host is loopback

            Exit codes: 0 copied and verified · 1 not copied (the reason is printed) · 2 usage error.
            """)
        )

        @OptionGroup var global: GlobalOptions

        @Option(name: .customLong("to"), help: ArgumentHelp("The empty PostgreSQL database: postgres://USER@HOST[:PORT]/DATABASE.", valueName: "url"))
        var url: String

        @Option(name: .customLong("password-env"), help: ArgumentHelp("Environment variable holding the password.", valueName: "name"))
        var passwordEnv: String?

        @Option(name: .customLong("password-file"), help: ArgumentHelp("File (mode 0600) holding the password.", valueName: "path"))
        var passwordFile: String?

        @Option(name: .customLong("tls-ca-file"), help: ArgumentHelp("CA of the server's certificate (required unless the host is loopback).", valueName: "path"))
        var tlsCAFile: String?

        func validate() throws {
            if passwordEnv != nil && passwordFile != nil { throw ValidationError("give only one of --password-env and --password-file") }
        }

        struct Report: Encodable {
            var from: String
            var to: String
            var copied: CatalogImport
        }

        func run() throws {
            var target: PostgresTarget
            do { target = try PostgresTarget.parse(url) } catch { throw CLIError.usage("--to: \(error)") }
            target.tlsCAFile = tlsCAFile
            let source: SecretSource? = passwordEnv.map(SecretSource.env) ?? passwordFile.map(SecretSource.file)
            if let source {
                do {
                    target.password = try ConfigLoader.readSecret(source, field: passwordEnv != nil ? "--password-env" : "--password-file",
                                                                  configFile: "the command line")
                } catch { throw CLIError.usage(error.description) }
            }
            let homePath = try global.homePath(try? global.loadConfig())
            let sqlite: SQLiteCatalog
            do {
                guard FileManager.default.fileExists(atPath: homePath + "/catalog.sqlite") else {
                    throw CLIError.home("\(homePath): no catalog.sqlite to copy")
                }
                sqlite = try SQLiteCatalog(path: homePath + "/catalog.sqlite")
            } catch let e as CLIError { throw e } catch { throw CLIError.home("\(error)") }
            let postgres: PostgresCatalog
            do { postgres = try PostgresCatalog(target, headPath: nil) } catch {
                Output.err("not copied: \(error)")
                throw ExitCode(1)
            }
            let quiet = global.quiet || global.json
            let copied: CatalogImport
            do {
                copied = try postgres.importCatalog(from: sqlite) { table, rows in
                    if !quiet { Output.err("copying \(table): \(rows) rows") }
                }
            } catch {
                Output.err("not copied: \(error)")
                throw ExitCode(1)
            }
            if global.json {
                Output.json(Report(from: sqlite.location, to: target.label, copied: copied))
            } else {
                Output.line("✓ copied \(sqlite.location) to \(target.label): \(copied.items) items, \(copied.sources) sources, "
                    + "\(copied.events) custody events, \(copied.jobs) jobs, \(copied.proofs) proofs, \(copied.certificates) certificates, "
                    + "\(copied.archivedFiles) archived files, \(copied.sharedLinks) links")
                Output.line("✓ both custody chains verify and end at #\(copied.headSeq) \(copied.headHash)")
                Output.line("next: add [catalog] url = \"\(url)\" (with password_* and tls_ca_file) to evidence.toml; catalog.sqlite was not changed")
            }
        }
    }
}
