import ArgumentParser
import EvidenceCatalog
import EvidenceCertificate
import EvidenceConfig
import EvidenceCore
import EvidencePipeline
import EvidenceStore
import Foundation
import Logging

struct CertCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cert",
        abstract: "Write an item's certificate PDF.",
        discussion: Help.reflow("""
        By default the evidence certificate `evidence` renders (file, size, SHA-256, media
        summary, every proof, the commands to verify). --origin NAME writes the certificate a
        notary issued instead (e.g. the QED PDF of [notaries.qed]).

        The certificate stored when the item was certified is written as it is. An item not
        certified yet gets a certificate rendered now, showing its proofs as they stand.

          evidence cert 12 -o clip-certificate.pdf
          evidence cert 3fa9c2 --origin qed -o qed.pdf

        Exit codes: 0 written · 1 no such item or certificate · 2 usage error.
        """)
    )

    @OptionGroup var global: GlobalOptions

    @Argument(help: ArgumentHelp("Item id, hash prefix or source path.", valueName: "item"))
    var item: String

    @Option(name: .shortAndLong, help: ArgumentHelp("Output file (default: <sha8>-<origin>-certificate.pdf here).", valueName: "file"))
    var output: String?

    @Option(name: .long, help: ArgumentHelp("`evidence` (ours) or a notary's name.", valueName: "name"))
    var origin: String = "evidence"

    func run() async throws {
        let home = try global.openHome(mustExist: true)
        let it = try ItemResolver.resolve(item, in: home)
        let out = output ?? "\(it.sha256.short)-\(BundleNames.safe(origin))-certificate.pdf"
        let stored = try home.catalog.certificates(itemID: it.id)
        let pdf: Data
        var note = "stored certificate"
        if let c = stored.first(where: { $0.origin == origin }) {
            pdf = try home.store.read(c.sha256)
        } else if origin == "evidence" {
            let proofs = try home.catalog.proofs(itemID: it.id)
            let config = try global.loadConfig()
            let sources = try home.catalog.sources(itemID: it.id)
            // The rule's labels and the sidecar's, as the pipeline would print them (not recorded: a preview).
            let rules = config.rulesDir.map { ConfigLoader.loadRules(directory: $0).rules } ?? []
            var labels = sources.last?.rule.flatMap { r in rules.first { $0.name == r }?.labels } ?? CertificateLabels()
            if let side = sources.last.flatMap({ CertificateLabels.sidecar(of: $0.path).labels }) { labels = labels.overridden(by: side) }
            let content = EvidenceCertificateMaker.content(
                item: it, sources: sources, proofs: proofs,
                custodyHead: try home.catalog.events(itemID: it.id).last?.hash,
                tsaSigners: EvidenceCertificateMaker.signers(home: home, proofs: proofs), labels: labels, timezone: config.timezone,
                poster: PosterFrames.recorded(home: home, events: try home.catalog.events(itemID: it.id)),
                digests: DigestAlgorithm.recorded(in: try home.catalog.events(itemID: it.id)))
            pdf = try CertificateRenderer.render(content)
            note = "rendered now: item is \(it.state.rawValue)"
        } else if let proof = try home.catalog.proofs(itemID: it.id).first(where: { $0.notary == origin && $0.kind == .qed }) {
            pdf = try await fetch(proof, home: home)
            note = "fetched from \(origin) now"
        } else {
            let have = stored.map(\.origin).joined(separator: ", ")
            Output.err("item #\(it.id) has no certificate from \"\(origin)\" (it has: \(have.isEmpty ? "none yet, state \(it.state.rawValue)" : have))")
            throw ExitCode(1)
        }
        do { try AtomicFile.write(pdf, to: out, mode: 0o644) } catch {
            Output.err(error.description)
            throw ExitCode(1)
        }
        try AccessRecord.record(it.id, "certificate \(origin) written to \(out)", in: home)
        if global.json {
            struct Written: Encodable { var item: Int64; var origin: String; var file: String; var size: Int; var sha256: String; var note: String }
            Output.json(Written(item: it.id, origin: origin, file: out, size: pdf.count, sha256: SHA256Hasher.hash(pdf).hex, note: note))
        } else if !global.quiet {
            Output.line("wrote \(out) (\(Output.bytes(Int64(pdf.count))), \(note))")
        }
    }

    /// Fetches a QED report's certificate into the store and records it.
    private func fetch(_ proof: Proof, home: EvidenceHome) async throws -> Data {
        guard proof.state == .confirmed, let slug = proof.remoteID else {
            Output.err("item #\(proof.itemID): the \(proof.notary) report is \(proof.state.rawValue); its certificate exists once it is confirmed")
            throw ExitCode(1)
        }
        let config = try global.loadConfig()
        let notaries: Notaries
        do { notaries = try Notaries.build(config: config, logger: Logger(label: "evidence")) } catch { throw CLIError.config(error.description) }
        guard case .qed(let qed)? = notaries.entries[proof.notary]?.client else {
            throw CLIError.config("notary \"\(proof.notary)\" is not configured as kind qed in \(config.file ?? "the config")")
        }
        do { return try await NotaryCertificate.fetch(proof, slug: slug, with: qed, home: home) } catch {
            Output.err("\(error)")
            throw ExitCode(1)
        }
    }
}
