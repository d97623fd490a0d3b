import Dispatch
import EvidenceCore
import Foundation
import Glibc
import Synchronization

/// The content-addressed store: `objects/sha256/ab/<hex>`, written through `tmp/`
/// (temp file, fsync, rename, directory fsync), objects read-only, one object per content.
///
/// One fan-out level of 256 folders, all made with the store: storing an object never makes a
/// folder. (Homes written before 2026-11 hold `objects/sha256/ab/cd/<hex>`, two levels: nearly
/// every object then made a new `cd` folder and fsynced its parent, a `mkdir` and an fsync more
/// per object. `init` moves such objects up one level, once; see `LegacyLayout`.)
///
/// Safe to use from several processes at once on one home: temp names carry the writer's
/// pid, and only temp files of dead writers are cleaned.
///
/// Every object is reached through its folder opened beneath the home (`BeneathRoot`: no
/// symbolic link followed, no other file system entered), and created, renamed and read
/// relative to folder descriptors (`openat`, `renameat`, `fstatat`): whoever can write in the
/// store's folders cannot, by swapping `objects/sha256/ab` for a link between a check and the
/// action, make the service write, read or hash a file outside the store.
public final class ObjectStore: Sendable {
    public let home: String
    public let objectsDir: String
    public let tmpDir: String
    /// The home still holds objects at their two-level place (`objects/sha256/ab/cd/<hex>`):
    /// moving them up could not be finished (a read-only home, say), and `check` does not call
    /// them misplaced. (Objects are looked for at both places in any case: `existingFolder`.)
    public let legacyLayout: Bool
    let hooks: Hooks
    /// `tmp/`, opened beneath the home when the store was opened.
    let tmpFolder: BeneathRoot

    /// Test hooks: called at the moment between a check and the action it guards, so a test can
    /// swap a folder for a symbolic link exactly there (no sleeps).
    public struct Hooks: Sendable {
        public enum Step: String, Sendable { case publish, read, export, check }
        /// Called with the step and the object's path right before the object is renamed into
        /// place (its folders made), opened for reading, or opened for `check`.
        public var beforeUse: @Sendable (Step, String) -> Void
        public init(beforeUse: @escaping @Sendable (Step, String) -> Void = { _, _ in }) { self.beforeUse = beforeUse }
    }

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
    public convenience init(home: String, hooks: Hooks = Hooks()) throws(StoreError) {
        try self.init(home: home, hooks: hooks, moveLegacyObjects: true)
    }

    /// `moveLegacyObjects: false` (tests) opens a home of the two-level layout as one whose
    /// objects could not be moved up (a read-only home).
    init(home: String, hooks: Hooks, moveLegacyObjects: Bool) throws(StoreError) {
        self.home = home
        self.hooks = hooks
        self.objectsDir = home + "/objects/sha256"
        self.tmpDir = home + "/tmp"
        for dir in [home, home + "/objects", objectsDir, tmpDir] {
            try Self.makeDirectory(dir)
        }

        // The 256 fan-out folders exist from the start: storing an object never makes a folder.
        if access(objectsDir + "/ff", F_OK) != 0 {
            for b in 0..<256 { try Self.makeDirectory(objectsDir + "/" + Hex.encode([UInt8(b)])) }
            try Self.fsyncDirectory(objectsDir)
        }
        legacyLayout = !(moveLegacyObjects && LegacyLayout.flatten(home: home, objectsDir: objectsDir))
        do { tmpFolder = try BeneathRoot(path: tmpDir + "/-", root: home, sameFileSystem: true) } catch {
            throw Self.storeError(error, path: tmpDir)
        }
        cleanStaleTemps()
    }

    /// `tmp/` by the descriptor opened when the store was opened (`/proc/self/fd/N`): files other
    /// code downloads or writes there by name land in that very folder, even if `tmp` was swapped
    /// for a link since.
    public var scratchDirectory: String { "/proc/self/fd/\(tmpFolder.directory)" }

    /// A `BeneathRoot` failure as the store reports it.
    static func storeError(_ failure: BeneathRoot.Failure, path: String) -> StoreError {
        switch failure {
        case .missing: return .notFound(path: path)
        case .symlink, .outside: return .unsafePath(path: path)
        case .io(_, let e): return .from(errno: e, path: path, operation: "open folder")
        }
    }

    /// The folder of `d`'s object, opened beneath the home (see the type's comment); `create`
    /// makes missing fan-out folders (0750, their parents fsynced).
    func objectFolder(_ d: SHA256Digest, create: Bool = false) throws(StoreError) -> BeneathRoot {
        try folder(at: objectPath(d), create: create)
    }

    private func folder(at path: String, create: Bool = false) throws(StoreError) -> BeneathRoot {
        do { return try BeneathRoot(path: path, root: home, createFolders: create ? 0o750 : nil, sameFileSystem: true) } catch {
            throw Self.storeError(error, path: path)
        }
    }

    /// The folder holding `d`'s object, with what `lstat` says of it there (nil when it is not
    /// there): its place, or its two-level place when a regular file is there and nothing at its
    /// place (a home not moved up yet, or not entirely, or written meanwhile by a node of an
    /// earlier version): a miss costs one failed folder lookup more.
    func existingFolder(_ d: SHA256Digest) throws(StoreError) -> (folder: BeneathRoot, stat: SourceStat?) {
        let current = try objectFolder(d)
        switch current.stat() {
        case .success(let st): return (current, st)
        case .failure(.missing): break
        case .failure: return (current, nil)
        }
        if let old = try? folder(at: LegacyLayout.path(objectsDir, d)), case .success(let st) = old.stat(), st.kind == .regular {
            return (old, st)
        }
        // Not at the old place either, or moved up since: `current` is its folder, held open.
        return (current, nil)
    }

    /// Opens `d`'s object for reading through its folder: a regular file, not a link; returns the
    /// descriptor (the caller closes it) and what `fstat` says of it.
    public func openObject(_ d: SHA256Digest) throws(StoreError) -> (fd: Int32, stat: SourceStat) {
        let (fd, stat, _) = try openExisting(d)
        return (fd, stat)
    }

    /// `openObject`, with the path of the file opened (its place or its old one) for messages.
    func openExisting(_ d: SHA256Digest) throws(StoreError) -> (fd: Int32, stat: SourceStat, path: String) {
        var folder = try existingFolder(d).folder
        var opened = folder.openRegularFile()
        if case .failure(.missing) = opened, folder.path != objectPath(d) {
            // Found at the old place and moved up by another process before it was opened.
            folder = try objectFolder(d)
            opened = folder.openRegularFile()
        }
        switch opened {
        case .success(let r): return (r.fd, r.stat, folder.path)
        case .failure(.missing): throw .notFound(path: folder.path)
        case .failure(.io(_, let e)) where e == EACCES || e == EPERM: throw .permissionDenied(path: folder.path)
        case .failure(.io(_, let e)) where e == EISDIR || e == EINVAL: throw .notRegularFile(path: folder.path, kind: e == EISDIR ? "directory" : "not a regular file")
        case .failure(let e): throw Self.storeError(e, path: folder.path)
        }
    }

    /// Re-hashes `d`'s object, read through its folder (`openObject`).
    public func hashObject(_ d: SHA256Digest) throws(StoreError) -> FileHasher.Result {
        let (fd, _, path) = try openExisting(d)
        defer { close(fd) }
        return try FileHasher.hash(fd: fd, path: path)
    }

    /// Where `d`'s object belongs: `objects/sha256/ab/<hex>`.
    public func objectPath(_ d: SHA256Digest) -> String {
        let h = d.hex
        return "\(objectsDir)/\(h.prefix(2))/\(h)"
    }

    public func contains(_ d: SHA256Digest) -> Bool {
        objectSize(d) != nil
    }

    /// Size of the stored object, or nil if it is missing (or not reachable without following a link).
    public func objectSize(_ d: SHA256Digest) -> Int64? {
        guard let st = try? existingFolder(d).stat, st.kind == .regular else { return nil }
        return st.size
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
    public func stage(path: String, followSymlinks: Bool = false, beneath root: String? = nil, digests: [DigestAlgorithm] = [],
                      progress: ((Int64) -> Void)? = nil) throws(StoreError) -> StagedObject {
        let copy = try SourceRead.copy(path: path, followSymlinks: followSymlinks, beneath: root, digests: digests,
                                       progress: progress) { size throws(StoreError) in
            try checkFreeSpace(for: size, path: path)
            return try TempFile(in: tmpFolder, folderPath: tmpDir, store: home, source: path)
        }
        return StagedObject(temp: copy.temp, path: path, digest: copy.digest, size: copy.size, source: copy.source, digests: copy.digests)
    }

    /// Makes staged objects durable and puts them in the store, many at once (group commit):
    ///
    /// 1. every temp file's writeback is started; then, 16 at a time, each object's folder is
    ///    opened beneath the home (made where missing, its parent fsynced) and the temp file is
    ///    fsynced, unless its content is in the store already (the fsyncs overlap: the device
    ///    flushes asked for together are merged, so a batch costs a few instead of one each);
    /// 2. each is renamed, still in `tmp/`, to `<hex>.<pid>.<random>.obj` ("complete and durable
    ///    content of this hash"), and `tmp/` is fsynced once, by its descriptor: from here every
    ///    object of the batch survives a crash;
    /// 3. each is renamed (`renameat` from `tmp/`'s descriptor into its folder's) to its hash's
    ///    name, or dropped if that content got there meanwhile. A rename is atomic across a
    ///    crash, so the object is then under one of its two names; `init` moves any `.obj` left
    ///    by a writer that died into place. No object folder is fsynced on this path: one folder
    ///    fsync per batch, not one per object.
    ///
    /// Returns one result per staged object, in order: a failure (fsync, folder, rename) concerns
    /// that object alone; every object returned as a success is durable. `.objectCorrupt` when
    /// the store holds this hash with another size.
    public func commit(_ batch: [StagedObject]) -> [Result<IngestResult, StoreError>] {
        for s in batch { s.temp.startWriteback() }
        let prepared = Self.concurrently(batch.count, width: Self.syncWidth) { i in self.prepare(batch[i]) }
        var results = [Result<IngestResult, StoreError>?](repeating: nil, count: batch.count)
        var durable: [(index: Int, folder: BeneathRoot)] = []
        for (i, p) in prepared.enumerated() {
            let s = batch[i]
            switch p {
            case .failure(let e): results[i] = .failure(e)
            case .success(nil):
                s.temp.discard()
                results[i] = .success(IngestResult(digest: s.digest, size: s.size, newObject: false, source: s.source))
            case .success(let folder?):
                do throws(StoreError) {
                    try s.temp.rename(to: "\(s.digest.hex).\(TempWriter.tag).\(UInt64.random(in: 0...UInt64.max)).obj")
                    durable.append((i, folder))
                } catch {
                    results[i] = .failure(error)
                }
            }
        }
        if !durable.isEmpty, fsync(tmpFolder.directory) != 0 {
            let e = StoreError.from(errno: errno, path: tmpDir, operation: "fsync directory")
            for d in durable { results[d.index] = .failure(e) }
            durable = []
        }
        for (i, folder) in durable {
            let s = batch[i]
            results[i] = Result { () throws(StoreError) in
                hooks.beforeUse(.publish, folder.path)
                let newObject: Bool
                if case .success(let st) = folder.stat(), st.kind == .regular {
                    // Put there since step 1 by another writer.
                    try Self.sameSize(st.size, s.size, path: folder.path)
                    s.temp.discard()
                    newObject = false
                } else {
                    try s.temp.place(into: folder.directory, as: folder.name, path: folder.path)
                    newObject = true
                }
                return IngestResult(digest: s.digest, size: s.size, newObject: newObject, source: s.source)
            }
        }
        return results.map { $0! }
    }

    /// Step 1 of `commit` for one object: its folder, opened (made if missing) beneath the home,
    /// once its temp file is durable; nil when the store has this content already (then no
    /// fsync is needed: the copy is dropped).
    private func prepare(_ s: StagedObject) -> Result<BeneathRoot?, StoreError> {
        Result { () throws(StoreError) -> BeneathRoot? in
            let found: (folder: BeneathRoot, stat: SourceStat?)
            switch Result(catching: { () throws(StoreError) in try existingFolder(s.digest) }) {
            case .success(let f): found = f
            case .failure(.notFound): found = (try objectFolder(s.digest, create: true), nil)
            case .failure(let e): throw e
            }
            // At its place, or at its old one (then `found.folder` is that one: nothing is placed there).
            if let st = found.stat, st.kind == .regular {
                try Self.sameSize(st.size, s.size, path: found.folder.path)
                return nil
            }
            try s.temp.sync()
            return found.folder
        }
    }

    static func sameSize(_ existing: Int64, _ size: Int64, path: String) throws(StoreError) {
        guard existing == size else {
            throw .objectCorrupt(path: path, detail: "size \(existing) but content of this hash has \(size) bytes; run `evidence fsck`")
        }
    }

    /// fsyncs in flight at once in a batch.
    static let syncWidth = 16

    /// `body(0..<count)`, on up to `width` threads at once (this one and helpers); the results
    /// in order. For blocking calls (fsync) whose waits overlap, off the cooperative pool.
    static func concurrently<T>(_ count: Int, width: Int, _ body: @escaping (Int) -> T) -> [T] {
        let work = ParallelWork(count, body)
        let done = DispatchGroup()
        for _ in 0..<max(0, min(count, width) - 1) {
            done.enter()
            let thread = Thread { work.run(); done.leave() }
            thread.stackSize = 256 << 10
            thread.start()
        }
        work.run()
        done.wait()
        return work.results.map { $0! }
    }

    /// Stores bytes held in memory (proof receipts, certificates, manifests).
    @discardableResult
    public func put(_ data: Data) throws(StoreError) -> (digest: SHA256Digest, newObject: Bool) {
        let digest = SHA256Hasher.hash(data)
        let found = try? existingFolder(digest)
        if let st = found?.stat, st.kind == .regular, st.size == Int64(data.count) { return (digest, false) }
        let tmp = try TempFile(in: tmpFolder, folderPath: tmpDir, store: home, source: "(data)")
        var keep = false
        defer { if !keep { tmp.discard() } }
        let failure: StoreError? = data.withUnsafeBytes { raw in
            do throws(StoreError) { try tmp.write(raw); return nil } catch { return error }
        }
        if let failure { throw failure }
        try tmp.sync()
        // Into the folder the lookup opened when that is the object's place (not its old one).
        try publish(tmp, as: digest, into: found.flatMap { $0.folder.path == objectPath(digest) ? $0.folder : nil })
        keep = true
        return (digest, true)
    }

    /// Reads a stored object fully into memory (small objects only: proofs, certificates),
    /// through its folder (`openObject`).
    public func read(_ d: SHA256Digest) throws(StoreError) -> Data {
        hooks.beforeUse(.read, objectPath(d))
        let (fd, st, p) = try openExisting(d)
        defer { close(fd) }
        var data = Data(count: Int(st.size))
        var got = 0
        while got < data.count {
            let n = data.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress! + got, $0.count - got) }
            if n < 0 { if errno == EINTR { continue }; throw StoreError.from(errno: errno, path: p, operation: "read") }
            if n == 0 { break }
            got += n
        }
        guard got == data.count else { throw .objectCorrupt(path: p, detail: "read \(got) of \(data.count) bytes") }
        return data
    }

    // MARK: Internals

    /// Refuses a file the store's file system cannot hold, before a byte is copied
    /// (`FreeSpace`, measured on `tmp/`).
    func checkFreeSpace(for size: Int64, path: String) throws(StoreError) {
        guard size > 0 else { return }
        let fd = open(tmpDir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { return }   // the temp file's creation reports the real problem
        defer { close(fd) }
        try FreeSpace.check(in: fd, for: size, path: path, storeName: home)
    }

    /// Renames the synced temp file to its hash's path: the fan-out folders are opened (made
    /// where missing, their parents fsynced) beneath the home, unless `opened` is that folder
    /// already, and the rename is relative to the descriptors of `tmp/` and of that folder, then
    /// the folder is fsynced.
    private func publish(_ tmp: TempFile, as digest: SHA256Digest, into opened: BeneathRoot?) throws(StoreError) {
        let folder: BeneathRoot
        if let opened { folder = opened } else { folder = try objectFolder(digest, create: true) }
        hooks.beforeUse(.publish, folder.path)
        try tmp.publish(into: folder.directory, as: folder.name, path: folder.path)
    }

    /// Removes temp files of writers that no longer run, and finishes their commits: a
    /// `<hex>.<pid>.<random>.obj` is durable content of that hash whose writer died before
    /// renaming it into place (see `commit`); it is moved into place if it still hashes to its
    /// name, through `tmp/`'s descriptor and its folder's, and that folder fsynced.
    private func cleanStaleTemps() {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: tmpDir) else { return }
        for name in names where !name.contains("/") {
            let parts = name.split(separator: ".")
            let isObject = parts.count == 4 && parts[3] == "obj"
            // "<pid>@<host>.<random>.tmp" or "<hex>.<pid>@<host>.<random>.obj": left alone while
            // that writer may run (`TempWriter`: its pid on this host, a day on another host).
            if let tag = isObject ? parts[1] : parts.first,
               TempWriter.mayBeAlive(tag, name: name, in: tmpFolder.directory) { continue }
            if isObject, let digest = SHA256Digest(hex: String(parts[0])), recover(name, as: digest) { continue }
            unlinkat(tmpFolder.directory, name, 0)
        }
    }

    /// Moves a dead writer's durable `tmp/<name>` to `digest`'s place; false when it is not
    /// that content (or not a regular file), or the store has that content already.
    private func recover(_ name: String, as digest: SHA256Digest) -> Bool {
        let fd = openat(tmpFolder.directory, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else { return false }
        let hashed = try? FileHasher.hash(fd: fd, path: tmpDir + "/" + name)
        close(fd)
        guard hashed?.digest == digest, contains(digest) == false,
              let folder = try? objectFolder(digest, create: true),
              renameat(tmpFolder.directory, name, folder.directory, folder.name) == 0 else { return false }
        fsync(folder.directory)
        return true
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

/// The shared state of `ObjectStore.concurrently`: the next index to take and the results.
private final class ParallelWork<T>: @unchecked Sendable {   // ownership hand-off: slot i is written only by the thread that took index i, and read after every thread has finished
    let body: (Int) -> T
    let count: Int
    private let next = Mutex(0)
    private let slots: UnsafeMutableBufferPointer<T?>
    init(_ count: Int, _ body: @escaping (Int) -> T) {
        self.count = count
        self.body = body
        slots = .allocate(capacity: count)
        slots.initialize(repeating: nil)
    }
    deinit {
        _ = slots.deinitialize()
        slots.deallocate()
    }
    /// Read once every `run` has returned.
    var results: [T?] { Array(slots) }
    func run() {
        while true {
            let i = next.withLock { n in
                defer { n += 1 }
                return n
            }
            guard i < count else { return }
            slots[i] = body(i)
        }
    }
}
