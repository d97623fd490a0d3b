import EvidenceCore
import EvidenceHTTP
import Foundation

/// OpenTimestamps over HTTP, as the reference client speaks it (python-opentimestamps
/// `calendar.py`): `POST <calendar>/digest` with the 32 raw bytes of a digest answers the
/// timestamp of that digest (the calendar's operations to its commitment, and a pending
/// attestation naming the calendar); `GET <calendar>/timestamp/<hex commitment>` answers the
/// rest of the way to a Bitcoin block once the calendar's transaction is mined, and 404 until then.
///
/// Nothing a calendar says is trusted: a Bitcoin attestation counts only when the message it
/// attests equals the merkle root of the block header that the configured header source
/// (`headers_url`, an Esplora-style API: `GET /block-height/N`, `GET /block/HASH/header`) serves
/// for that height, and that header hashes to the block hash the source named.
public struct OTSClient: Sendable {
    public let name: String
    /// Calendar base URLs, without a trailing slash.
    public let calendars: [String]
    /// The calendars a pending attestation may send an upgrade request to: `calendars` and
    /// `upgrade_urls`. Any other URI in a proof is never contacted (it is the proof's word).
    public let upgradeFrom: Set<String>
    /// How many calendars must answer a submission (`min_calendars`).
    public let minimum: Int
    public let headersURL: String
    /// `network = "regtest"`: a test chain, whose headers need only meet their own target.
    public let regtest: Bool
    /// Blocks (the attesting one included) before an attestation counts.
    public let confirmations: Int
    let http: HTTPClient

    /// Leading zero bits a Bitcoin header's hash must have. Every block since OpenTimestamps
    /// began (2016, height ≈ 400,000) has about 69 or more; 60 is 2^60 hashes to forge one header.
    public static let minimumWorkBits = 60
    /// How much earlier than the real time a miner may set a block's time (it must only exceed the
    /// median of the previous 11 blocks): an attestation proves existence no later than
    /// the header's time plus this.
    public static let blockTimeMargin: TimeInterval = 2 * 3600

    public static let accept = "application/vnd.opentimestamps.v1"
    /// A calendar's answer is a few hundred bytes; anything past this is refused unread.
    static let maxAnswer = 64 << 10
    /// Levels of operations a calendar's answer may have (real ones have a handful).
    static let maxAnswerDepth = 64
    /// Distinct Bitcoin blocks one timestamp may name before its headers are fetched: a real
    /// proof names one or two; a hostile one naming thousands would make thousands of requests.
    public static let maxBlocks = 8

    public init(name: String, calendars: [String], upgradeFrom: [String] = [], minimum: Int, headersURL: String,
                regtest: Bool = false, confirmations: Int = 6, http: HTTPClient) {
        self.name = name
        self.regtest = regtest
        self.confirmations = confirmations
        self.calendars = calendars.map(Self.trimmed)
        self.upgradeFrom = Set((calendars + upgradeFrom).map(Self.trimmed))
        self.minimum = minimum
        self.headersURL = Self.trimmed(headersURL)
        self.http = http
    }

    static func trimmed(_ url: String) -> String {
        var u = url
        while u.hasSuffix("/") { u.removeLast() }
        return u
    }

    /// The root's timestamp from every calendar that answered (merged), and which answered.
    /// Fewer than `minimum` answering throws, naming each failure; retryable when any was.
    public func submit(_ root: [UInt8]) async throws(NotaryError) -> (timestamp: OTSTimestamp, answered: [String]) {
        let results = await withTaskGroup(of: (String, Result<OTSTimestamp, NotaryError>).self) { group in
            for calendar in calendars {
                group.addTask { (calendar, await self.submit(root, to: calendar)) }
            }
            var all: [(String, Result<OTSTimestamp, NotaryError>)] = []
            for await r in group { all.append(r) }
            return all.sorted { $0.0 < $1.0 }
        }
        var merged = OTSTimestamp(message: root)
        var answered: [String] = []
        var failures: [NotaryError] = []
        for (calendar, result) in results {
            switch result {
            case .success(let t): merged = merged.merging(t); answered.append(calendar)
            case .failure(let e): failures.append(e)
            }
        }
        guard answered.count >= minimum else {
            throw NotaryError("\(name): \(answered.count) of \(calendars.count) calendars answered, \(minimum) needed (min_calendars)"
                              + (failures.isEmpty ? "" : ": " + failures.map(\.message).joined(separator: "; ")),
                              retryable: failures.isEmpty || failures.contains { $0.retryable },
                              retryAfter: failures.compactMap(\.retryAfter).max())
        }
        return (merged, answered)
    }

    func submit(_ root: [UInt8], to calendar: String) async -> Result<OTSTimestamp, NotaryError> {
        let url = calendar + "/digest"
        let response: HTTPResponse
        do {
            response = try await http.execute(HTTPRequest(method: "POST", url: url,
                                                          headers: [("Accept", Self.accept), ("Content-Type", "application/x-www-form-urlencoded")],
                                                          body: .data(Data(root))))
        } catch {
            return .failure(NotaryError("\(name) calendar \(Redact.url(calendar))", error))
        }
        do throws(OTSError) {
            guard response.body.count <= Self.maxAnswer else { throw OTSError("an answer of \(response.body.count) bytes (at most \(Self.maxAnswer))") }
            let answer = try OTSTimestamp(message: root, bytes: [UInt8](response.body))
            // A fresh answer is a promise: only its pending attestations are kept, and only those
            // naming a calendar we may ask for the upgrade count (a pool names its own back ends:
            // list them in upgrade_urls). Real answers are a few levels deep.
            guard answer.depth <= Self.maxAnswerDepth else { throw OTSError("\(answer.depth) levels of operations (at most \(Self.maxAnswerDepth))") }
            guard let t = answer.pendingOnly else { throw OTSError("its timestamp has no pending attestation") }
            let named = Set(t.allAttestations.compactMap { a -> String? in if case .pending(let uri) = a.attestation { Self.trimmed(uri) } else { nil } })
            guard !named.isDisjoint(with: upgradeFrom) else {
                throw OTSError("its pending attestation names \(named.sorted().map { Redact.url($0) }.joined(separator: ", ")), which is not in "
                               + "calendars or upgrade_urls: the proof could never be upgraded (add it to upgrade_urls)")
            }
            return .success(t)
        } catch {
            return .failure(NotaryError("\(name) calendar \(Redact.url(calendar)): its answer is not a timestamp of the digest sent: \(error.message)",
                                        retryable: true))
        }
    }

    /// The calendar's timestamp of `commitment` onwards, or nil while it is not in a block yet
    /// (404). Only for a calendar in `upgradeFrom`.
    public func upgrade(commitment: [UInt8], calendar: String) async throws(NotaryError) -> OTSTimestamp? {
        let base = Self.trimmed(calendar)
        guard upgradeFrom.contains(base) else {
            throw NotaryError("\(name): the proof names calendar \(Redact.url(base)), which is not in calendars or upgrade_urls: not contacted",
                              retryable: false)
        }
        let response: HTTPResponse
        do {
            response = try await http.execute(
                HTTPRequest(method: "GET", url: base + "/timestamp/" + Hex.encode(commitment), headers: [("Accept", Self.accept)]),
                classify: { $0.status == 404 ? .success : HTTPClient.defaultClassification($0) })
        } catch {
            throw NotaryError("\(name) calendar \(Redact.url(base))", error)
        }
        if response.status == 404 { return nil }
        do throws(OTSError) {
            guard response.body.count <= Self.maxAnswer else { throw OTSError("an answer of \(response.body.count) bytes (at most \(Self.maxAnswer))") }
            return try OTSTimestamp(message: commitment, bytes: [UInt8](response.body))
        } catch {
            throw NotaryError("\(name) calendar \(Redact.url(base)): its upgrade is not a timestamp of the commitment: \(error.message)",
                              retryable: true)
        }
    }

    /// The height of the newest block `headers_url` knows (`GET /blocks/tip/height`).
    public func tipHeight() async throws(NotaryError) -> Int {
        let r: HTTPResponse
        do { r = try await http.execute(HTTPRequest(method: "GET", url: headersURL + "/blocks/tip/height")) } catch {
            throw NotaryError("\(name) headers_url \(Redact.url(headersURL))", error)
        }
        guard r.body.count <= 32, let text = String(data: r.body, encoding: .utf8),
              let h = Int(text.trimmingCharacters(in: .whitespacesAndNewlines)), h >= 0 else {
            throw NotaryError("\(name) headers_url \(Redact.url(headersURL)): /blocks/tip/height is not a block height", retryable: true)
        }
        return h
    }

    /// The header of the block at `height`, from `headers_url`: the source's block hash for the
    /// height, then that block's header, which must hash to it and meet its own target.
    public func header(height: Int) async throws(NotaryError) -> BitcoinHeader {
        func get(_ path: String) async throws(NotaryError) -> String {
            let r: HTTPResponse
            do { r = try await http.execute(HTTPRequest(method: "GET", url: headersURL + path)) } catch {
                throw NotaryError("\(name) headers_url \(Redact.url(headersURL))", error)
            }
            guard r.body.count <= 4096, let text = String(data: r.body, encoding: .utf8) else {
                throw NotaryError("\(name) headers_url \(Redact.url(headersURL + path)): not a short text answer", retryable: true)
            }
            return text.trimmingCharacters(in: .whitespacesAndNewlines)
        }
        let hash = try await get("/block-height/\(height)").lowercased()
        guard hash.utf8.count == 64, Hex.decode(hash) != nil else {
            throw NotaryError("\(name) headers_url: the hash of block \(height) is not 64 hex characters", retryable: true)
        }
        let text = try await get("/block/\(hash)/header")
        let header: BitcoinHeader
        do { header = try BitcoinHeader(hex: text) } catch {
            throw NotaryError("\(name) headers_url: block \(height): \(error.message)", retryable: true)
        }
        guard header.hashHex == hash else {
            throw NotaryError("\(name) headers_url: the header served for block \(height) hashes to \(header.hashHex), not \(hash)", retryable: false)
        }
        guard header.meetsOwnTarget else {
            throw NotaryError("\(name) headers_url: the header of block \(height) does not meet its own proof-of-work target", retryable: false)
        }
        // A header made up by whoever answers for headers_url would have to carry real work.
        guard regtest || header.leadingZeroBits >= Self.minimumWorkBits else {
            throw NotaryError("\(name) headers_url: the header served for block \(height) shows \(header.leadingZeroBits) bits of work, "
                              + "not the \(Self.minimumWorkBits) or more of any Bitcoin block of that era: not a real block", retryable: false)
        }
        return header
    }

    /// The headers of every Bitcoin block `timestamp` names.
    public func headers(for timestamp: OTSTimestamp) async throws(NotaryError) -> [Int: BitcoinHeader] {
        let heights = Set(timestamp.allAttestations.compactMap { a -> Int? in if case .bitcoin(let h) = a.attestation { h } else { nil } })
        guard heights.count <= Self.maxBlocks else {
            throw NotaryError("\(name): a timestamp naming \(heights.count) Bitcoin blocks (at most \(Self.maxBlocks)): not looked up", retryable: false)
        }
        var out: [Int: BitcoinHeader] = [:]
        for case (_, .bitcoin(let h)) in timestamp.allAttestations where out[h] == nil { out[h] = try await header(height: h) }
        return out
    }
}

/// Checks an OpenTimestamps proof: the file's digest, and every Bitcoin attestation against the
/// header of its block (from a source the verifier trusts, never from the proof or a calendar).
public enum OTSVerifier {
    public struct Attested: Sendable, Equatable {
        public let height: Int
        public let time: Date
        public let blockHash: String
    }

    public struct Report: Sendable {
        /// Bitcoin attestations whose message is the block's merkle root, oldest block first.
        public var attested: [Attested] = []
        /// Calendars still to be asked for an upgrade: (calendar URI, commitment).
        public var pending: [(uri: String, commitment: [UInt8])] = []
        /// Heights with no header to compare with.
        public var unchecked: [Int] = []
        public var unknown = 0
    }

    /// Throws when the proof is not one of `digest`, or any Bitcoin attestation's message differs
    /// from the merkle root of the header given for its height.
    public static func check(_ file: OTSFile, digest: SHA256Digest, headers: [Int: BitcoinHeader]) throws(OTSError) -> Report {
        guard Hex.encode(file.digest) == digest.hex else {
            throw OTSError("the proof is of the file with SHA-256 \(Hex.encode(file.digest)), not of this one (\(digest.hex))")
        }
        var report = Report()
        for (message, attestation) in file.timestamp.allAttestations {
            switch attestation {
            case .bitcoin(let height):
                guard let header = headers[height] else { report.unchecked.append(height); continue }
                guard message == header.merkleRoot else {
                    throw OTSError("its attestation of Bitcoin block \(height) is over \(Hex.encode(message)), "
                                   + "but that block's merkle root is \(Hex.encode(header.merkleRoot))")
                }
                report.attested.append(Attested(height: height, time: header.time, blockHash: header.hashHex))
            case .pending(let uri): report.pending.append((uri, message))
            case .unknown: report.unknown += 1
            }
        }
        report.attested.sort { $0.height < $1.height }
        return report
    }
}
