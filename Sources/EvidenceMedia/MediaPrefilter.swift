import Foundation

/// What the process that holds the credentials may decide about a file before handing it to the
/// media probe child: only that it is certainly not media, from its extension and first bytes,
/// in pure Swift. libavformat is never loaded for it (it parses hostile bytes: that is the
/// child's job, `evidence __probe`). Everything it cannot rule out goes to the child, which
/// decides by content.
public enum MediaPrefilter {
    /// How much of the file's beginning is looked at (libavformat's probe looks at as much).
    public static let window = 8192

    /// What the first bytes say.
    public enum Verdict: Equatable, Sendable {
        /// A media extension, or bytes that could be media: the child decides.
        case ask
        /// Certainly not media; the reason, for logs and tests.
        case notMedia(String)
    }

    /// Signatures of documents, archives and databases at offset 0. A file that starts with
    /// one is that format, whatever an embedded stream could make a guessing demuxer say.
    static let documentSignatures: [(name: String, bytes: [UInt8])] = [
        ("PDF", Array("%PDF-".utf8)),
        ("ZIP (also docx, xlsx, odt, jar)", [0x50, 0x4B, 0x03, 0x04]),
        ("empty ZIP", [0x50, 0x4B, 0x05, 0x06]),
        ("OLE2 (doc, xls, msg)", [0xD0, 0xCF, 0x11, 0xE0, 0xA1, 0xB1, 0x1A, 0xE1]),
        ("gzip", [0x1F, 0x8B]),
        ("bzip2", Array("BZh".utf8)),
        ("xz", [0xFD, 0x37, 0x7A, 0x58, 0x5A, 0x00]),
        ("zstd", [0x28, 0xB5, 0x2F, 0xFD]),
        ("7-Zip", [0x37, 0x7A, 0xBC, 0xAF, 0x27, 0x1C]),
        ("RAR", Array("Rar!\u{1A}\u{07}".utf8)),
        ("SQLite", Array("SQLite format 3\u{0}".utf8)),
        ("ELF", [0x7F, 0x45, 0x4C, 0x46]),
    ]

    /// Judges the file open as `fd` (read with `pread`: its offset is left alone).
    /// - Parameter name: the name whose extension counts (the original name of a store object).
    public static func verdict(descriptor fd: Int32, name: String) -> Verdict {
        if MediaProbe.expectsMedia(name) { return .ask }
        switch firstBytes(descriptor: fd) {
        case .success(let read): return verdict(firstBytes: read.bytes, whole: read.whole)
        // Unreadable here is unreadable in the child too: not media (the store read it already).
        case .failure(let reason): return .notMedia(reason.text)
        }
    }

    /// Why the first bytes could not be read.
    public struct Unreadable: Error, Sendable { public var text: String }

    /// The first `window` bytes of the file open as `fd` (read with `pread`: its offset is left
    /// alone), and whether they are the whole file.
    public static func firstBytes(descriptor fd: Int32) -> Result<(bytes: ArraySlice<UInt8>, whole: Bool), Unreadable> {
        var buffer = [UInt8](repeating: 0, count: window)
        var filled = 0
        while filled < window {
            let n = buffer.withUnsafeMutableBytes { pread(fd, $0.baseAddress! + filled, window - filled, off_t(filled)) }
            if n < 0 && errno == EINTR { continue }
            if n < 0 { return .failure(Unreadable(text: "unreadable: \(String(cString: strerror(errno)))")) }
            if n == 0 { break }
            filled += n
        }
        return .success((buffer[0..<filled], filled < window))
    }

    /// - Parameter whole: the bytes are the whole file (a UTF-8 sequence cut at the end of the
    ///   window is then invalid, not merely cut).
    public static func verdict(firstBytes bytes: ArraySlice<UInt8>, whole: Bool) -> Verdict {
        if bytes.isEmpty { return .notMedia("empty") }
        // No container's signature is zeros: sparse or preallocated files.
        if !bytes.contains(where: { $0 != 0 }) { return .notMedia("only zero bytes") }
        for signature in documentSignatures where bytes.starts(with: signature.bytes) {
            return .notMedia(signature.name)
        }
        if isText(bytes, whole: whole) { return .notMedia("text") }
        return .ask
    }

    /// UTF-8 without control characters other than tab, line feed, vertical tab, form feed,
    /// carriage return and escape. Every container a capture device writes has binary fields
    /// (sizes, versions, sync bytes 0xFF) within its first bytes, which fail this.
    static func isText(_ bytes: ArraySlice<UInt8>, whole: Bool) -> Bool {
        var body = bytes
        if !whole {
            // A multi-byte sequence cut by the window: drop its lead and continuation bytes.
            var back = 0
            while back < 3, let last = body.last, last & 0xC0 == 0x80 { body = body.dropLast(); back += 1 }
            if let last = body.last, last >= 0xC0 { body = body.dropLast() }
        }
        for byte in body where byte < 0x20 && ![0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x1B].contains(byte) { return false }
        if body.contains(0x7F) { return false }
        return String(validating: body, as: UTF8.self) != nil
    }
}
