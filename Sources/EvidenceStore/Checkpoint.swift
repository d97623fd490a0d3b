import EvidenceCore
import Foundation

/// A C2SP `tlog-checkpoint` body: the custody tree at one size.
///
/// ```
/// <origin>\n
/// <tree size, decimal>\n
/// <root hash, standard base64>\n
/// ```
/// Ours carry no signed-note signature: a custody anchor is an RFC 3161 token whose message
/// imprint is SHA-256 of exactly these bytes (`anchors/<seq>-<hash>.checkpoint` beside its `.tsr`).
public struct Checkpoint: Equatable, Sendable {
    public var origin: String
    public var size: Int
    public var root: [UInt8]

    public init(origin: String, size: Int, root: [UInt8]) {
        self.origin = origin; self.size = size; self.root = root
    }

    public var text: String { "\(origin)\n\(size)\n\(Data(root).base64EncodedString())\n" }
    public var bytes: Data { Data(text.utf8) }

    public struct FormatError: Error, CustomStringConvertible {
        public var description: String
        public init(_ d: String) { description = d }
    }

    /// Whether `origin` may head a checkpoint: non-empty printable text without spaces or
    /// control characters (C2SP: a schema-less URL naming the log).
    public static func validOrigin(_ origin: String) -> Bool {
        // No whitespace and no control character of either range: C1 (U+0080…U+009F) includes
        // CSI, which a terminal obeys like ESC [ when a refusal quotes the line.
        !origin.isEmpty && origin.utf8.count <= 255
            && origin.unicodeScalars.allSatisfy { $0.value > 0x20 && !(0x7F...0x9F).contains($0.value) && !$0.properties.isWhitespace }
    }

    /// Reads a checkpoint written as above, and nothing else: exactly three lines.
    public static func parse(_ data: Data) throws(FormatError) -> Checkpoint {
        guard data.count <= 1024, let text = String(data: data, encoding: .utf8) else {
            throw FormatError("not a checkpoint (over 1 KB or not UTF-8)")
        }
        guard text.hasSuffix("\n") else { throw FormatError("a checkpoint ends with a newline") }
        let lines = text.dropLast().split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        guard lines.count == 3 else { throw FormatError("a checkpoint has 3 lines (origin, size, root), not \(lines.count)") }
        guard validOrigin(lines[0]) else { throw FormatError("the origin line \"\(TerminalText.escape(String(lines[0].prefix(80))))\" is not a log name") }
        guard let size = Int(lines[1]), size >= 0, String(size) == lines[1] else {
            throw FormatError("the size line \"\(TerminalText.escape(String(lines[1].prefix(40))))\" is not a decimal number")
        }
        guard let root = Data(base64Encoded: lines[2]), root.count == 32, root.base64EncodedString() == lines[2] else {
            throw FormatError("the root line is not the base64 of 32 bytes")
        }
        return Checkpoint(origin: lines[0], size: size, root: [UInt8](root))
    }
}

/// A C2SP `tlog-proof`: one event's inclusion proof with the checkpoint it leads to.
///
/// ```
/// c2sp.org/tlog-proof@v1
/// index <zero-based leaf index: event seq - 1>
/// <base64 hash, the leaf's sibling first>
/// …
///
/// <the checkpoint, verbatim>
/// ```
public struct TlogProof: Equatable, Sendable {
    public static let header = "c2sp.org/tlog-proof@v1"
    public var index: Int
    public var hashes: [[UInt8]]
    /// The checkpoint's bytes as written (they are what the anchor's token is over).
    public var checkpoint: Data

    public init(index: Int, hashes: [[UInt8]], checkpoint: Data) {
        self.index = index; self.hashes = hashes; self.checkpoint = checkpoint
    }

    public var bytes: Data {
        var s = Self.header + "\nindex \(index)\n"
        for h in hashes { s += Data(h).base64EncodedString() + "\n" }
        s += "\n"
        return Data(s.utf8) + checkpoint
    }

    /// Reads a proof; an `extra` line is allowed and ignored (it is not authenticated).
    public static func parse(_ data: Data) throws(Checkpoint.FormatError) -> TlogProof {
        guard data.count <= 64 * 1024 else { throw Checkpoint.FormatError("not a tlog-proof (over 64 KB)") }
        let bytes = [UInt8](data)
        // The proof ends at the first empty line; the checkpoint follows it byte for byte.
        guard let blank = (0 ..< max(0, bytes.count - 1)).first(where: { bytes[$0] == 0x0A && bytes[$0 + 1] == 0x0A }),
              let head = String(bytes: bytes[0 ..< blank], encoding: .utf8) else {
            throw Checkpoint.FormatError("not a tlog-proof: no empty line before the checkpoint")
        }
        var lines = head.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)[...]
        guard lines.popFirst() == header else { throw Checkpoint.FormatError("not a tlog-proof: the first line is not \(header)") }
        if lines.first?.hasPrefix("extra ") == true { lines.removeFirst() }
        guard let indexLine = lines.popFirst(), indexLine.hasPrefix("index "),
              let index = Int(indexLine.dropFirst(6)), index >= 0, String(index) == indexLine.dropFirst(6) else {
            throw Checkpoint.FormatError("tlog-proof: no \"index N\" line")
        }
        var hashes: [[UInt8]] = []
        for line in lines {
            guard let h = Data(base64Encoded: line), h.count == 32 else {
                throw Checkpoint.FormatError("tlog-proof: \"\(TerminalText.escape(String(line.prefix(60))))\" is not the base64 of a 32-byte hash")
            }
            hashes.append([UInt8](h))
        }
        guard hashes.count <= 64 else { throw Checkpoint.FormatError("tlog-proof: \(hashes.count) hashes is more than any tree needs") }
        return TlogProof(index: index, hashes: hashes, checkpoint: Data(bytes[(blank + 2)...]))
    }
}
