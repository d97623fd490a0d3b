import ArgumentParser
import EvidenceCatalog
import EvidenceConfig
import EvidenceCore
import EvidenceHTTP
import EvidenceNotary
import EvidencePipeline
import EvidenceStore
import Foundation
import Logging

struct LogCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "log",
        abstract: "The custody log.",
        subcommands: [Verify.self, Anchor.self, Checkpoints.self]
    )

    struct Verify: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Verify the custody log's hash chain, its head anchor and its time-stamped anchors.",
            discussion: Help.reflow("""
            Each event's hash covers the previous event's hash and the event's canonical bytes;
            an edited, deleted, inserted or reordered event breaks the chain from that point.
            custody.head records the newest event, so a cut-off tail shows too. With [custody]
            in evidence.toml, every anchors/<seq>-<hash>.tsr must be a token of that TSA (checked
            against its ca_file) over its checkpoint, and the checkpoint's root must be the custody
            tree (RFC 9162) of the events #1…#seq as they are; consecutive checkpoints must be
            consistent (RFC 9162 §2.1.4 proofs; `evidence log checkpoints` lists them). Anchors made
            before checkpoints are tokens over the hash event #seq still has. This catches a log cut
            or rewritten together with custody.head. --anchors DIR adds the copies that
            [custody] anchor_archive keeps (the account's evidence-anchors/ folder, fetched), so
            a deleted anchors/ folder hides nothing. An anchor renewed before its TSA certificate
            expired (anchors/<seq>-<hash>.ers, `evidence renew`) verifies through its evidence
            record once the token alone no longer does; --at DATE checks the anchors as of a
            later date. The catalog is checked against the events
            both ways: every item, source, proof, certificate, archive copy and share link row
            must be recorded by its event as it stands, and everything an event records must
            still have its row and its store object (a row deleted or changed by SQL fails).
            Exit codes: 0 intact · 1 broken · 2 usage error.
            """)
        )

        @OptionGroup var global: GlobalOptions

        @Option(name: .customLong("anchors"), help: ArgumentHelp("A folder of anchor copies to check too (repeatable).", valueName: "DIR"))
        var anchorFolders: [String] = []

        @Option(name: .customLong("at"), help: ArgumentHelp(
            "Check the anchors' time-stamps as of this date (ISO 8601): whether they still verify after a TSA certificate expires.",
            valueName: "date"))
        var at: DateArgument?

        func validate() throws {
            for dir in anchorFolders {
                var isDir: ObjCBool = false
                guard FileManager.default.fileExists(atPath: dir, isDirectory: &isDir), isDir.boolValue else {
                    throw ValidationError("--anchors \(dir): no such folder")
                }
            }
        }

        struct Report: Encodable {
            var ok: Bool
            var events: Int
            var headHash: String
            var anchors: Int
            var newestAnchor: ChainAnchors.Anchor?
            var anchorSignaturesChecked: Bool
            var problems: [ChainReport.Problem]
        }

        func run() throws {
            let config = try? global.loadConfig()
            let trust = config.flatMap(LogCommand.anchorTrust)
            if at != nil && trust == nil {
                // Without the [custody] TSA's anchors no signature is checked, so no date could matter.
                throw CLIError.config("--at needs the config's [custody] anchor_tsa with its ca_file or tsa_cert_sha256 (--config FILE)")
            }
            let home = try global.openHome(mustExist: true)
            let (chain, anchors) = try home.verifyCustody(trust: trust, moreAnchors: anchorFolders,
                                                          anchorEvery: at == nil ? config?.custody?.anchorEvery : nil, at: at?.date)
            if global.json {
                Output.json(Report(ok: chain.ok, events: chain.events, headHash: chain.headHash, anchors: anchors.anchors,
                                   newestAnchor: anchors.newest, anchorSignaturesChecked: anchors.signaturesChecked,
                                   problems: chain.problems))
            } else {
                Output.line("\(chain.ok ? "✓" : "✗") custody chain: \(chain.events) events, head \(chain.headHash)")
                Output.line(LogCommand.anchorLine(anchors, events: chain.events))
                for p in chain.problems { Output.line("  ✗ \(p)") }
            }
            if !chain.ok { throw ExitCode(1) }
        }
    }

    struct Anchor: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Time-stamp the custody log's head now, with the TSA named in [custody].",
            discussion: Help.reflow("""
            Writes anchors/<seq>-<hash>.checkpoint in the home, the checkpoint of the custody
            log's Merkle tree through the newest event (C2SP tlog-checkpoint: origin, size, base64
            root; [custody] origin names the log), and anchors/<seq>-<hash>.tsr, an RFC 3161 token
            over the checkpoint's SHA-256, verified before it is kept. `evidence run` does this every
            anchor_every while the log grows, and when it stops; this is for cron or before a
            backup. Nothing is written when the newest anchor already covers the head. With
            [custody] anchor_archive, the newest anchor is then copied to that account's
            evidence-anchors/ folder (unless it is there already).
            Exit codes: 0 anchored or nothing new · 1 the TSA or the copy failed · 2 no [custody] in the config.
            """)
        )

        @OptionGroup var global: GlobalOptions

        struct Result: Encodable {
            var anchored: Bool
            var anchor: ChainAnchors.Anchor?
            /// `ACCOUNT:evidence-anchors/NAME` when `anchor_archive` is set.
            var copy: String?
            var copied: Bool?
        }

        func run() async throws {
            let config = try global.loadConfig()
            guard let custody = config.custody, let notary = config.notaries[custody.anchorTSA] else {
                throw CLIError.config("\(config.file ?? "evidence.toml"): no [custody] table: add anchor_tsa = \"NAME\" naming an rfc3161 notary")
            }
            let home = try global.openHome(mustExist: true)
            let logger = Logger(label: "evidence")
            let tsa = Notaries.tsaClient(notary, logger: logger)
            let archives: Archives?
            do {
                archives = try custody.anchorArchive.map {
                    try Archives.build(config: config, used: [$0], home: home.path, logger: logger)
                }
            } catch let error as ConfigError {
                throw CLIError.config(error.description)
            }
            do {
                let made = try await ChainAnchors.anchor(home, tsa: tsa, origin: custody.origin)
                var copy: String?
                var copied: Bool?
                if let account = custody.anchorArchive, let provider = archives?.providers[account], let newest = ChainAnchors.newest(home) {
                    copy = "\(account):\(CustodyConfig.archiveFolder)/\(newest.name)"
                    do { copied = try await ChainAnchors.copy(newest, to: provider, scratch: home.store.scratchDirectory) } catch {
                        if !global.json { Output.line(made.map { "✓ anchored custody event #\($0.seq)" } ?? "✓ nothing new to anchor") }
                        Output.err("cannot copy \(newest.name) to \(copy!): \(error.message)")
                        throw ExitCode(1)
                    }
                }
                if global.json {
                    Output.json(Result(anchored: made != nil, anchor: made ?? ChainAnchors.newest(home), copy: copy, copied: copied))
                } else if let made {
                    Output.line("✓ anchored custody event #\(made.seq) (\(made.hash.prefix(16))…) at "
                        + "\(made.genTime.map { Timestamp.string($0) } ?? "?") by \(notary.name): \(made.file)")
                } else {
                    Output.line("✓ nothing new: the newest anchor already covers the head")
                }
                if let copy, let copied, !global.json {
                    Output.line(copied ? "✓ copied to \(copy)" : "✓ already at \(copy)")
                }
            } catch let exit as ExitCode {
                throw exit
            } catch {
                Output.err("\(error)")
                throw ExitCode(1)
            }
        }
    }

    struct Checkpoints: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List the anchored checkpoints of the custody tree, each with its consistency proof from the one before.",
            discussion: Help.reflow("""
            The custody events are the leaves of a Merkle tree (RFC 9162 §2.1: leaf = SHA-256(0x00 ‖
            the event's 32-byte hash), node = SHA-256(0x01 ‖ left ‖ right)). Each anchor made since
            checkpoints exist time-stamps a checkpoint of that tree (anchors/<seq>-<hash>.checkpoint,
            a C2SP tlog-checkpoint: origin, size, base64 root); its token is over the checkpoint's
            SHA-256. This lists them oldest first, each with the RFC 9162 §2.1.4 consistency proof
            from the previous checkpoint, computed from the log as it is now: anyone holding two
            checkpoints (the anchor_archive copies, say) but not the events can check with it that
            the later tree extends the earlier one (the log was only appended to). `evidence log
            verify` recomputes every root from the events, which implies those proofs, and checks
            them as such a holder would.
            Exit codes: 0 listed · 1 a checkpoint no longer matches the log · 2 usage error.
            """)
        )

        @OptionGroup var global: GlobalOptions

        struct Entry: Encodable {
            var anchor: String
            var origin: String
            var size: Int
            /// Base64, as in the checkpoint.
            var root: String
            var checkpoint: String
            /// From the previous checkpoint (its size in `from`), base64 hashes; nil for the first.
            var from: Int?
            var consistency: [String]?
        }

        func run() throws {
            let home = try global.openHome(mustExist: true)
            var found: [(ChainAnchors.Anchor, Checkpoint)] = []
            for a in ChainAnchors.list(home) {
                guard let bytes = FileManager.default.contents(atPath: a.checkpointFile) else { continue }
                do { found.append((a, try Checkpoint.parse(bytes))) } catch {
                    Output.err("\(a.checkpointFile): \(error)")
                    throw ExitCode(1)
                }
            }
            let largest = found.map(\.1.size).max() ?? 0
            let hashes = try home.catalog.eventHashes(through: Int64(largest))
            let hasher = MerkleHasher()
            var tree = MerkleTree()
            for h in hashes { tree.append(eventHash: ChainAnchors.leafInput(h.hash), hasher: hasher) }
            var entries: [Entry] = []
            var mismatched: [String] = []
            var previous: Checkpoint?
            for (a, c) in found {
                if c.size > tree.count || tree.root(size: c.size, hasher: hasher) != c.root { mismatched.append(a.name) }
                var e = Entry(anchor: a.name, origin: c.origin, size: c.size, root: Data(c.root).base64EncodedString(), checkpoint: c.text)
                if let p = previous, p.size > 0, p.size <= c.size, c.size <= tree.count {
                    e.from = p.size
                    e.consistency = tree.consistencyProof(old: p.size, new: c.size, hasher: hasher).map { Data($0).base64EncodedString() }
                }
                entries.append(e)
                previous = c
            }
            if global.json {
                Output.json(entries)
            } else if entries.isEmpty {
                Output.line("no anchored checkpoints yet (`evidence log anchor` makes one)")
            } else {
                for e in entries {
                    Output.line("\(e.anchor): \(TerminalText.escape(e.origin)), \(e.size) events, root \(e.root)"
                                + (e.from.map { " (consistent with \($0): \(e.consistency?.count ?? 0) hashes)" } ?? ""))
                }
            }
            for name in mismatched { Output.err("✗ \(name): its checkpoint is not the custody tree as the log now has it: run `evidence log verify`") }
            if !mismatched.isEmpty { throw ExitCode(1) }
        }
    }

    /// What anchor tokens must verify against: the `[custody]` TSA's `ca_file` / `tsa_cert_sha256`.
    static func anchorTrust(_ config: EvidenceConfig) -> TSATrust? {
        config.custody.flatMap { config.notaries[$0.anchorTSA]?.tsaTrust }
    }

    static func anchorLine(_ a: ChainAnchors.Check, events: Int) -> String {
        let (mark, text) = anchorSummary(a, events: events)
        return mark + " " + text
    }

    /// The anchors in one phrase, and its mark (✓, ! none at all, ✗).
    static func anchorSummary(_ a: ChainAnchors.Check, events: Int) -> (mark: String, text: String) {
        guard let newest = a.newest else {
            return a.anchors == 0 ? ("!", "no time-stamped anchors (add [custody] anchor_tsa to evidence.toml)") : ("✗", "no anchor verifies")
        }
        let when = newest.genTime.map { Timestamp.string($0) } ?? "?"
        let behind = events > Int(newest.seq) ? "; \(events - Int(newest.seq)) newer event(s) not anchored yet" : ""
        let sig = a.signaturesChecked ? "signatures checked" : "signatures NOT checked (no ca_file for the [custody] TSA)"
        return (a.problems.isEmpty ? "✓" : "✗", "anchors: \(a.anchors), newest #\(newest.seq) time-stamped \(when), \(sig)\(behind)")
    }
}

/// Before a bundle or a disclosure is written (with `[custody]`): the custody head, which now
/// includes the access event of this very export, is time-stamped, so that the bundles' checkpoint
/// covers every event they carry. A TSA that cannot be reached does not stop the export: its
/// bundles then prove the events up to the newest earlier anchor, and say which are not covered.
enum CustodyFirst {
    static func anchor(config: EvidenceConfig, home: EvidenceHome, global: GlobalOptions) async {
        guard let custody = config.custody, let notary = config.notaries[custody.anchorTSA] else { return }
        let tsa = Notaries.tsaClient(notary, logger: Logger(label: "evidence"))
        do {
            // Copied like every anchor `evidence run` makes: the bundle's checkpoint must not be
            // the one anchor missing from anchor_archive.
            if let made = try await ChainAnchors.anchor(home, tsa: tsa, origin: custody.origin), let account = custody.anchorArchive {
                try? ChainAnchors.enqueueCopy(made.name, account: account, catalog: home.catalog)
            }
        } catch {
            Output.err("warning: the custody log's newest events are not time-stamped (\(error)); the export proves those "
                       + "up to the newest earlier anchor")
        }
    }
}
