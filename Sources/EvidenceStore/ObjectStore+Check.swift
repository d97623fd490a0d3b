import EvidenceCore
import Foundation
import Glibc

extension ObjectStore {
    public struct ObjectProblem: Sendable, Codable, Equatable, CustomStringConvertible {
        public enum Kind: String, Sendable, Codable { case hashMismatch, misplaced, writable, unreadable, strayFile }
        public var kind: Kind
        public var path: String
        public var detail: String
        public var description: String { "\(path): \(detail)" }
    }

    public struct CheckReport: Sendable, Codable {
        public var objects: Int = 0
        public var bytes: Int64 = 0
        public var problems: [ObjectProblem] = []
        public var digests: Set<SHA256Digest> = []
    }

    /// Every object's path below `objects/sha256`, as stored.
    public func objectFiles() -> [String] { walkObjects().files }

    /// The store's folders walked by descriptor from `objects/sha256` (opened beneath the home),
    /// never following a link: regular files in the fan-out folders are objects (and in their
    /// two-level folders, `ab/cd/`, where homes made before 2026-11 kept them); a link, or anything
    /// else where a fan-out folder or an object should be, is a problem and is not entered.
    func walkObjects() -> (files: [String], problems: [ObjectProblem]) {
        var files: [String] = []
        var problems: [ObjectProblem] = []
        let top: BeneathRoot
        do { top = try BeneathRoot(path: objectsDir + "/-", root: home, sameFileSystem: true) } catch {
            if case .missing = error { return ([], []) }
            return ([], [.init(kind: .unreadable, path: objectsDir, detail: error.description)])
        }
        func walk(_ dir: Int32, _ path: String, depth: Int) {
            guard let names = LegacyLayout.names(in: dir) else {
                problems.append(.init(kind: .unreadable, path: path, detail: "cannot list: \(String(cString: strerror(errno)))"))
                return
            }
            for name in names.sorted() {
                let full = path + "/" + name
                var st = Glibc.stat()
                guard fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) == 0 else { continue }
                let kind = SourceStat(st).kind
                if depth == 0 && kind != .directory {
                    problems.append(.init(kind: .strayFile, path: full, detail: kind == .symlink
                        ? "a symbolic link where a fan-out folder belongs; not followed" : "a \(kind.rawValue) where a fan-out folder belongs"))
                } else if depth == 0 || (depth == 1 && kind == .directory && LegacyLayout.isLeafName(name)) {
                    let sub = openat(dir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
                    guard sub >= 0 else {
                        problems.append(.init(kind: .unreadable, path: full, detail: "cannot open: \(String(cString: strerror(errno)))"))
                        continue
                    }
                    defer { close(sub) }
                    if UInt64(st.st_dev) != BeneathRoot.device(dir) {
                        problems.append(.init(kind: .strayFile, path: full, detail: "another file system mounted in the store; not entered"))
                        continue
                    }
                    walk(sub, full, depth: depth + 1)
                } else if kind == .regular {
                    files.append(full)
                } else {
                    problems.append(.init(kind: .strayFile, path: full, detail: kind == .symlink
                        ? "a symbolic link in the store; not followed" : "a \(kind.rawValue) in the store"))
                }
            }
        }
        walk(top.directory, objectsDir, depth: 0)
        return (files.sorted(), problems)
    }

    /// Re-reads every object and checks that its content hashes to its name, that it sits at
    /// its fan-out path, and that it is read-only. `rehash: false` checks names and modes only.
    /// Objects are opened through their folders beneath the home (`openObject`), never by a path
    /// a link could redirect.
    public func check(rehash: Bool = true, progress: ((Int, Int) -> Void)? = nil) -> CheckReport {
        var report = CheckReport()
        let (files, walkProblems) = walkObjects()
        report.problems = walkProblems
        for (i, path) in files.enumerated() {
            defer { progress?(i + 1, files.count) }
            let name = String(path[path.index(after: path.lastIndex(of: "/")!)...])
            guard let digest = SHA256Digest(hex: name), name == digest.hex else {
                report.problems.append(.init(kind: .strayFile, path: path, detail: "not a store object name"))
                continue
            }
            if objectPath(digest) != path && !(legacyLayout && LegacyLayout.path(objectsDir, digest) == path) {
                report.problems.append(.init(kind: .misplaced, path: path, detail: "expected at \(objectPath(digest))"))
            }
            hooks.beforeUse(.check, path)
            let fd: Int32, st: SourceStat
            switch Result(catching: { () throws(BeneathRoot.Failure) in try BeneathRoot(path: path, root: home, sameFileSystem: true) })
                .flatMap({ $0.openRegularFile() }) {
            case .success(let r): (fd, st) = r
            case .failure(let e):
                report.problems.append(.init(kind: .unreadable, path: path, detail: e.description))
                continue
            }
            defer { close(fd) }
            if st.mode & 0o222 != 0 {
                report.problems.append(.init(kind: .writable, path: path,
                                             detail: "object is writable (mode \(String(st.mode & 0o777, radix: 8))); objects must be read-only"))
            }
            report.objects += 1
            report.bytes += st.size
            report.digests.insert(digest)
            guard rehash else { continue }
            do {
                let r = try FileHasher.hash(fd: fd, path: path)
                if r.digest != digest {
                    report.problems.append(.init(kind: .hashMismatch, path: path,
                                                 detail: "content hashes to \(r.digest.hex), not its name"))
                }
            } catch {
                report.problems.append(.init(kind: .unreadable, path: path, detail: error.description))
            }
        }
        return report
    }
}
