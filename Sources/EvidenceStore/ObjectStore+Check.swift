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
    public func objectFiles() -> [String] {
        guard let e = FileManager.default.enumerator(atPath: objectsDir) else { return [] }
        var out: [String] = []
        while let rel = e.nextObject() as? String {
            let full = objectsDir + "/" + rel
            var st = stat()
            if lstat(full, &st) == 0, SourceStat(st).kind == .regular { out.append(full) }
        }
        return out.sorted()
    }

    /// Re-reads every object and checks that its content hashes to its name, that it sits at
    /// its fan-out path, and that it is read-only. `rehash: false` checks names and modes only.
    public func check(rehash: Bool = true, progress: ((Int, Int) -> Void)? = nil) -> CheckReport {
        var report = CheckReport()
        let files = objectFiles()
        for (i, path) in files.enumerated() {
            defer { progress?(i + 1, files.count) }
            let name = String(path[path.index(after: path.lastIndex(of: "/")!)...])
            guard let digest = SHA256Digest(hex: name), name == digest.hex else {
                report.problems.append(.init(kind: .strayFile, path: path, detail: "not a store object name"))
                continue
            }
            if objectPath(digest) != path {
                report.problems.append(.init(kind: .misplaced, path: path, detail: "expected at \(objectPath(digest))"))
            }
            var st = stat()
            if stat(path, &st) == 0, st.st_mode & 0o222 != 0 {
                report.problems.append(.init(kind: .writable, path: path,
                                             detail: "object is writable (mode \(String(st.st_mode & 0o777, radix: 8))); objects must be read-only"))
            }
            report.objects += 1
            report.bytes += Int64(st.st_size)
            report.digests.insert(digest)
            guard rehash else { continue }
            do {
                let r = try FileHasher.hash(path: path)
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
