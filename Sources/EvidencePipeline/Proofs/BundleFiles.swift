import EvidenceCore
import Foundation
import Glibc

/// A bundle folder's files as the file system names them: bytes, not Strings.
///
/// Swift compares Strings by Unicode canonical equivalence, so `café` spelt NFC and NFD are one
/// String but two files; a check that lists files as Strings misses the twin. Here names stay
/// bytes, must be UTF-8 in NFC (what `evidence bundle` writes), and every entry must be a regular
/// file or one of the bundle's three folders: no link, device or pipe is followed or read.
enum BundleFiles {
    struct Walk {
        var files: Set<[UInt8]> = []
        var problems: [String] = []
    }

    static func walk(_ dir: String) -> Walk {
        var out = Walk()
        walk(dir, prefix: [], depth: 0, into: &out)
        return out
    }

    private static func walk(_ dir: String, prefix: [UInt8], depth: Int, into out: inout Walk) {
        guard let d = opendir(dir) else {
            out.problems.append("\(TerminalText.escape(dir)): cannot list: \(String(cString: strerror(errno)))"); return
        }
        defer { closedir(d) }
        var seen: [String: [UInt8]] = [:]
        while let entry = readdir(d) {
            let name: [UInt8] = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                Array(raw.prefix(while: { $0 != 0 }))
            }
            if name == [0x2E] || name == [0x2E, 0x2E] { continue }
            let rel = prefix.isEmpty ? name : prefix + [0x2F] + name
            let shown = BundleVerifier.shown(rel)
            if let problem = nameProblem(name) { out.problems.append("\(shown): \(problem)") }
            // Two names one reader would take for the same file.
            let key = String(decoding: name, as: UTF8.self)
            if let other = seen[key] {
                out.problems.append("\(shown) and \(BundleVerifier.shown(prefix + [0x2F] + other)) are the same name in Unicode: one is a twin")
            }
            seen[key] = name
            var st = stat()
            let path = dir + "/" + String(decoding: name, as: UTF8.self)
            guard lstat(path, &st) == 0 else {
                out.problems.append("\(shown): cannot stat: \(String(cString: strerror(errno)))"); continue
            }
            switch st.st_mode & S_IFMT {
            case S_IFREG:
                out.files.insert(rel)
            case S_IFDIR where depth == 0 && BundleVerifier.folders.contains(name):
                walk(path, prefix: rel, depth: depth + 1, into: &out)
            case S_IFDIR:
                out.problems.append("\(shown): a folder a bundle does not have")
            case S_IFLNK:
                out.problems.append("\(shown): a symbolic link (a bundle holds only regular files; not followed)")
            default:
                out.problems.append("\(shown): not a regular file")
            }
        }
    }

    /// Why one path component is not one `evidence bundle` writes, or nil.
    static func nameProblem(_ name: [UInt8]) -> String? {
        guard let s = String(validating: name, as: UTF8.self) else { return "the name is not UTF-8" }
        if s.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F || $0.properties.generalCategory == .control }) {
            return "the name holds a control character"
        }
        if s.unicodeScalars.contains(where: { $0.properties.generalCategory == .format }) {
            return "the name holds an invisible formatting character (a bidirectional or zero-width mark)"
        }
        if Array(s.precomposedStringWithCanonicalMapping.utf8) != name { return "the name is not in Unicode NFC (an NFD or mixed spelling of a name)" }
        return nil
    }

    /// The file at `path` when it is a regular file of at most `limit` bytes: opened without
    /// following a link and without blocking (a FIFO or device planted in a folder is refused,
    /// not waited on or read forever). Nil otherwise.
    static func readRegular(_ path: String, limit: Int = 64 << 20) -> Data? {
        let fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG, st.st_size <= limit else { return nil }
        var data = Data(count: Int(st.st_size))
        let n = data.withUnsafeMutableBytes { raw -> Int in
            var done = 0
            while done < raw.count {
                let r = read(fd, raw.baseAddress! + done, raw.count - done)
                if r < 0 && errno == EINTR { continue }
                if r <= 0 { break }
                done += r
            }
            return done
        }
        return n == data.count ? data : nil
    }

    /// Why a relative path listed in SHA256SUMS or the manifest is unacceptable, or nil.
    static func pathProblem(_ rel: [UInt8]) -> String? {
        if rel.first == 0x2F { return "an absolute path" }
        let parts = rel.split(separator: 0x2F, omittingEmptySubsequences: false)
        if parts.count > 2 { return "nested deeper than a bundle's folders" }
        for part in parts {
            if part.isEmpty { return "an empty path component" }
            if part.elementsEqual([0x2E]) || part.elementsEqual([0x2E, 0x2E]) { return "leaves the bundle" }
            if let p = nameProblem(Array(part)) { return p }
        }
        if parts.count == 2, !BundleVerifier.folders.contains(Array(parts[0])) { return "not in one of the bundle's folders" }
        return nil
    }
}
