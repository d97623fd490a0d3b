import EvidenceCore
import EvidenceStore
import Foundation
import Glibc

/// Expands command-line paths into files to ingest, without following symlinks and
/// without opening anything (FIFOs and devices are reported, never read).
public struct SourceWalker {
    public struct Entry: Sendable, Equatable {
        public var path: String
        public var size: Int64
    }

    public struct Refusal: Sendable, Equatable {
        public var path: String
        public var reason: String
        /// Worth a quarantine record (the file exists but cannot be taken).
        public var quarantine: Bool
    }

    public var followSymlinks: Bool

    public init(followSymlinks: Bool) { self.followSymlinks = followSymlinks }

    /// Files under `paths` in a stable order, and what was refused along the way.
    public func expand(_ paths: [String]) -> (files: [Entry], refused: [Refusal]) {
        var files: [Entry] = []
        var refused: [Refusal] = []
        let cwd = FileManager.default.currentDirectoryPath
        for p in paths {
            // Record absolute paths (symlinks in the path itself are kept as written).
            let abs = p.hasPrefix("/") ? p : (cwd == "/" ? "/" + p : cwd + "/" + p)
            visit((abs as NSString).standardizingPath, topLevel: true, &files, &refused)
        }
        return (files, refused)
    }

    private func visit(_ path: String, topLevel: Bool, _ files: inout [Entry], _ refused: inout [Refusal]) {
        var st = stat()
        if lstat(path, &st) != 0 {
            let e = errno
            refused.append(Refusal(path: path, reason: StoreError.from(errno: e, path: path, operation: "lstat").description,
                                   quarantine: e != ENOENT))
            return
        }
        var kind = FileKind(mode: UInt32(st.st_mode))
        if kind == .symlink {
            guard followSymlinks else {
                refused.append(Refusal(path: path, reason: StoreError.symlink(path: path).description, quarantine: true))
                return
            }
            if stat(path, &st) != 0 {
                refused.append(Refusal(path: path, reason: "\(path): symbolic link to a missing target", quarantine: true))
                return
            }
            kind = FileKind(mode: UInt32(st.st_mode))
            if kind == .directory && !topLevel {
                refused.append(Refusal(path: path, reason: "\(path): symbolic link to a directory (not descended)", quarantine: false))
                return
            }
        }
        switch kind {
        case .regular:
            files.append(Entry(path: path, size: Int64(st.st_size)))
        case .directory:
            let (names, bad) = Self.listDirectory(path)
            for b in bad { refused.append(b) }
            for name in names {
                visit(path.hasSuffix("/") ? path + name : path + "/" + name, topLevel: false, &files, &refused)
            }
        default:
            refused.append(Refusal(path: path, reason: StoreError.notRegularFile(path: path, kind: kind.rawValue).description,
                                   quarantine: true))
        }
    }

    /// Entry names, sorted; names that are not valid UTF-8 are refused with their bytes in hex.
    static func listDirectory(_ path: String) -> ([String], [Refusal]) {
        guard let dir = opendir(path) else {
            let e = errno
            return ([], [Refusal(path: path, reason: StoreError.from(errno: e, path: path, operation: "open directory").description,
                                 quarantine: e != ENOENT)])
        }
        defer { closedir(dir) }
        var names: [String] = []
        var refused: [Refusal] = []
        while let ent = readdir(dir) {
            let raw: [UInt8] = withUnsafeBytes(of: ent.pointee.d_name) { buf in
                Array(buf.prefix { $0 != 0 })
            }
            if raw == [46] || raw == [46, 46] { continue }
            if let name = String(validating: raw, as: UTF8.self) {
                names.append(name)
            } else {
                let shown = String(decoding: raw, as: UTF8.self)
                refused.append(Refusal(path: path + "/" + shown,
                                       reason: "\(path)/\(shown): file name is not valid UTF-8 (bytes \(Hex.encode(raw))); rename it to ingest it",
                                       quarantine: true))
            }
        }
        return (names.sorted(), refused)
    }
}
