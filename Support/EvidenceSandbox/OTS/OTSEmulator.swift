import EvidenceCore
import EvidenceStore
import Foundation
import Hummingbird
import Synchronization

/// OpenTimestamps calendars and the Bitcoin block headers they end in, for the demo and tests.
///
/// Calendars (any name, e.g. `a`, `b`, `c`), as the public ones answer the reference client:
/// - `POST /ots/NAME/digest` with 1…64 raw bytes → 200 `application/octet-stream`: the
///   digest's timestamp: append a 16-byte nonce, SHA-256 (the commitment), then a pending
///   attestation naming `http://HOST/ots/NAME/` (with the slash, so the reference client's `urljoin` finds `timestamp/` under it).
/// - `GET /ots/NAME/timestamp/HEX` → 404 "Pending confirmation in Bitcoin blockchain" until the
///   commitment is in a block, then 200: the commitment's way to the block's merkle root
///   (prepend/append the transaction's other bytes, SHA-256 twice for the txid, then the
///   Bitcoin merkle path, SHA-256 twice per level) and a Bitcoin block header attestation.
///   Commitments older than `confirmSeconds` are mined into a new block when first asked for.
///
/// Block headers, Esplora-style (as blockstream.info and mempool.space answer):
/// `GET /esplora/block-height/N` → the block hash (hex text), `GET /esplora/block/HASH/header`
/// → the 80-byte header in hex, `GET /esplora/blocks/tip/height`. Blocks are real headers
/// (version, previous hash, merkle root, time, bits `0x207fffff` as on regtest, a nonce that
/// meets that target), chained from height 800000.
///
/// Each block of commitments is followed at once by an empty block (two confirmations).
/// Control: `POST /_sandbox/ots/mine` mines every pending commitment now (an empty block when
/// none is pending: one more confirmation);
/// `POST /_sandbox/ots/calendar?name=NAME&mode=ok|down|forge` makes a calendar answer normally,
/// 503 to everything, or upgrades that claim a block without leading to its merkle root;
/// `GET /_sandbox/ots/stats` → `{"submissions":{name:n},"upgrades":{name:n},"blocks":n,"pending":n}`.
/// State lives in memory: a restarted sandbox starts a new chain.
public final class OTSEmulator: Sendable {
    struct Block {
        let header: [UInt8]
        let hashHex: String
    }

    struct State {
        var pending: [(calendar: String, commitment: [UInt8], at: Date)] = []
        /// Serialized upgrade timestamps by calendar and commitment hex.
        var upgrades: [String: [UInt8]] = [:]
        var blocks: [Block] = []
        var modes: [String: String] = [:]
        var submissions: [String: Int] = [:]
        var upgradeRequests: [String: Int] = [:]
    }

    let state = Mutex(State())
    let confirmSeconds: Double
    let clock: @Sendable () -> Date
    static let firstHeight = 800_000

    public init(confirmSeconds: Double = 0, clock: @escaping @Sendable () -> Date = { Date() }) {
        self.confirmSeconds = confirmSeconds
        self.clock = clock
    }

    static let pendingTag: [UInt8] = [0x83, 0xdf, 0xe3, 0x0d, 0x2e, 0xf9, 0x0c, 0x8e]
    static let bitcoinTag: [UInt8] = [0x05, 0x88, 0x96, 0x0d, 0x73, 0xd7, 0x19, 0x01]

    func addRoutes(to router: Router<SandboxRequestContext>) {
        router.post("ots/:calendar/digest") { request, context in
            let name = context.parameters.get("calendar") ?? ""
            if let refused = self.refusal(name) { return refused }
            var request = request
            let body = [UInt8]((try await request.collectBody(upTo: 1024)).readableBytesView)
            guard (1...64).contains(body.count) else {
                return Response.text("a digest is 1 to 64 bytes\n", status: .badRequest)
            }
            let host = request.head.authority ?? "127.0.0.1"
            return .octets(self.submit(body, calendar: name, uri: "http://\(host)/ots/\(name)/"))
        }
        router.get("ots/:calendar/timestamp/:commitment") { _, context in
            let name = context.parameters.get("calendar") ?? ""
            if let refused = self.refusal(name) { return refused }
            guard let c = Hex.decode(context.parameters.get("commitment") ?? ""), !c.isEmpty else {
                return Response.text("not a hex commitment\n", status: .badRequest)
            }
            guard let answer = self.upgrade(c, calendar: name) else {
                return Response.text("Pending confirmation in Bitcoin blockchain", status: .notFound)
            }
            return .octets(answer)
        }
        router.get("esplora/block-height/:height") { _, context in
            guard let h = context.parameters.get("height").flatMap(Int.init), let b = self.block(at: h) else {
                return Response.text("Block not found", status: .notFound)
            }
            return Response.text(b.hashHex)
        }
        router.get("esplora/block/:hash/header") { _, context in
            let hash = (context.parameters.get("hash") ?? "").lowercased()
            guard let b = self.state.withLock({ $0.blocks.first { $0.hashHex == hash } }) else {
                return Response.text("Block not found", status: .notFound)
            }
            return Response.text(Hex.encode(b.header))
        }
        router.get("esplora/blocks/tip/height") { _, _ in
            Response.text(String(self.state.withLock { Self.firstHeight + $0.blocks.count - 1 }))
        }
        router.post("_sandbox/ots/mine") { _, _ in
            self.mine(olderThan: nil)
            return Response.text(String(self.state.withLock { Self.firstHeight + $0.blocks.count - 1 }))
        }
        router.post("_sandbox/ots/calendar") { request, _ in
            guard let name = request.uri.queryParameters.get("name"), let mode = request.uri.queryParameters.get("mode"),
                  ["ok", "down", "forge"].contains(mode) else {
                return Response.text("name= and mode=ok|down|forge\n", status: .badRequest)
            }
            self.state.withLock { $0.modes[name] = mode }
            return Response.text("\(name): \(mode)\n")
        }
        router.get("_sandbox/ots/stats") { _, _ in
            let s = self.state.withLock { $0 }
            func obj(_ d: [String: Int]) -> String {
                "{" + d.sorted { $0.key < $1.key }.map { "\"\($0.key)\":\($0.value)" }.joined(separator: ",") + "}"
            }
            let json = "{\"submissions\":\(obj(s.submissions)),\"upgrades\":\(obj(s.upgradeRequests)),\"blocks\":\(s.blocks.count),\"pending\":\(s.pending.count)}"
            return Response.text(json, contentType: "application/json")
        }
    }

    func refusal(_ calendar: String) -> Response? {
        guard state.withLock({ $0.modes[calendar] }) == "down" else { return nil }
        return Response.text("calendar \(calendar) is down\n", status: .serviceUnavailable)
    }

    func block(at height: Int) -> Block? {
        state.withLock { s in
            let i = height - Self.firstHeight
            return i >= 0 && i < s.blocks.count ? s.blocks[i] : nil
        }
    }

    func submit(_ digest: [UInt8], calendar: String, uri: String) -> [UInt8] {
        var nonce = [UInt8](repeating: 0, count: 16)
        for i in nonce.indices { nonce[i] = UInt8.random(in: 0...255) }
        let commitment = Self.sha256(digest + nonce)
        state.withLock { s in
            s.pending.append((calendar, commitment, clock()))
            s.submissions[calendar, default: 0] += 1
        }
        var w: [UInt8] = [0xf0]
        w += Self.varbytes(nonce)
        w += [0x08, 0x00]
        w += Self.pendingTag
        w += Self.varbytes(Self.varbytes(Array(uri.utf8)))
        return w
    }

    func upgrade(_ commitment: [UInt8], calendar: String) -> [UInt8]? {
        let key = calendar + ":" + Hex.encode(commitment)
        state.withLock { $0.upgradeRequests[calendar, default: 0] += 1 }
        if state.withLock({ $0.upgrades[key] }) == nil { mine(olderThan: confirmSeconds) }
        return state.withLock { s in
            guard let real = s.upgrades[key] else { return nil }
            guard s.modes[calendar] == "forge" else { return real }
            // A lie: the commitment itself "attested" by the newest block.
            return [0x00] + Self.bitcoinTag + Self.varbytes(Self.varuint(UInt64(Self.firstHeight + s.blocks.count - 1)))
        }
    }

    /// Puts every pending commitment (older than `age` seconds, when given) into one new block.
    func mine(olderThan age: Double?) {
        state.withLock { s in
            let now = clock()
            let due = s.pending.enumerated().filter { age == nil || now.timeIntervalSince($0.element.at) >= age! }
            // Asked for with nothing due (`/_sandbox/ots/mine`): an empty block, one more confirmation.
            guard !due.isEmpty || age == nil else { return }
            let dueIndices = Set(due.map(\.offset))
            s.pending = s.pending.enumerated().filter { !dueIndices.contains($0.offset) }.map(\.element)
            // One OP_RETURN-style transaction per commitment, after a coinbase.
            let prefix: [UInt8] = [0x01, 0x00, 0x00, 0x00, 0x01] + [UInt8](repeating: 0, count: 32) + [0xff, 0xff, 0xff, 0xff, 0x22, 0x6a, 0x20]
            let suffix: [UInt8] = [0xfd, 0xff, 0xff, 0xff, 0x00, 0x00, 0x00, 0x00]
            var coinbase = [UInt8](repeating: 0, count: 60)
            for i in coinbase.indices { coinbase[i] = UInt8.random(in: 0...255) }
            var txids = [Self.dsha(coinbase)]
            for d in due { txids.append(Self.dsha(prefix + d.element.commitment + suffix)) }
            // The merkle levels (Bitcoin's: an odd last node is paired with itself).
            var levels = [txids]
            while levels[levels.count - 1].count > 1 {
                let row = levels[levels.count - 1]
                var next: [[UInt8]] = []
                var i = 0
                while i < row.count { next.append(Self.dsha(row[i] + row[min(i + 1, row.count - 1)])); i += 2 }
                levels.append(next)
            }
            let root = levels[levels.count - 1][0]
            let height = Self.firstHeight + s.blocks.count
            var header: [UInt8] = [0x00, 0x00, 0x00, 0x20]
            header += s.blocks.last.map { Self.dsha($0.header) } ?? [UInt8](repeating: 0, count: 32)
            header += root
            header += Self.le32(UInt32(now.timeIntervalSince1970))
            header += Self.le32(0x207f_ffff)
            var nonce: UInt32 = 0
            while true {
                let candidate = header + Self.le32(nonce)
                if Self.dsha(candidate).last! <= 0x7f { header = candidate; break }
                nonce += 1
            }
            s.blocks.append(Block(header: header, hashHex: Hex.encode(Self.dsha(header).reversed())))
            for (n, d) in due.enumerated() {
                var w: [UInt8] = [0xf1] + Self.varbytes(prefix) + [0xf0] + Self.varbytes(suffix) + [0x08, 0x08]
                var index = n + 1
                for level in levels.dropLast() {
                    let sibling = level[min(index ^ 1, level.count - 1)]
                    w += (index & 1 == 0 ? [0xf0] : [0xf1]) + Self.varbytes(sibling) + [0x08, 0x08]
                    index /= 2
                }
                w += [0x00] + Self.bitcoinTag + Self.varbytes(Self.varuint(UInt64(height)))
                s.upgrades[d.element.calendar + ":" + Hex.encode(d.element.commitment)] = w
            }
            // One empty block after a block of commitments: it has two confirmations at once.
            if !due.isEmpty { s.blocks.append(Self.emptyBlock(after: s.blocks[s.blocks.count - 1], time: now)) }
        }
    }

    /// A block of a coinbase alone, chained after `previous`.
    static func emptyBlock(after previous: Block, time: Date) -> Block {
        var coinbase = [UInt8](repeating: 0, count: 60)
        for i in coinbase.indices { coinbase[i] = UInt8.random(in: 0...255) }
        var header: [UInt8] = [0x00, 0x00, 0x00, 0x20] + dsha(previous.header) + dsha(coinbase) + le32(UInt32(time.timeIntervalSince1970)) + le32(0x207f_ffff)
        var nonce: UInt32 = 0
        while true {
            let candidate = header + le32(nonce)
            if dsha(candidate).last! <= 0x7f { header = candidate; break }
            nonce += 1
        }
        return Block(header: header, hashHex: Hex.encode(dsha(header).reversed()))
    }

    static func sha256(_ b: [UInt8]) -> [UInt8] { Hex.decode(SHA256Hasher.hash(b).hex) ?? [] }
    static func dsha(_ b: [UInt8]) -> [UInt8] { sha256(sha256(b)) }
    static func le32(_ v: UInt32) -> [UInt8] { (0..<4).map { UInt8((v >> (8 * UInt32($0))) & 0xff) } }
    static func varuint(_ value: UInt64) -> [UInt8] {
        var v = value, out: [UInt8] = []
        repeat {
            var b = UInt8(v & 0x7f)
            v >>= 7
            if v != 0 { b |= 0x80 }
            out.append(b)
        } while v != 0
        return out
    }
    static func varbytes(_ b: [UInt8]) -> [UInt8] { varuint(UInt64(b.count)) + b }
}

extension Response {
    static func text(_ text: String, status: HTTPResponse.Status = .ok, contentType: String = "text/plain") -> Response {
        .bytes(Array(text.utf8), contentType: contentType, status: status)
    }

    static func octets(_ bytes: [UInt8]) -> Response { .bytes(bytes, contentType: "application/octet-stream") }
}
