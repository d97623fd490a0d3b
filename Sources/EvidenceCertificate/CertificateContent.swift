import EvidenceCore
import Foundation

/// Everything a certificate shows. Plain values: the pipeline fills it from the
/// catalog (item, proofs, custody head) and hands it to `CertificateRenderer`.
public struct CertificateContent: Sendable, Equatable {
    /// One notarization of the item, as the auditor should read it.
    public struct Proof: Sendable, Equatable {
        /// Who notarized, e.g. "QED", "RFC 3161 TSA".
        public var notary: String
        /// "confirmed", "pending", "failed", …
        public var status: String
        /// When the notary fixed the time (block time, TSA genTime); nil while pending.
        public var time: Date?
        /// Transaction hash or TSA serial number.
        public var reference: String
        /// Network and block height, TSA name, …
        public var detail: String?
        /// Explorer URL, if any (becomes a clickable link).
        public var link: String?

        public init(notary: String, status: String, time: Date? = nil, reference: String,
                    detail: String? = nil, link: String? = nil) {
            self.notary = notary; self.status = status; self.time = time
            self.reference = reference; self.detail = detail; self.link = link
        }
    }

    public var title: String = "Evidence certificate"
    public var fileName: String
    public var size: Int64
    public var sha256: SHA256Digest
    /// The other digests recorded at ingest (a rule's `digests`): ("MD5", hex), ("SHA-1", hex), …
    public var otherDigests: [Label] = []
    public var mediaSummary: String?
    public var dateTaken: Date?
    public var ingestedAt: Date
    public var itemID: Int64
    public var proofs: [Proof]
    /// Shown verbatim, one per line, in a monospace box.
    public var verifyCommands: [String]
    /// Paragraphs after the commands: where the anchors come from, fingerprints to compare.
    public var verifyNotes: [String] = []
    /// Hash of the last custody event, shown small.
    public var custodyHead: String?
    public var generatedAt: Date
    /// Agency, custodian, case, officer, device, location: (printed name, value), in order.
    public var labels: [Label] = []
    /// Times are printed in this zone beside UTC.
    public var timezone: LocalTime = .utc

    /// A picture of the recording (its poster frame), as PNG.
    public var poster: Picture?

    public struct Picture: Sendable, Equatable {
        public var png: Data
        public var width: Int
        public var height: Int
        public init(png: Data, width: Int, height: Int) { self.png = png; self.width = width; self.height = height }
    }

    public struct Label: Sendable, Equatable {
        public var title: String
        public var value: String
        public init(_ title: String, _ value: String) { self.title = title; self.value = value }
    }

    public init(title: String = "Evidence certificate", fileName: String, size: Int64, sha256: SHA256Digest,
                mediaSummary: String? = nil, dateTaken: Date? = nil, ingestedAt: Date, itemID: Int64,
                proofs: [Proof] = [], verifyCommands: [String] = [], custodyHead: String? = nil,
                generatedAt: Date) {
        self.title = title; self.fileName = fileName; self.size = size; self.sha256 = sha256
        self.mediaSummary = mediaSummary; self.dateTaken = dateTaken; self.ingestedAt = ingestedAt
        self.itemID = itemID; self.proofs = proofs; self.verifyCommands = verifyCommands
        self.custodyHead = custodyHead; self.generatedAt = generatedAt
    }
}
