/// What a time-stamp token's signature is checked against: CA certificate files and pinned
/// SHA-256 fingerprints of TSA signing certificates. Both come from outside the evidence being
/// checked (the operator's config, the auditor's `--trust`), never from a bundle: a token that
/// chains to anything else, or is signed by an unpinned certificate, does not verify.
public struct TSATrust: Sendable, Equatable {
    /// PEM files whose certificates are trust anchors (`ca_file`, `--trust`).
    public var caFiles: [String]
    /// Fingerprints in `TSACertificates.normalizedFingerprint` form (`AB:CD:…`): a token whose
    /// signer certificate has one of them verifies without its issuer (`tsa_cert_sha256`).
    public var pinnedSigners: [String]

    public init(caFiles: [String] = [], pinnedSigners: [String] = []) {
        self.caFiles = caFiles
        self.pinnedSigners = pinnedSigners.map { TSACertificates.normalizedFingerprint($0) ?? $0 }
    }

    /// No anchor at all: nothing can be verified.
    public var isEmpty: Bool { caFiles.isEmpty && pinnedSigners.isEmpty }

    /// Both sets of anchors, duplicates removed, order kept.
    public func merging(_ other: TSATrust) -> TSATrust {
        var seenFiles = Set<String>(), seenPins = Set<String>()
        return TSATrust(caFiles: (caFiles + other.caFiles).filter { seenFiles.insert($0).inserted },
                        pinnedSigners: (pinnedSigners + other.pinnedSigners).filter { seenPins.insert($0).inserted })
    }

    /// For messages: the files and pins, as an auditor would recognise them.
    public var summary: String {
        (caFiles + pinnedSigners.map { "signer SHA-256 \($0)" }).joined(separator: ", ")
    }
}
