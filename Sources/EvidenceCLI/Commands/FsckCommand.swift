import ArgumentParser
import EvidenceCatalog
import EvidenceCore
import EvidencePipeline
import EvidenceStore
import Foundation

struct FsckCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "fsck",
        abstract: "Check the whole home: store objects, catalog ↔ store, custody chain.",
        discussion: Help.reflow("""
        Re-reads every store object and checks that it hashes to its name and is read-only;
        checks that every catalogued item has its object with the right size; verifies the
        custody log's hash chain and its head anchor; and checks the catalog against the custody
        events both ways: every item, source, proof, certificate, archived file and share link
        has the event that recorded it, and everything an event records still has its row as
        recorded and its store object (a row deleted or changed by SQL is a problem).
        Objects present in the store but not in the catalog and named by no custody event (left
        by a crash between storing and recording) are listed as orphans: re-ingesting their
        source records them. An object that an event records (a proof receipt, a certificate, an
        original) but no row refers to is a problem, not an orphan.

        Exit codes: 0 clean · 1 problems found · 2 usage error.
        """)
    )

    @OptionGroup var global: GlobalOptions

    @Flag(name: .long, help: "Skip re-hashing object contents (names, sizes, modes and the chain only).")
    var quick = false

    struct Report: Encodable {
        var objects: Int
        var bytes: Int64
        var items: Int
        var custodyEvents: Int
        var problems: [String]
        var orphans: [String]
        /// Receipts an older custody event records and a newer one replaced (kept on purpose).
        var supersededReceipts = 0
        var ok: Bool
    }

    func run() throws {
        let home = try global.openHome(mustExist: true)
        let showProgress = !global.quiet && !global.json && isatty(2) == 1
        let storeReport = home.store.check(rehash: !quick) { done, total in
            if showProgress, done % 16 == 0 || done == total {
                Output.writeError(Data("\r\u{1B}[Kchecking objects \(done)/\(total)".utf8))
                Progress.drawn = true
            }
        }
        Progress.clearLine()
        var problems = storeReport.problems.map(\.description)
        let items = try home.catalog.allItems()
        var referenced = Set<SHA256Digest>()
        for item in items {
            referenced.insert(item.sha256)
            let found: Int64?
            do { found = try home.store.objectSize(item.sha256) } catch {
                problems.append("item #\(item.id) \(item.sha256.hex): store object not checked: \(error)")
                continue
            }
            guard let size = found else {
                problems.append("item #\(item.id) \(item.sha256.hex): store object missing (\(home.store.location(of: item.sha256)))")
                continue
            }
            if size != item.size {
                problems.append("item #\(item.id) \(item.sha256.hex): object is \(size) bytes, catalog says \(item.size)")
            }
        }
        // Proof receipts, certificates and archive manifests are store objects of their items too.
        for proof in try home.catalog.allProofs() { if let r = proof.receipt { referenced.insert(r) } }
        for item in items {
            for cert in try home.catalog.certificates(itemID: item.id) { referenced.insert(cert.sha256) }
            for file in try home.catalog.archivedFiles(itemID: item.id) { referenced.insert(file.sha256) }
        }
        // Poster frames are recorded by their custody event alone.
        for e in try home.catalog.events(kinds: [.poster]) {
            if let hex = CustodyCrossCheck.details(e)["sha256"], let d = SHA256Digest(hex: hex) { referenced.insert(d) }
        }
        let config = try? global.loadConfig()
        let (chain, _) = try home.verifyCustody(trust: config.flatMap(LogCommand.anchorTrust), anchorEvery: config?.custody?.anchorEvery)
        problems += chain.problems.map(\.description)
        // An object no row refers to is a crash's leftover only when no event records it either:
        // a receipt, certificate or original that an event records was left by a deleted row.
        let recorded = Dictionary(CustodyCrossCheck.expectedObjects(rows: try home.custodyRows(), events: try home.catalog.allEvents())
            .filter(\.recordedByEvent).map { ($0.digest, $0) }, uniquingKeysWith: { a, _ in a })
        // A receipt an older event records and a newer one replaced (a renewed evidence record, an
        // OpenTimestamps proof upgraded from pending) is kept on purpose: the history, not a leftover.
        var superseded = Set<SHA256Digest>()
        for e in try home.catalog.allEvents() where e.kind.hasPrefix("notary-") {
            if let hex = CustodyCrossCheck.details(e)["receipt"], let d = SHA256Digest(hex: hex) { superseded.insert(d) }
        }
        var orphans: [String] = []
        var kept = 0
        for digest in storeReport.digests.subtracting(referenced).sorted() {
            if recorded[digest] == nil, superseded.contains(digest) { kept += 1; continue }
            if let r = recorded[digest] {
                problems.append("custody event #\(r.seq): records \(home.store.location(of: digest)), \(r.what), but no catalog row "
                                + "refers to that object: the row was deleted")
            } else {
                orphans.append(home.store.location(of: digest))
            }
        }

        let ok = problems.isEmpty
        if global.json {
            Output.json(Report(objects: storeReport.objects, bytes: storeReport.bytes, items: items.count,
                               custodyEvents: chain.events, problems: problems, orphans: orphans, supersededReceipts: kept, ok: ok))
        } else {
            Output.line("\(ok ? "✓" : "✗") store: \(storeReport.objects) objects, \(Output.bytes(storeReport.bytes))" + (quick ? " (not re-hashed: --quick)" : " re-hashed"))
            Output.line("✓ catalog: \(items.count) items")
            Output.line("\(chain.ok ? "✓" : "✗") custody chain: \(chain.events) events, head \(chain.headHash.prefix(16))…")
            for p in problems { Output.line("  ✗ \(p)") }
            for o in orphans { Output.line("  ! orphan object (not in catalog): \(o)") }
            if kept > 0 { Output.line("  · \(kept) superseded receipt(s) kept (renewed or upgraded proofs; their events record them)") }
            Output.line(ok ? "clean" : "\(problems.count) problem(s) found")
        }
        if !ok { throw ExitCode(1) }
    }
}
