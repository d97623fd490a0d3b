import ArgumentParser
import EvidenceCatalog
import EvidenceConfig
import EvidenceCore
import EvidenceNotary
import EvidencePipeline
import EvidenceStore
import Foundation
import Logging

struct VerifyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify",
        abstract: "Check a bundle folder offline, or re-hash a file or an item against the catalog and store.",
        discussion: Help.reflow("""
        DIR (a disclosure package from `evidence disclose`): checks its SHA256SUMS against every
        file below it, its manifest, VERIFY.md and custody.csv against what the bundles hold,
        the case's custody events (each the same event its item's bundle holds), that nothing but
        what the writer writes is there, and then every item's bundle as below; verified only
        when every item is. index.pdf is a summary and is not checked; --online applies to
        bundles only.

        DIR (a bundle from `evidence bundle`): checks offline, without the catalog, every file
        against SHA256SUMS (and that nothing unlisted was added), the manifest, the original's
        hash, that every proof the manifest lists is confirmed and present, each RFC 3161 token
        (imprint, signature and chain), each QED report (hash, confirmed, transaction: the
        bundle's own copy), the custody events' hashes and that they record the item's hash and
        name and each proof's receipt, and the certificates.

        Trust anchors come only from outside the bundle: --trust FILE (the TSA's CA certificate,
        obtained from the TSA; repeatable), and the rfc3161 notaries (`ca_file`,
        `tsa_cert_sha256`) of a config named with --config on purpose: for a bundle, neither
        $EVIDENCE_CONFIG nor ./evidence.toml is read, so the host's config (which its service
        user may be able to edit) never widens what --trust names. A CA file inside the bundle is
        never trusted: its SHA-256 fingerprint is printed for comparison with the one the TSA
        publishes.

        "verified" means proven: at least one RFC 3161 time-stamp over the original verified
        against an anchor from outside the bundle, and every other check passed. The earliest
        such time-stamp is the proven time, printed first; custody events dated before it are
        marked as the catalog's claim only. With no time-stamp verified (none in the bundle, no
        anchor given, or QED reports only, which corroborate but never prove alone) the verdict
        is NOT PROVEN. The manifest and SHA256SUMS must list exactly the same files (names
        compared as bytes, in Unicode NFC, each once), no JSON document may repeat a key, and
        VERIFY.md must be the text the manifest produces, byte for byte.

        --online: also asks each QED notary of the config for its report (slug, hash, status,
        transaction) instead of trusting the bundle's or the store's copy.

        FILE: hashes the file and looks its SHA-256 up in the catalog; then re-hashes the store
        object of that item.
        ITEM (id, hash prefix or source path): re-hashes the store object and compares it with
        the catalog's hash and size; checks each proof's receipt (RFC 3161 token: imprint, and
        signature and chain with the TSA's `ca_file` or --trust; QED report: hash, confirmed, transaction)
        and each certificate; reports whether each recorded source still matches.

        Each check is printed on its own line with ✓ or ✗; text from the bundle or the catalog is
        printed with control characters escaped.
        Exit codes: 0 verified (proven) · 1 NOT PROVEN or a check failed · 2 usage error.
        """)
    )

    @OptionGroup var global: GlobalOptions

    @Argument(help: ArgumentHelp("A file, or an item id / hash prefix / source path, or a bundle folder.", valueName: "file-or-item"))
    var target: String

    @Option(name: .customLong("trust"), help: ArgumentHelp(
        "A PEM file of CA certificates to trust for RFC 3161 tokens (the TSA's CA, obtained from the TSA). Repeatable.",
        valueName: "file"))
    var trust: [String] = []

    @Flag(name: .customLong("online"), help: "Also look each QED report up at the notary (needs the config's QED key).")
    var online = false

    @Option(name: .customLong("at"), help: ArgumentHelp(
        "Verify the time-stamps as of this date (ISO 8601, e.g. 2031-01-01): whether they will still verify after "
            + "a TSA certificate expires. A renewed evidence record verifies as long as its newest time-stamp does.",
        valueName: "date"))
    var at: DateArgument?

    func validate() throws {
        for file in trust {
            do { _ = try TSACertificates.read(pemFile: file) } catch {
                throw ValidationError("--trust \(file): \(error.message)")
            }
        }
    }

    /// --trust, plus the rfc3161 anchors of a config given with --config: everything a bundle
    /// is checked against, none of it from the bundle, none of it from a config found by default.
    func bundleAnchors() throws -> (TSATrust, EvidenceConfig?) {
        let named = TSATrust(caFiles: trust.map { URL(fileURLWithPath: $0).standardizedFileURL.path })
        guard global.config != nil else { return (named, nil) }
        let config = try global.loadConfig()
        return (config.tsaTrust.merging(named), config)
    }

    typealias Check = BundleVerifier.Check

    struct Report: Encodable {
        var target: String
        var item: Int64?
        var sha256: String?
        /// verified | not-proven | failed
        var verdict: BundleVerifier.Verdict
        var ok: Bool
        /// The earliest verified time-stamp over the content, and which one.
        var provenAt: Date?
        var provenBy: String?
        var checks: [Check]
        var notes: [String]? = nil
        /// Custody events dated before the proven time: the catalog's claim only.
        var uncoveredEvents: [String]? = nil
        var trustAnchors: [String]? = nil
    }

    func run() async throws {
        if DisclosureVerifier.isPackage(target) {
            return try verifyPackage()
        }
        if BundleVerifier.isBundle(target) {
            return try await verifyBundle()
        }
        let home = try global.openHome(mustExist: true)
        var checks: [Check] = []
        var item: Item?
        var provenAt: Date?
        var provenBy: String?
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
                    if p.kind == .opentimestamps {
                        let blocks = await BlockHeaders.fetch(for: [data], config: config, logger: Logger(label: "evidence"))
                        let (c, attested) = ProofCheck.otsCheck(p, receipt: data, digest: i.sha256, label: home.store.location(of: r), blocks: blocks)
                        checks.append(c)
                        let latest = attested.map { $0.time.addingTimeInterval(OTSClient.blockTimeMargin) }
                        if let attested, let latest, provenAt.map({ latest < $0 }) ?? true {
                            provenAt = latest
                            provenBy = "\(ProofCheck.name(p)) (Bitcoin block \(attested.height))"
                        }
                        continue
                    }
                    // This notary's own anchors, plus --trust.
                    let anchors = (config.notaries[p.notary]?.tsaTrust ?? TSATrust())
                        .merging(TSATrust(caFiles: trust.map { URL(fileURLWithPath: $0).standardizedFileURL.path }))
                    // A record hash-renewed to SHA-512 is checked with the stored object's SHA-512 too.
                    let sha512 = p.kind == .rfc4998 && EvidenceRecordRenewal.hasSHA512Chain(data)
                        ? try? ItemDigests.sha512(of: i, store: home.store) : nil
                    let c = ProofCheck.check(p, receipt: data, digest: i.sha256, trust: anchors, label: home.store.location(of: r), at: at?.date,
                                             sha512: sha512)
                    checks.append(c)
                    if p.kind.isTimestamp, c.ok, let token = try? ProofCheck.token(p, receipt: data, digest: i.sha256, trust: anchors, at: at?.date,
                                                                                    sha512: sha512),
                       provenAt.map({ token.genTime < $0 }) ?? true {
                        provenAt = token.genTime
                        provenBy = "\(ProofCheck.name(p)) (serial \(token.serial))"
                    }
                    if p.kind == .qed, online { checks.append(await onlineCheck(p, digest: i.sha256, config: config)) }
                }
            }
            // What the custody log says was proven must still be in the catalog: a proof row
            // deleted by hand would otherwise pass unnoticed and vanish from new bundles.
            let missing = RecordedProofs.missing(events: try home.catalog.events(itemID: i.id), proofs: try home.catalog.proofs(itemID: i.id))
            for m in missing { checks.append(Check(check: "proof recorded in custody", ok: false, detail: m)) }
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

        let failed = checks.contains { !$0.ok && $0.unproven != true }
        let verdict: BundleVerifier.Verdict = failed ? .failed : (provenAt != nil && checks.allSatisfy(\.ok) ? .verified : .notProven)
        var notes: [String] = []
        if item != nil, provenAt == nil {
            notes.append("no RFC 3161 time-stamp over this content verified against a trust anchor: "
                         + "QED reports corroborate, they do not prove alone; \(BundleVerifier.noAnchorAdvice)")
        }
        if global.json {
            Output.json(Report(target: target, item: item?.id, sha256: item?.sha256.hex, verdict: verdict, ok: verdict == .verified,
                               provenAt: provenAt, provenBy: provenBy, checks: checks, notes: notes))
        } else {
            for c in checks { Output.line(Self.line(c)) }
            for n in notes { Output.line("• \(TerminalText.escape(n))") }
            switch verdict {
            case .verified:
                Output.line("verified: the content existed no later than \(Output.date(provenAt)), proven by \(TerminalText.escape(provenBy ?? "-"))")
            case .notProven:
                Output.line("NOT PROVEN: nothing contradicts the item, but no time-stamp over its content verified")
            case .failed:
                Output.line("VERIFICATION FAILED")
            }
        }
        if verdict != .verified { throw ExitCode(1) }
    }

    /// One check, its detail escaped: bundle and catalog text cannot start lines or move the cursor.
    static func line(_ c: Check) -> String {
        "\(c.ok ? "✓" : (c.unproven == true ? "?" : "✗")) \(TerminalText.escape(c.check)): \(TerminalText.escape(c.detail))"
    }

    /// A QED report looked up at the notary itself, not in a copy the operator kept.
    private func onlineCheck(_ p: Proof, digest: SHA256Digest, config: EvidenceConfig?) async -> Check {
        let name = "QED report \(p.notary) at the notary"
        guard let config else {
            return Check(check: name, ok: false, detail: "--online needs --config naming the [notaries.\(p.notary)] table and its key")
        }
        guard let slug = p.remoteID else { return Check(check: name, ok: false, detail: "no report slug recorded") }
        let logger = Logger(label: "evidence")
        let notaries: Notaries
        do { notaries = try Notaries.build(config: config, logger: logger) } catch {
            return Check(check: name, ok: false, detail: error.description)
        }
        guard case .qed(let client)? = notaries.entries[p.notary]?.client else {
            return Check(check: name, ok: false, detail: "the config has no QED notary named \(p.notary)")
        }
        do {
            let r = try await client.report(slug: slug)
            let ok = r.hash == digest.hex && r.status == .confirmed && r.txHash != nil && r.txHash == p.txHash
            return Check(check: name, ok: ok,
                         detail: "report \(slug): hash \(r.hash.prefix(16))…, \(r.status.rawValue), tx \(r.txHash ?? "-")"
                            + (ok ? " (the notary's own answer; it corroborates, it does not prove a time alone)" : " (recorded tx \(p.txHash ?? "-"))"))
        } catch {
            return Check(check: name, ok: false, detail: "report \(slug): \(error)")
        }
    }

    private func verifyBundle() async throws {
        let (anchors, config) = try bundleAnchors()
        // Block headers for the bundle's OpenTimestamps proofs, from the config's header source.
        var blocks: BlockHeaders?
        if let config { blocks = await BlockHeaders.fetch(forBundle: target, config: config, logger: Logger(label: "evidence")) }
        var report = BundleVerifier.verify(target, trust: anchors, at: at?.date, blocks: blocks)
        if online, let data = FileManager.default.contents(atPath: target + "/manifest.json"),
           (try? StrictJSON.check(data)) != nil,
           let m = try? CanonicalJSON.decoder().decode(BundleManifest.self, from: data), let digest = SHA256Digest(hex: m.item.sha256) {
            for p in m.proofs where p.kind == .qed && p.state == .confirmed {
                report.checks.append(await onlineCheck(p, digest: digest, config: config))
            }
        }
        let verdict = report.verdict
        if global.json {
            Output.json(Report(target: target, item: nil, sha256: nil, verdict: verdict, ok: verdict == .verified,
                               provenAt: report.provenAt, provenBy: report.provenBy, checks: report.checks, notes: report.notes,
                               uncoveredEvents: report.uncoveredEvents, trustAnchors: anchors.caFiles + anchors.pinnedSigners))
        } else {
            // The verdict first: what is proven, and since when.
            switch verdict {
            case .verified:
                Output.line("PROVEN: the original existed no later than \(Output.date(report.provenAt)) "
                            + "(\(report.provenBy ?? "-"), verified against \(anchors.summary))")
            case .notProven:
                Output.line("NOT PROVEN: no time-stamp over the original verified against an anchor from outside the bundle")
            case .failed:
                Output.line("FAILED: the bundle does not hold together; see the ✗ lines")
            }
            for c in report.checks { Output.line(Self.line(c)) }
            for n in report.notes { Output.line("• \(TerminalText.escape(n))") }
            if !report.uncoveredEvents.isEmpty {
                Output.line("Custody events not covered by a proof (dated before \(report.provenAt.map(Output.date) ?? "any verified time-stamp"): only the catalog's claim):")
                for e in report.uncoveredEvents { Output.line("  \(e)") }
            }
            if anchors.isEmpty {
                Output.line("no trust anchor was given: \(BundleVerifier.noAnchorAdvice)")
            }
            switch verdict {
            case .verified: Output.line("bundle verified")
            case .notProven: Output.line("BUNDLE NOT PROVEN: \(BundleVerifier.noAnchorAdvice)")
            case .failed: Output.line("BUNDLE VERIFICATION FAILED")
            }
        }
        if verdict != .verified { throw ExitCode(1) }
    }

    /// A disclosure package: its own checks, then each item's bundle, then the verdict.
    private func verifyPackage() throws {
        let (anchors, _) = try bundleAnchors()
        let report = DisclosureVerifier.verify(target, trust: anchors, at: at?.date)
        let verdict = report.verdict
        if global.json {
            struct ItemAnswer: Encodable {
                var item: Int64; var folder: String; var verdict: BundleVerifier.Verdict; var provenAt: Date?; var provenBy: String?
                var checks: [Check]; var notes: [String]; var uncoveredEvents: [String]
            }
            struct Answer: Encodable {
                var target: String; var verdict: BundleVerifier.Verdict; var ok: Bool; var checks: [Check]; var notes: [String]
                var items: [ItemAnswer]; var trustAnchors: [String]
            }
            Output.json(Answer(target: target, verdict: verdict, ok: verdict == .verified, checks: report.checks, notes: report.notes,
                               items: report.items.map { ItemAnswer(item: $0.id, folder: TerminalText.escape($0.folder), verdict: $0.report.verdict,
                                                                    provenAt: $0.report.provenAt, provenBy: $0.report.provenBy, checks: $0.report.checks,
                                                                    notes: $0.report.notes, uncoveredEvents: $0.report.uncoveredEvents) },
                               trustAnchors: anchors.caFiles + anchors.pinnedSigners))
        } else {
            for c in report.checks { Output.line(Self.line(c)) }
            for item in report.items {
                let r = item.report
                switch r.verdict {
                case .verified:
                    Output.line("✓ item #\(item.id) (\(TerminalText.escape(item.folder))): proven to exist no later than \(Output.date(r.provenAt)) by \(TerminalText.escape(r.provenBy ?? "-"))")
                case .notProven:
                    Output.line("? item #\(item.id) (\(TerminalText.escape(item.folder))): NOT PROVEN")
                case .failed:
                    Output.line("✗ item #\(item.id) (\(TerminalText.escape(item.folder))): its bundle does not hold together")
                }
                for c in r.checks where !c.ok || verdict != .verified { Output.line("    " + Self.line(c)) }
                for n in r.notes { Output.line("    • \(TerminalText.escape(n))") }
            }
            for n in report.notes { Output.line("• \(TerminalText.escape(n))") }
            if anchors.isEmpty { Output.line("no trust anchor was given: \(BundleVerifier.noAnchorAdvice)") }
            let proven = report.items.filter { $0.report.verdict == .verified }.count
            switch verdict {
            case .verified: Output.line("package verified: \(proven) of \(report.items.count) item(s) proven, every file intact")
            case .notProven: Output.line("PACKAGE NOT PROVEN: \(proven) of \(report.items.count) item(s) proven")
            case .failed: Output.line("PACKAGE VERIFICATION FAILED")
            }
        }
        if verdict != .verified { throw ExitCode(1) }
    }

    private func hashOrFail(_ path: String) throws -> FileHasher.Result {
        do { return try FileHasher.hash(path: path) } catch {
            Output.err(error.description)
            throw ExitCode(1)
        }
    }
}
