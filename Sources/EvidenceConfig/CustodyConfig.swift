import EvidenceCore

/// The `[custody]` table: time-stamped anchors of the custody chain.
///
/// ```toml
/// [custody]
/// anchor_tsa = "tsa"        # an rfc3161 notary of [notaries]: it time-stamps the chain head
/// anchor_every = "1h"       # how often `evidence run` anchors a moved head (and at shutdown)
/// anchor_archive = "vault"  # optional: an archive account each new anchor is copied to
/// origin = "example.org/bodycam-custody"  # optional: the log's name in its checkpoints
/// ```
///
/// `custody.head` sits on the same disk as the catalog, so whoever can rewrite the catalog can
/// rewrite it too. A TSA's signed token over the head's hash cannot be made after the fact.
public struct CustodyConfig: Sendable, Equatable {
    public static let allowedKeys: Set<String> = ["anchor_tsa", "anchor_every", "anchor_archive", "origin"]
    /// The folder of the `anchor_archive` account the anchors are copied into.
    public static let archiveFolder = "evidence-anchors"
    /// The rfc3161 notary whose TSA signs the anchors.
    public var anchorTSA: String
    /// Seconds between anchors while the head moves.
    public var anchorEvery: Double
    /// The archive account every new anchor is copied to (into `evidence-anchors/`), so that
    /// deleting `anchors/` on this machine does not delete the proof; nil: anchors stay local.
    public var anchorArchive: String?
    /// The first line of every checkpoint an anchor time-stamps (C2SP tlog-checkpoint's origin: a
    /// schema-less URL naming this log); nil: `evidence-custody/` and the first event's hash.
    public var origin: String?

    public init(anchorTSA: String, anchorEvery: Double = 3600, anchorArchive: String? = nil, origin: String? = nil) {
        self.anchorTSA = anchorTSA
        self.anchorEvery = anchorEvery
        self.anchorArchive = anchorArchive
        self.origin = origin
    }
}

extension ConfigFileParser {
    static func custody(_ r: TOMLReader, _ t: TOMLTableRef, notaries: [String: NotaryConfig],
                        archives: [String: ArchiveConfig]) throws(ConfigError) -> CustodyConfig {
        try r.checkKeys(t, allowed: CustodyConfig.allowedKeys)
        let tsa = try r.require(r.string(t, "anchor_tsa"), t, "anchor_tsa", hint: " (the name of an rfc3161 notary)")
        guard let notary = notaries[tsa] else {
            throw r.error(t.path + ["anchor_tsa"], "no notary \"\(tsa)\" in [notaries]"
                + (notaries.isEmpty ? "" : " (have: \(notaries.keys.sorted().joined(separator: ", ")))"))
        }
        guard notary.kind == .rfc3161 else {
            throw r.error(t.path + ["anchor_tsa"], "notary \"\(tsa)\" is kind \(notary.kind.rawValue); anchors need an rfc3161 TSA")
        }
        var c = CustodyConfig(anchorTSA: tsa)
        c.anchorEvery = try r.duration(t, "anchor_every") ?? c.anchorEvery
        if let account = try r.string(t, "anchor_archive") {
            guard archives[account] != nil else {
                throw r.error(t.path + ["anchor_archive"], "no account \"\(account)\" in [archives]"
                    + (archives.isEmpty ? "" : " (have: \(archives.keys.sorted().joined(separator: ", ")))"))
            }
            c.anchorArchive = account
        }
        if let origin = try r.string(t, "origin") {
            // As the checkpoint reader checks it (`Checkpoint.validOrigin`): no whitespace, no C0 or C1 control.
            guard !origin.isEmpty, origin.utf8.count <= 255,
                  origin.unicodeScalars.allSatisfy({ $0.value > 0x20 && !(0x7F...0x9F).contains($0.value) && !$0.properties.isWhitespace }) else {
                throw r.error(t.path + ["origin"], "\"\(TerminalText.escape(String(origin.prefix(80))))\" cannot head a checkpoint: one word of printable characters, "
                              + "no spaces, at most 255 bytes (e.g. \"example.org/bodycam-custody\")")
            }
            c.origin = origin
        }
        return c
    }
}
