/// The `[custody]` table: time-stamped anchors of the custody chain.
///
/// ```toml
/// [custody]
/// anchor_tsa = "tsa"        # an rfc3161 notary of [notaries]: it time-stamps the chain head
/// anchor_every = "1h"       # how often `evidence run` anchors a moved head (and at shutdown)
/// ```
///
/// `custody.head` sits on the same disk as the catalog, so whoever can rewrite the catalog can
/// rewrite it too. A TSA's signed token over the head's hash cannot be made after the fact.
public struct CustodyConfig: Sendable, Equatable {
    public static let allowedKeys: Set<String> = ["anchor_tsa", "anchor_every"]
    /// The rfc3161 notary whose TSA signs the anchors.
    public var anchorTSA: String
    /// Seconds between anchors while the head moves.
    public var anchorEvery: Double

    public init(anchorTSA: String, anchorEvery: Double = 3600) {
        self.anchorTSA = anchorTSA
        self.anchorEvery = anchorEvery
    }
}

extension ConfigFileParser {
    static func custody(_ r: TOMLReader, _ t: TOMLTableRef, notaries: [String: NotaryConfig]) throws(ConfigError) -> CustodyConfig {
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
        return c
    }
}
