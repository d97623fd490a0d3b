import ArgumentParser
import EvidenceCertificate
import EvidenceCore
import EvidencePipeline
import EvidenceStore
import Foundation

struct DeclareCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "declare",
        abstract: "Write a certification of authenticity (FRE 902(13)/(14)) for items, ready for the custodian to sign.",
        discussion: Help.reflow("""
        The PDF names the declarant, lists each item with its SHA-256, size, times (UTC and the
        config's `timezone`), sources, proofs and certificate digest, describes the process that
        took in and kept them, names this software's version and its own executable's SHA-256,
        and ends with the declaration and a signature block. The declarant signs it; the
        software does not make the declaration.

          evidence declare 14 15 --custodian "J. Smith" --role "Records custodian" \\
              --agency "Riverside PD" -o declaration.pdf
          evidence declare --case 2026-0412 --custodian "J. Smith" -o declaration.pdf

        Each item's declaration is an `accessed` custody event by the local user.

        Exit codes: 0 written · 1 no such item or case, or writing failed · 2 usage error.
        """)
    )

    @OptionGroup var global: GlobalOptions

    @Argument(help: ArgumentHelp("Items: id, hash prefix or source path.", valueName: "item"))
    var items: [String] = []

    @Option(name: .customLong("case"), help: ArgumentHelp("Every item of this case (and its name on the declaration).", valueName: "case"))
    var caseName: String?

    @Option(help: ArgumentHelp("The declarant's name.", valueName: "name"))
    var custodian: String

    @Option(help: ArgumentHelp("The declarant's title or role.", valueName: "text"))
    var role: String?

    @Option(help: ArgumentHelp("The declarant's agency or organisation.", valueName: "text"))
    var agency: String?

    @Option(name: .shortAndLong, help: ArgumentHelp("The PDF to write.", valueName: "file"))
    var output: String

    func validate() throws {
        if items.isEmpty && caseName == nil { throw ValidationError("name items, or --case CASE") }
        for (flag, v) in [("--custodian", custodian), ("--role", role ?? "x"), ("--agency", agency ?? "x")] {
            if let p = CertificateLabels.valueProblem(v) { throw ValidationError("\(flag) \(p)") }
        }
        if let c = caseName { try CaseCommand.validName(c, what: "case name") }
    }

    func run() throws {
        let config = try global.loadConfig()
        let home = try global.openHome(mustExist: true)
        var chosen: [Item] = []
        if let c = caseName {
            let theCase = try CaseCommand.existing(c, in: try CaseCommand.book(home))
            for id in theCase.items { if let i = try home.catalog.item(id: id) { chosen.append(i) } }
        }
        for ref in items { chosen.append(try ItemResolver.resolve(ref, in: home)) }
        var seen = Set<Int64>()
        chosen = chosen.filter { seen.insert($0.id).inserted }
        guard !chosen.isEmpty else {
            Output.err("case \(caseName ?? "") has no items: nothing to declare")
            throw ExitCode(1)
        }
        for item in chosen {
            try AccessRecord.record(item.id, "declaration by \(custodian) written to \(output)", in: home)
        }
        let pdf: Data
        do {
            let doc = try Declaration.document(home: home, items: chosen,
                                               declarant: .init(custodian: custodian, role: role, agency: agency, caseName: caseName),
                                               timezone: config.timezone, executable: ProbeCommand.executable)
            pdf = try DocumentRenderer.render(doc)
            try AtomicFile.write(pdf, to: output, mode: 0o644)
        } catch {
            Output.err("\(output): \(error)")
            throw ExitCode(1)
        }
        if global.json {
            struct Answer: Encodable { var output: String; var items: [Int64]; var sha256: String; var bytes: Int }
            Output.json(Answer(output: output, items: chosen.map(\.id), sha256: SHA256Hasher.hash(pdf).hex, bytes: pdf.count))
        } else if !global.quiet {
            Output.line("wrote \(output): certification of authenticity for " + chosen.map { "#\($0.id)" }.joined(separator: ", ")
                        + ", to be signed by \(custodian)")
        }
    }
}
