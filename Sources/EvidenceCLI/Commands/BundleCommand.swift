import ArgumentParser
import EvidenceCatalog
import EvidenceConfig
import EvidenceCore
import EvidencePipeline
import Foundation

struct BundleCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bundle",
        abstract: "Write an auditor's bundle of one item: original, proofs, certificates, custody, VERIFY.md.",
        discussion: Help.reflow("""
        The folder verifies offline with standard tools alone, given the TSA's CA certificate
        obtained from the TSA (never from the folder):

          cd DIR && sha256sum -c SHA256SUMS
          openssl ts -verify -data original/FILE -in proofs/NOTARY.tsr \\
              -CAfile TSA-CA-FROM-THE-TSA.pem -untrusted proofs/NOTARY-tsa.crt

        and with `evidence verify DIR --trust TSA-CA-FROM-THE-TSA.pem`, which checks everything
        point by point. VERIFY.md in the folder lists the exact commands for this item. A copy of
        the notary's `ca_file` is included as proofs/NOTARY-ca.pem, only so that its fingerprint
        can be compared with the TSA's published one.

        The item's custody events come with proofs of their own: with [custody] in the config,
        the custody log's head is time-stamped first (one request to the anchor TSA), and
        custody/ holds that checkpoint of the log's Merkle tree (RFC 9162), its token and each
        event's inclusion proof (C2SP tlog-proof): `python3 custody/check.py`, then
        `openssl ts -verify -data custody/checkpoint -in custody/checkpoint.tsr -CAfile …`.

        The folder is written under a temporary name and renamed into place when complete; DIR
        must not exist or be empty.

        Exit codes: 0 written · 1 no such item, or writing failed · 2 usage error.
        """)
    )

    @OptionGroup var global: GlobalOptions

    @Argument(help: ArgumentHelp("Item id, hash prefix or source path.", valueName: "item"))
    var item: String

    @Option(name: .shortAndLong, help: ArgumentHelp("Folder to create.", valueName: "dir"))
    var output: String

    func run() async throws {
        let config = try global.loadConfig()
        let home = try global.openHome(mustExist: true)
        let it = try ItemResolver.resolve(item, in: home)
        // Recorded before it is written: the bundle's custody log then shows its own making.
        try AccessRecord.record(it.id, "bundle written to \(output)", in: home)
        await CustodyFirst.anchor(config: config, home: home, global: global)
        let manifest: BundleManifest
        do {
            manifest = try BundleWriter.write(home: home, item: it, to: output, tsaCAFiles: config.tsaCAFiles)
        } catch {
            Output.err("bundle of item #\(it.id): \(error)")
            throw ExitCode(1)
        }
        if global.json {
            struct Written: Encodable { var item: Int64; var dir: String; var files: [BundleManifest.FileEntry] }
            Output.json(Written(item: it.id, dir: output, files: manifest.files))
            return
        }
        if !global.quiet {
            Output.line("wrote \(output): \(manifest.files.count + 1) files for item #\(it.id) (\(it.state.rawValue))")
            if it.state < .confirmed || it.state == .failed {
                Output.line("note: item #\(it.id) is \(it.state.rawValue): its proofs are incomplete")
            }
            Output.line("check it with: (cd \(output) && sha256sum -c SHA256SUMS), and: evidence verify \(output) --trust TSA-CA.pem "
                        + "(the TSA's CA certificate, obtained from the TSA; VERIFY.md has the openssl commands)")
        }
    }
}
