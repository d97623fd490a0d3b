import ArgumentParser
import EvidenceConfig
import EvidenceCore
import EvidencePipeline
import Foundation
import Logging

/// `evidence renew`: RFC 4998 time-stamp renewal now, instead of waiting for `evidence run`'s daily check.
struct RenewCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "renew",
        abstract: "Renew time-stamp proofs before their TSA certificate expires (RFC 4998 §5.2).",
        discussion: Help.reflow("""
        A time-stamp verifies only while the certificate that signed it is valid (a few years);
        evidence is kept for decades. Renewal adds a new archive time-stamp over a proof's newest
        one before that certificate expires: the evidence record then verifies as long as its
        newest time-stamp does, each earlier one checked as of the time-stamp that renewed it
        (`evidence verify --at DATE` shows it). Due proofs of a notary are renewed together, with
        one TSA request over the hash tree of their newest time-stamps. A per-item token (.tsr)
        becomes the first time-stamp of an evidence record (.ers) and is renewed like the rest.
        With no ITEM, the custody anchors of the [custody] anchor_tsa notary are renewed in the
        same request: anchors/<seq>-<hash>.ers beside each token (`log verify --at DATE`).

        Due means: the newest time-stamp's signing certificate expires within the notary's
        `renew_before` (default 180d). `evidence run` renews due proofs after it starts and then
        daily. Renewal is skipped, with a note, when the TSA's current certificate would not
        outlive the proofs' own (ask the TSA operator, or use --force).

        Hash-tree renewal (--hash sha512): before SHA-256 weakens, each record gets a new chain of
        time-stamps over SHA-512(SHA-512(file) ‖ SHA-512(every chain so far)), for all chosen
        proofs with one TSA request (a SHA-512 imprint); later time-stamp renewals of that chain
        use SHA-512 too. The originals are read from the store to hash them. ITEMs or --all.

        Examples:
          evidence renew                 renew every due proof of every rfc3161 notary
          evidence renew --hash sha512 --all   hash-tree renewal of every proof
          evidence renew --hash sha512 12      only item 12's
          evidence renew 12 --force      renew item 12's time-stamp proofs now
          evidence renew --notary tsa --json
        Exit codes: 0 done (renewed or nothing due) · 1 the TSA failed or due proofs were not renewed · 2 usage or config error.
        """)
    )

    @OptionGroup var global: GlobalOptions

    @Argument(help: ArgumentHelp("Items (id, hash prefix or source path); none: every item.", valueName: "item"))
    var items: [String] = []

    @Option(help: ArgumentHelp("Only this rfc3161 notary of the config.", valueName: "name"))
    var notary: String?

    @Flag(help: "Renew the chosen proofs now, whether or not they are due.")
    var force = false

    @Option(help: ArgumentHelp("Hash-tree renewal (RFC 4998 §5.2) to this hash instead: sha512.", valueName: "alg"))
    var hash: String?

    @Flag(help: "With --hash: every item's proofs (instead of naming ITEMs).")
    var all = false

    func validate() throws {
        if let hash, hash != "sha512" { throw ValidationError("--hash: \"\(hash)\" is not supported; hash-tree renewal is to sha512") }
        if hash != nil && items.isEmpty && !all { throw ValidationError("--hash needs ITEMs or --all") }
        if all && !items.isEmpty { throw ValidationError("--all goes without ITEMs") }
        if all && hash == nil { throw ValidationError("--all goes with --hash (time-stamp renewal renews every due proof by default)") }
        if hash != nil && force { throw ValidationError("--force is for time-stamp renewal; --hash renews the chosen proofs whatever their dates") }
    }

    func run() async throws {
        let config = try global.loadConfig()
        let names = config.notaries.values.filter { $0.kind == .rfc3161 }.map(\.name).sorted()
        if let notary, !names.contains(notary) {
            throw CLIError.config("\(config.file ?? "evidence.toml"): no rfc3161 notary \"\(notary)\" (configured: \(names.joined(separator: ", ")))")
        }
        let home = try global.openHome(mustExist: true)
        let logger = Logger(label: "evidence")
        var chosen: Set<Int64>?
        if !items.isEmpty {
            var ids: Set<Int64> = []
            for reference in items { ids.insert(try ItemResolver.resolve(reference, in: home).id) }
            chosen = ids
        }
        let notaries: Notaries
        do { notaries = try Notaries.build(config: config, logger: logger, only: notary.map { [$0] } ?? names) } catch {
            throw CLIError.config(error.description)
        }
        let renewal = RecordRenewal(home: home, notaries: notaries, anchorTSA: config.custody?.anchorTSA,
                                   anchorArchive: config.custody?.anchorArchive, logger: logger)
        var summaries: [RecordRenewal.Summary] = []
        var failed = false
        for name in notary.map({ [$0] }) ?? names {
            do {
                let s = hash != nil ? try await renewal.renewHash(notary: name, items: chosen, algorithm: .sha512)
                                    : try await renewal.renew(notary: name, items: chosen, force: force)
                summaries.append(s)
                if hash != nil, !global.json {
                    Output.line(s.renewed > 0 ? "✓ \(name): hash-tree renewal to SHA-512 of \(s.renewed) of \(s.checked) time-stamp proof(s)"
                                              : "✓ \(name): nothing to hash-renew (\(s.checked) time-stamp proof(s) checked)")
                    for skipped in s.skipped { Output.line("✗ \(name): not renewed: \(skipped)") }
                    if s.due > s.renewed || !s.skipped.isEmpty { failed = true }
                    continue
                }
                if s.due > s.renewed || !s.skipped.isEmpty { failed = true }
                if !global.json {
                    if s.renewed > 0 {
                        Output.line("✓ \(name): renewed \(s.renewed) of \(s.checked) time-stamp proof(s)"
                            + (s.anchors > 0 ? " (\(s.anchors) custody anchor(s))" : "")
                            + (s.renewedUntil.map { "; newest certificate valid until \(Timestamp.string($0))" } ?? ""))
                    } else if s.due == 0 {
                        Output.line("✓ \(name): nothing due (\(s.checked) time-stamp proof(s) checked)")
                    }
                    if let note = s.note { Output.line("✗ \(name): \(note)") }
                    for skipped in s.skipped { Output.line("✗ \(name): not renewed, it does not verify now: \(skipped)") }
                }
            } catch {
                failed = true
                if !global.json { Output.err("\(name): renewal failed: \(error)") }
                var s = RecordRenewal.Summary(notary: name)
                s.note = "failed: \(error)"
                summaries.append(s)
            }
        }
        // Renewed anchor records to [custody] anchor_archive now (the queued copy jobs then find
        // them there); a copy that fails stays queued for `evidence run`.
        if summaries.contains(where: { $0.anchors > 0 && $0.renewed > 0 }), let account = config.custody?.anchorArchive {
            do {
                let archives = try Archives.build(config: config, used: [account], home: home.path, logger: logger)
                if let provider = archives.providers[account] {
                    var copied = 0
                    for anchor in ChainAnchors.list(home) where anchor.recordVersion > 0 {
                        if try await ChainAnchors.copy(anchor, to: provider, scratch: home.store.scratchDirectory) { copied += 1 }
                    }
                    if !global.json { Output.line("✓ renewed custody anchor records at \(account):\(CustodyConfig.archiveFolder)/ (\(copied) copied now)") }
                }
            } catch {
                failed = true
                if !global.json { Output.err("cannot copy the renewed anchor records to \(account): \(error) (queued for evidence run)") }
            }
        }
        if global.json { Output.json(summaries) }
        if failed { throw ExitCode(1) }
    }
}
