import ArgumentParser
import EvidenceCore
import EvidencePipeline
import Foundation
import Glibc
import EvidencePortal

struct DiscloseCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "disclose",
        abstract: "Write a case's disclosure package: every item's bundle, an index PDF, a custody CSV, one SHA256SUMS.",
        discussion: Help.reflow("""
        The package (a folder, or a .zip of it when OUT ends in .zip):

          SHA256SUMS        every other file of the package, the items' files included
          disclosure.json   the manifest: case, items, the case's custody events
          VERIFY.md         how to check the whole package with standard tools
          index.pdf         case, items, digests, proofs, custody summary, page numbers
          custody.csv       every custody event of the case and its items, in log order
          items/ID-NAME/    each item's bundle, as `evidence bundle` writes it

        It checks with standard tools alone: `sha256sum -c SHA256SUMS` in the package, then
        each item's `openssl ts -verify` (its VERIFY.md) with the TSA's CA certificate obtained
        from the TSA; `evidence verify DIR --trust TSA-CA.pem` checks everything at once.

        Each item's disclosure is an `accessed` custody event by the local user, recorded
        before the package is written, so every bundle's custody log shows it. The package is
        written under a temporary name and renamed into place when complete.

        Exit codes: 0 written · 1 no such case, or writing failed · 2 usage error.
        """)
    )

    @OptionGroup var global: GlobalOptions

    @Argument(help: ArgumentHelp("The case.", valueName: "case"))
    var name: String

    @Option(name: .shortAndLong, help: ArgumentHelp("Folder to create, or a file ending in .zip.", valueName: "out"))
    var output: String

    func validate() throws {
        try CaseCommand.validName(name, what: "case name")
    }

    func run() async throws {
        let config = try global.loadConfig()
        let home = try global.openHome(mustExist: true)
        let book = try CaseCommand.book(home)
        let theCase = try CaseCommand.existing(name, in: book)
        let asZip = output.lowercased().hasSuffix(".zip")
        if asZip, FileManager.default.fileExists(atPath: output) {
            Output.err("\(output): already exists; choose a new file name")
            throw ExitCode(1)
        }
        let actor = CaseCommand.actor()
        for id in theCase.items {
            try AccessRecord.record(id, "disclosed in case \(name) to \(output)", in: home)
        }
        let folder = asZip ? output + ".dir-\(getpid())" : output
        await CustodyFirst.anchor(config: config, home: home, global: global)
        let written: DisclosureWriter.Written
        do {
            written = try DisclosureWriter.write(home: home, book: book, caseName: name, to: folder, tsaCAFiles: config.tsaCAFiles,
                                                 timezone: config.timezone, actor: actor) { n, total, item in
                if !global.quiet && !global.json { Output.err("[\(n)/\(total)] item #\(item.id) (\(Output.bytes(item.size)))") }
            }
        } catch {
            Output.err("disclosure of case \(name): \(error)")
            throw ExitCode(1)
        }
        if asZip {
            defer { try? FileManager.default.removeItem(atPath: folder) }
            do { try DisclosureDownload.zip(folder, to: output, top: "disclosure-\(name)") } catch {
                Output.err("\(output): \(error)")
                throw ExitCode(1)
            }
        }
        if global.json {
            struct Answer: Encodable { var `case`: String; var output: String; var items: Int; var files: Int; var bytes: Int64 }
            Output.json(Answer(case: name, output: output, items: written.manifest.items.count, files: written.files, bytes: written.bytes))
            return
        }
        if !global.quiet {
            Output.line("wrote \(output): case \(name), \(written.manifest.items.count) item(s), \(written.files) files, \(Output.bytes(written.bytes))")
            let unproven = written.manifest.items.filter { !["done", "confirmed", "certified", "archived", "shared"].contains($0.state) }
            if !unproven.isEmpty {
                Output.line("note: " + unproven.map { "#\($0.id) is \($0.state)" }.joined(separator: ", ") + ": their proofs may be incomplete")
            }
            Output.line("check it with: (cd \(asZip ? "disclosure-\(name)" : output) && sha256sum -c SHA256SUMS), and: "
                        + "evidence verify \(asZip ? "disclosure-\(name)" : output) --trust TSA-CA.pem")
        }
    }
}
