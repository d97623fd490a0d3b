import ArgumentParser
import EvidenceCatalog
import EvidenceCore
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
        hash, each RFC 3161 token (imprint, signature and chain with the bundled CA), each QED
        report (hash, confirmed, transaction), the custody events' hashes, and the certificates.

        FILE: hashes the file and looks its SHA-256 up in the catalog; then re-hashes the store
        object of that item.
        ITEM (id, hash prefix or source path): re-hashes the store object and compares it with
        the catalog's hash and size; checks each proof's receipt (RFC 3161 token: imprint, and
        signature and chain with the TSA's `ca_file`; QED report: hash, confirmed, transaction)
        and each certificate; reports whether each recorded source still matches.

        Each check is printed on its own line with ✓ or ✗.
        Exit codes: 0 every check passed · 1 a check failed · 2 usage error.
        """
    )

    @OptionGroup var global: GlobalOptions

    @Argument(help: ArgumentHelp("A file, or an item id / hash prefix / source path.", valueName: "file-or-item"))
    var target: String

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
            let objectPath = home.store.objectPath(i.sha256)
            do {
                let r = try FileHasher.hash(path: objectPath)
                checks.append(Check(check: "store object re-hashed", ok: r.digest == i.sha256 && r.size == i.size,
                                    detail: r.digest == i.sha256 ? "\(objectPath): matches" : "\(objectPath): hashes to \(r.digest.hex)"))
            } catch {
                checks.append(Check(check: "store object re-hashed", ok: false, detail: error.description))
            }
            let cas = try global.loadConfig().tsaCAFiles
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
                    let c = ProofCheck.check(p, receipt: data, digest: i.sha256, caFile: cas[p.notary], label: home.store.objectPath(r))
                    checks.append(Check(check: c.check, ok: c.ok, detail: c.detail))
                }
            }
            for c in try home.catalog.certificates(itemID: i.id) {
                let head = (try? home.store.read(c.sha256))?.prefix(5)
                checks.append(Check(check: "certificate \(c.origin)", ok: head == Data("%PDF-".utf8),
                                    detail: home.store.objectPath(c.sha256)))
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
        let checks = BundleVerifier.verify(target).map { Check(check: $0.check, ok: $0.ok, detail: $0.detail) }
        let ok = !checks.isEmpty && checks.allSatisfy(\.ok)
        if global.json {
            Output.json(Report(target: target, item: nil, sha256: nil, ok: ok, checks: checks))
        } else {
            for c in checks { Output.line("\(c.ok ? "✓" : "✗") \(c.check): \(c.detail)") }
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
