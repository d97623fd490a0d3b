import Dispatch
import EvidenceCore
import Foundation
import Glibc

/// The content-addressed store: `objects/sha256/ab/cd/<hex>`, written through `tmp/`
/// (temp file, fsync, rename, directory fsync), objects read-only, one object per content.
///
/// Safe to use from several processes at once on one home: temp names carry the writer's
/// pid, and only temp files of dead writers are cleaned.
public final class ObjectStore: Sendable {
    public let home: String
    public let objectsDir: String
    public let tmpDir: String

    public struct IngestResult: Sendable {
        public var digest: SHA256Digest
        public var size: Int64
        /// false when the store already had this content (deduplicated, nothing written).
        public var newObject: Bool
        /// The source as it was when read (identical before and after the read).
        public var source: SourceStat
    }

    /// Opens (creating if needed) the store under `home` and removes temp files left by
    /// writers that no longer run.
    public init(home: String) throws(StoreError) {
        self.home = home
        self.objectsDir = home + "/objects/sha256"
        self.tmpDir = home + "/tmp"
        for dir in [home, home + "/objects", objectsDir, tmpDir] {
            try Self.makeDirectory(dir)
        }

        // The 256 first-level fan-out folders exist from the start: storing an object then
        // creates (and fsyncs) at most one new folder instead of two.
        if access(objectsDir + "/ff", F_OK) != 0 {
            for b in 0..<256 { try Self.makeDirectory(objectsDir + "/" + Hex.encode([UInt8(b)])) }
            try Self.fsyncDirectory(objectsDir)
        }
        cleanStaleTemps()
    }

    public func objectPath(_ d: SHA256Digest) -> String {
        let h = d.hex
        return "\(objectsDir)/\(h.prefix(2))/\(h.dropFirst(2).prefix(2))/\(h)"
    }

    public func contains(_ d: SHA256Digest) -> Bool {
        access(objectPath(d), F_OK) == 0
    }

    /// Size of the stored object, or nil if it is missing.
    public func objectSize(_ d: SHA256Digest) -> Int64? {
        var st = stat()
        guard stat(objectPath(d), &st) == 0 else { return nil }
        return Int64(st.st_size)
    }

    // MARK: Ingest

    /// Reads `path` once, hashing and copying it into the store in the same pass, and makes it
    /// durable: `stage` then `commit` of that one object.
    public func ingest(path: String, followSymlinks: Bool = false, beneath root: String? = nil,
                       progress: ((Int64) -> Void)? = nil) throws(StoreError) -> IngestResult {
        let staged = try stage(path: path, followSymlinks: followSymlinks, beneath: root, progress: progress)
        return try Self.check(commit([staged])[0])
    }

    /// Reads `path` once, hashing and copying it into `tmp/` in the same pass; nothing is durable
    /// or in the store yet (`commit` does that, for many staged files at once).
    ///
    /// - Refuses symlinks unless `followSymlinks`, and anything not a regular file,
    ///   without opening it in a blocking way.
    /// - Throws `.changedDuringRead` when size, mtime or inode differ before vs after the
    ///   read (the writer was not done): nothing is stored under a possibly wrong hash.
    /// - On any error the temp file is removed and the store is unchanged; so is it when the
    ///   returned `StagedObject` is dropped without being committed.
    /// - With `beneath` (a watched root), the file is reached through its folder opened below that
    ///   root without following any link (`BeneathRoot`): a folder swapped for a link cannot make
    ///   the service read (and archive) a file outside the watched folder.
    public func stage(path: String, followSymlinks: Bool = false, beneath root: String? = nil,
                      progress: ((Int64) -> Void)? = nil) throws(StoreError) -> StagedObject {
        var folder: BeneathRoot?
        if let root {
            do { folder = try BeneathRoot(path: path, root: root) } catch {
                switch error {
                case .missing: throw .notFound(path: path)
                case .symlink: throw .symlink(path: path)
                case .outside(let p, let r): throw .notRegularFile(path: p, kind: "outside the watched folder \(r)")
                case .io(let p, let e): throw StoreError.from(errno: e, path: p, operation: "open folder")
                }
            }
        }
        /// lstat of the source, through its folder when there is one.
        func lstatSource() -> Result<SourceStat, StoreError> {
            guard let folder else { return SourceStat.lstat(path) }
            switch folder.stat() {
            case .success(let s): return .success(s)
            case .failure(.missing): return .failure(.notFound(path: path))
            case .failure(.io(_, let code)): return .failure(.ioError(path: path, operation: "lstat", errno: code))
            case .failure: return .failure(.symlink(path: path))
            }
        }
        let before = try Self.check(lstatSource())
        if before.kind == .symlink && !followSymlinks { throw .symlink(path: path) }
        if before.kind == .directory { throw .isDirectory(path: path) }
        if before.kind != .regular && before.kind != .symlink {
            throw .notRegularFile(path: path, kind: before.kind.rawValue)
        }
        let flags = O_RDONLY | O_CLOEXEC | O_NONBLOCK | (followSymlinks ? 0 : O_NOFOLLOW)
        let src = folder.map { openat($0.directory, $0.name, flags) } ?? open(path, flags)
        guard src >= 0 else { throw StoreError.from(errno: errno, path: path, operation: "open") }
        defer { close(src) }
        let opened = try Self.check(SourceStat.fstat(src, path: path))
        guard opened.kind == .regular else { throw .notRegularFile(path: path, kind: opened.kind.rawValue) }
        if before.kind == .regular && !opened.sameVersion(as: before) {
            throw .changedDuringRead(path: path, detail: opened.difference(from: before))
        }

        try checkFreeSpace(for: opened.size, path: path)
        let tmp = try TempFile(directory: tmpDir, store: home, source: path)
        var keepTemp = false
        defer { if !keepTemp { tmp.discard() } }

        let (digest, copied) = try copyAndHash(from: src, to: tmp, size: opened.size, path: path, progress: progress)

        // The same version from start to end, by the open descriptor and by the name.
        let afterFD = try Self.check(SourceStat.fstat(src, path: path))
        let afterPath: SourceStat
        switch lstatSource() {
        case .success(let s): afterPath = s
        case .failure(.notFound): throw .vanished(path: path)
        case .failure(let e): throw e
        }
        guard afterFD.sameVersion(as: opened), copied == opened.size else {
            throw .changedDuringRead(path: path, detail: copied != opened.size && afterFD.sameVersion(as: opened)
                                     ? "read \(copied) bytes of \(opened.size)" : afterFD.difference(from: opened))
        }
        let pathTarget = followSymlinks ? (try? Self.check(SourceStat.statFollowing(path))) ?? afterPath : afterPath
        guard pathTarget.device == opened.device, pathTarget.inode == opened.inode else {
            throw .changedDuringRead(path: path, detail: "replaced by another file")
        }
        keepTemp = true
        return StagedObject(temp: tmp, path: path, digest: digest, size: copied, source: opened)
    }

    /// Makes staged objects durable and puts them in the store, many at once (group commit):
    ///
    /// 1. every temp file's writeback is started, then each is fsynced (the first fsync's
    ///    journal commit carries the others' metadata, so the rest mostly wait for their data);
    /// 2. each is renamed, still in `tmp/`, to `<hex>.<pid>.<random>.obj` ("complete and durable
    ///    content of this hash"), and `tmp/` is fsynced once: from here every object of the
    ///    batch survives a crash;
    /// 3. each is renamed into `objects/sha256/ab/cd/<hex>` (or dropped if that content is there
    ///    already). A rename is atomic across a crash, so the object is then under one of its
    ///    two names; `init` moves any `.obj` left by a writer that died into place. No fan-out
    ///    folder is fsynced on this path: one folder fsync per batch, not one per object.
    ///
    /// Returns one result per staged object, in order: a failure (fsync, rename) concerns that
    /// object alone; every object returned as a success is durable. `.objectCorrupt` when the
    /// store holds this hash with another size.
    public func commit(_ batch: [StagedObject]) -> [Result<IngestResult, StoreError>] {
        var results = [Result<IngestResult, StoreError>?](repeating: nil, count: batch.count)
        for s in batch { s.temp.startWriteback() }
        var toSync: [Int] = []
        for (i, s) in batch.enumerated() {
            // Content in place already is durable (it was put there after its own batch's
            // folder fsync, or by recovery): this copy needs no fsync, it is dropped.
            guard let existing = objectSize(s.digest) else { toSync.append(i); continue }
            results[i] = existing == s.size
                ? .success(IngestResult(digest: s.digest, size: s.size, newObject: false, source: s.source))
                : .failure(.objectCorrupt(path: objectPath(s.digest), detail: "size \(existing) but content of this hash has \(s.size) bytes; run `evidence fsck`"))
        }
        let syncErrors = Self.syncAll(toSync.map { batch[$0].temp })
        var durable: [Int] = []
        for (i, syncError) in zip(toSync, syncErrors) {
            let s = batch[i]
            do throws(StoreError) {
                if let syncError { throw syncError }
                let name = "\(s.digest.hex).\(getpid()).\(UInt64.random(in: 0...UInt64.max)).obj"
                if rename(s.temp.path, tmpDir + "/" + name) != 0 {
                    throw StoreError.from(errno: errno, path: s.path, operation: "rename in \(tmpDir)")
                }
                s.temp.renamed(to: tmpDir + "/" + name)
                durable.append(i)
            } catch {
                results[i] = .failure(error)
            }
        }
        if !durable.isEmpty {
            do throws(StoreError) {
                try Self.fsyncDirectory(tmpDir)
            } catch {
                for i in durable { results[i] = .failure(error) }
                durable = []
            }
        }
        for i in durable {
            let s = batch[i]
            do throws(StoreError) {
                let newObject = try place(s.temp.path, digest: s.digest, size: s.size)
                s.temp.published()
                results[i] = .success(IngestResult(digest: s.digest, size: s.size, newObject: newObject, source: s.source))
            } catch {
                results[i] = .failure(error)
            }
        }
        return results.map { $0! }
    }

    /// fsyncs the temp files, many at once: each fsync of a file whose journal commit is already
    /// done still waits for a cache flush of the device, and flushes asked for together are
    /// merged by the block layer, so a batch costs a few flushes instead of one per file.
    /// Returns each file's error (nil: durable), in order.
    private static func syncAll(_ temps: [TempFile]) -> [StoreError?] {
        final class Work: @unchecked Sendable {   // `next` and `errors` guarded by `lock`
            let temps: [TempFile]
            var errors: [StoreError?]
            var next = 0
            let lock = NSLock()
            init(_ temps: [TempFile]) { self.temps = temps; errors = Array(repeating: nil, count: temps.count) }
            func run() {
                while true {
                    lock.lock()
                    let i = next
                    next += 1
                    lock.unlock()
                    guard i < temps.count else { return }
                    do throws(StoreError) { try temps[i].sync() } catch {
                        lock.lock(); errors[i] = error; lock.unlock()
                    }
                }
            }
        }
        let work = Work(temps)
        let helpers = min(temps.count, syncWidth) - 1
        let done = DispatchGroup()
        for _ in 0..<max(0, helpers) {
            done.enter()
            let thread = Thread { work.run(); done.leave() }
            thread.stackSize = 256 << 10
            thread.start()
        }
        work.run()
        done.wait()
        return work.errors
    }

    /// fsyncs in flight at once in a batch.
    static let syncWidth = 16

    /// Moves a durable `tmp/….obj` to its place; false when the store had that content already
    /// (the `.obj` is then removed).
    private func place(_ obj: String, digest: SHA256Digest, size: Int64) throws(StoreError) -> Bool {
        let final = objectPath(digest)
        if let existing = objectSize(digest) {
            guard existing == size else {
                throw .objectCorrupt(path: final, detail: "size \(existing) but content of this hash has \(size) bytes; run `evidence fsck`")
            }
            unlink(obj)
            return false
        }
        let dir = String(final[..<final.lastIndex(of: "/")!])
        // The 256 first-level folders exist from the start; make the parent only if it went missing.
        if mkdir(dir, 0o750) != 0 && errno == ENOENT {
            try Self.makeDirectory(String(dir[..<dir.lastIndex(of: "/")!]))
            try Self.makeDirectory(dir)
        }
        if rename(obj, final) != 0 {
            throw StoreError.from(errno: errno, path: final, operation: "rename")
        }
        return true
    }

    /// Stores bytes held in memory (proof receipts, certificates, manifests).
    @discardableResult
    public func put(_ data: Data) throws(StoreError) -> (digest: SHA256Digest, newObject: Bool) {
        let digest = SHA256Hasher.hash(data)
        if let existing = objectSize(digest), existing == Int64(data.count) { return (digest, false) }
        let tmp = try TempFile(directory: tmpDir, store: home, source: "(data)")
        var keep = false
        defer { if !keep { tmp.discard() } }
        let failure: StoreError? = data.withUnsafeBytes { raw in
            do throws(StoreError) { try tmp.write(raw); return nil } catch { return error }
        }
        if let failure { throw failure }
        try tmp.sync()
        try publish(tmp, as: objectPath(digest))
        keep = true
        return (digest, true)
    }

    /// Reads a stored object fully into memory (small objects only: proofs, certificates).
    public func read(_ d: SHA256Digest) throws(StoreError) -> Data {
        let p = objectPath(d)
        guard let data = FileManager.default.contents(atPath: p) else {
            throw access(p, F_OK) == 0 ? .permissionDenied(path: p) : .notFound(path: p)
        }
        return data
    }

    // MARK: Internals

    /// Refuses a file the store's file system cannot hold, before a byte is copied: a sparse
    /// or huge file would otherwise fill the disk the catalog and every other item share.
    /// Keeps a margin free (2% of the file system, at most 64 MiB) for the catalog's WAL and
    /// the proofs, certificates and manifests still to come. Sizes come from `fstatvfs` of
    /// `tmp/`, counted as an unprivileged writer sees them (`f_bavail`).
    func checkFreeSpace(for size: Int64, path: String) throws(StoreError) {
        guard size > 0 else { return }
        var fs = statvfs()
        let fd = open(tmpDir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { return }   // the temp file's creation reports the real problem
        defer { close(fd) }
        guard fstatvfs(fd, &fs) == 0 else { return }
        let unit = Int64(fs.f_frsize > 0 ? fs.f_frsize : fs.f_bsize)
        let free = Int64(fs.f_bavail) * unit
        let margin = min(Int64(64) << 20, Int64(fs.f_blocks) * unit / 50)
        if size > free - margin {
            throw .insufficientSpace(path: path, store: home, needed: size, free: free, margin: margin)
        }
    }

    private func copyAndHash(from src: Int32, to tmp: TempFile, size: Int64, path: String,
                             progress: ((Int64) -> Void)?) throws(StoreError) -> (SHA256Digest, Int64) {
        let hasher = SHA256Hasher()
        let total = try ChunkPipeline(src: src, path: path, sink: tmp, expectedSize: size).run(hasher: hasher, progress: progress)
        return (hasher.finalize(), total)
    }

    private func publish(_ tmp: TempFile, as final: String) throws(StoreError) {
        let dir = String(final[..<final.lastIndex(of: "/")!])
        let parent = String(dir[..<dir.lastIndex(of: "/")!])
        let createdParent = access(parent, F_OK) != 0
        try Self.makeDirectory(parent)
        let createdDir = access(dir, F_OK) != 0
        try Self.makeDirectory(dir)
        if rename(tmp.path, final) != 0 {
            throw StoreError.from(errno: errno, path: final, operation: "rename")
        }
        try Self.fsyncDirectory(dir)
        if createdDir { try Self.fsyncDirectory(parent) }
        if createdParent { try Self.fsyncDirectory(objectsDir) }
    }

    /// Removes temp files of writers that no longer run, and finishes their commits: a
    /// `<hex>.<pid>.<random>.obj` is durable content of that hash whose writer died before
    /// renaming it into place (see `commit`).
    private func cleanStaleTemps() {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: tmpDir) else { return }
        var recovered = Set<String>()
        for name in names {
            let parts = name.split(separator: ".")
            let isObject = parts.count == 4 && parts[3] == "obj"
            // "<pid>.<random>.tmp" or "<hex>.<pid>.<random>.obj": left alone while that pid runs.
            if let pid = Int32(isObject ? parts[1] : parts.first ?? ""), pid > 0,
               kill(pid, 0) == 0 || errno == EPERM { continue }
            let path = tmpDir + "/" + name
            var st = stat()
            if isObject, let digest = SHA256Digest(hex: String(parts[0])), lstat(path, &st) == 0,
               (st.st_mode & S_IFMT) == S_IFREG, (try? place(path, digest: digest, size: Int64(st.st_size))) != nil {
                let final = objectPath(digest)
                recovered.insert(String(final[..<final.lastIndex(of: "/")!]))
                continue
            }
            unlink(path)
        }
        // Recovered objects are made durable under their final names before anyone relies on them.
        for dir in recovered {
            try? Self.fsyncDirectory(String(dir[..<dir.lastIndex(of: "/")!]))
            try? Self.fsyncDirectory(dir)
        }
    }

    static func check<T>(_ r: Result<T, StoreError>) throws(StoreError) -> T {
        switch r {
        case .success(let v): return v
        case .failure(let e): throw e
        }
    }

    static func makeDirectory(_ path: String) throws(StoreError) {
        if mkdir(path, 0o750) != 0 && errno != EEXIST {
            throw StoreError.from(errno: errno, path: path, operation: "mkdir")
        }
    }

    static func fsyncDirectory(_ path: String) throws(StoreError) {
        let fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { throw StoreError.from(errno: errno, path: path, operation: "open directory") }
        defer { close(fd) }
        if fsync(fd) != 0 { throw StoreError.from(errno: errno, path: path, operation: "fsync directory") }
    }
}

extension SourceStat {
    static func statFollowing(_ path: String) -> Result<SourceStat, StoreError> {
        followingStat(path)
    }
}

private func followingStat(_ path: String) -> Result<SourceStat, StoreError> {
    var st = stat()
    if stat(path, &st) != 0 { return .failure(.from(errno: errno, path: path, operation: "stat")) }
    return .success(SourceStat(st))
}
