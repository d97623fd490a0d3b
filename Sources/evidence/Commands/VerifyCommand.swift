import ArgumentParser
import EvidenceCatalog
import EvidenceConfig
import EvidenceCore
import EvidenceNotary
import EvidencePipeline
import EvidenceStore
import Foundation

struct VerifyCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify",
        abstract: "Check a bundle folder offline, or re-hash a file or an item against the catalog and store.",
        discussion: """
        DIR (a bundle from `evidence bundle`): checks offline, without the catalog, every file
        against SHA256SUMS (and that nothing unlisted was added), the manifest, the original's
        hash, that every proof the manifest lists is confirmed and present, each RFC 3161 token
        (imprint, signature and chain), each QED report (hash, confirmed, transaction: the
        bundle's own copy), the custody events' hashes and that they record the item's hash and
        name and each proof's receipt, and the certificates.

        Trust anchors come only from outside the bundle: --trust FILE (the TSA's CA certificate,
        obtained from the TSA; repeatable) and the config's rfc3161 notaries (`ca_file`,
        `tsa_cert_sha256`). A CA file inside the bundle is never trusted: its SHA-256 fingerprint
        is printed for comparison with the one the TSA publishes. With no anchor, an RFC 3161
        token is "not verified" and the bundle is not reported verified.

        FILE: hashes the file and looks its SHA-256 up in the catalog; then re-hashes the store
        object of that item.
        ITEM (id, hash prefix or source path): re-hashes the store object and compares it with
        the catalog's hash and size; checks each proof's receipt (RFC 3161 token: imprint, and
        signature and chain with the TSA's `ca_file` or --trust; QED report: hash, confirmed, transaction)
        and each certificate; reports whether each recorded source still matches.

        Each check is printed on its own line with ✓ or ✗.
        Exit codes: 0 every check passed · 1 a check failed · 2 usage error.
        """
    )

    @OptionGroup var global: GlobalOptions

    @Argument(help: ArgumentHelp("A file, or an item id / hash prefix / source path, or a bundle folder.", valueName: "file-or-item"))
    var target: String

    @Option(name: .customLong("trust"), help: ArgumentHelp(
        "A PEM file of CA certificates to trust for RFC 3161 tokens (the TSA's CA, obtained from the TSA). Repeatable.",
        valueName: "file"))
    var trust: [String] = []

    func validate() throws {
        for file in trust {
            do { _ = try TSACertificates.read(pemFile: file) } catch {
                throw ValidationError("--trust \(file): \(error.message)")
            }
        }
    }

    /// The config's rfc3161 anchors plus --trust: everything this run trusts, none of it from a bundle.
    func anchors(_ config: EvidenceConfig) -> TSATrust {
        config.tsaTrust.merging(TSATrust(caFiles: trust.map { URL(fileURLWithPath: $0).standardizedFileURL.path }))
    }

    struct Check: Encodable {
        var check: String
        var ok: Bool
        var detail: String
    }

    struct Report: Encodable {
        var target: String
        var item: Int64?
        var sha256: String?
        var ok: Bool
        var checks: [Check]
        /// Bundles only: fingerprints to compare, and what the tokens were checked against.
        var notes: [String]? = nil
        var trustAnchors: [String]? = nil
    }

    func run() throws {
        if BundleVerifier.isBundle(target) {
            return try verifyBundle()
        }
        let home = try global.openHome(mustExist: true)
        var checks: [Check] = []
        var item: Item?
        var st = stat()
        let isFile = lstat(target, &st) == 0 && (st.st_mode & S_IFMT) == S_IFREG

        if isFile {
            let r = try hashOrFail(target)
            checks.append(Check(check: "file hashed", ok: true, detail: "\(target): sha256 \(r.digest.hex), \(r.size) bytes"))
            item = try home.catalog.item(sha256: r.digest)
            if let i = item {
                checks.append(Check(check: "in catalog", ok: true, detail: "item #\(i.id), state \(i.state.rawValue)"))
                checks.append(Check(check: "size matches catalog", ok: r.size == i.size, detail: "file \(r.size), catalog \(i.size)"))
            } else {
                checks.append(Check(check: "in catalog", ok: false, detail: "no item has this content: the file differs from everything ingested"))
            }
        } else {
            item = try ItemResolver.resolve(target, in: home)
        }

        if let i = item {
            let objectPath = home.store.location(of: i.sha256)
            do {
                let r = try home.store.hashObject(i.sha256)
                checks.append(Check(check: "store object re-hashed", ok: r.digest == i.sha256 && r.size == i.size,
                                    detail: r.digest == i.sha256 ? "\(objectPath): matches" : "\(objectPath): hashes to \(r.digest.hex)"))
            } catch {
                checks.append(Check(check: "store object re-hashed", ok: false, detail: error.description))
            }
            let config = try global.loadConfig()
            for p in try home.catalog.proofs(itemID: i.id) {
                switch p.state {
                case .pending:
                    checks.append(Check(check: "proof \(p.notary)", ok: true, detail: "pending since \(Output.date(p.submittedAt)) (not checked yet)"))
                case .failed:
                    checks.append(Check(check: "proof \(p.notary)", ok: false, detail: "the notary failed it: \(p.error ?? "-")"))
                case .confirmed:
                    guard let r = p.receipt, let data = try? home.store.read(r) else {
                        checks.append(Check(check: "proof \(p.notary)", ok: false, detail: "receipt object missing from the store"))
                        continue
                    }
                    // This notary's own anchors, plus --trust.
                    let anchors = (config.notaries[p.notary]?.tsaTrust ?? TSATrust())
                        .merging(TSATrust(caFiles: trust.map { URL(fileURLWithPath: $0).standardizedFileURL.path }))
                    let c = ProofCheck.check(p, receipt: data, digest: i.sha256, trust: anchors, label: home.store.location(of: r))
                    checks.append(Check(check: c.check, ok: c.ok, detail: c.detail))
                }
            }
            for c in try home.catalog.certificates(itemID: i.id) {
                let head = (try? home.store.read(c.sha256))?.prefix(5)
                checks.append(Check(check: "certificate \(c.origin)", ok: head == Data("%PDF-".utf8),
                                    detail: home.store.location(of: c.sha256)))
            }
            if !isFile {
                for s in try home.catalog.sources(itemID: i.id) {
                    // Informational: sources may be moved or deleted by after-actions.
                    guard FileManager.default.fileExists(atPath: s.path) else { continue }
                    if let r = try? FileHasher.hash(path: s.path) {
                        checks.append(Check(check: "source still matches", ok: r.digest == i.sha256,
                                            detail: r.digest == i.sha256 ? s.path : "\(s.path): now hashes to \(r.digest.hex) (changed since ingest)"))
                    }
                }
            }
        }

        let ok = checks.allSatisfy(\.ok)
        if global.json {
            Output.json(Report(target: target, item: item?.id, sha256: item?.sha256.hex, ok: ok, checks: checks))
        } else {
            for c in checks { Output.line("\(c.ok ? "✓" : "✗") \(c.check): \(c.detail)") }
            Output.line(ok ? "verified" : "VERIFICATION FAILED")
        }
        if !ok { throw ExitCode(1) }
    }

    private func verifyBundle() throws {
        let anchors = anchors(try global.loadConfig())
        let report = BundleVerifier.verify(target, trust: anchors)
        let checks = report.checks.map { Check(check: $0.check, ok: $0.ok, detail: $0.detail) }
        let ok = report.ok
        if global.json {
            Output.json(Report(target: target, item: nil, sha256: nil, ok: ok, checks: checks, notes: report.notes,
                               trustAnchors: anchors.caFiles + anchors.pinnedSigners))
        } else {
            for c in checks { Output.line("\(c.ok ? "✓" : "✗") \(c.check): \(c.detail)") }
            for n in report.notes { Output.line("• \(n)") }
            if anchors.isEmpty {
                Output.line("no trust anchor was given: \(BundleVerifier.noAnchorAdvice)")
            }
            Output.line(ok ? "bundle verified" : "BUNDLE VERIFICATION FAILED")
        }
        if !ok { throw ExitCode(1) }
    }

    private func hashOrFail(_ path: String) throws -> FileHasher.Result {
        do { return try FileHasher.hash(path: path) } catch {
            Output.err(error.description)
            throw ExitCode(1)
        }
    }
}
