import COpenSSL
import Glibc

/// A file being written in a folder held open by descriptor (the store's `tmp/`, a bundle's
/// work folder), removed unless published. It is created, published (`renameat`) and removed
/// (`unlinkat`) relative to that descriptor, so a folder on the path swapped for a link
/// cannot move it elsewhere.
final class TempFile: @unchecked Sendable {   // ownership hand-off: written, published or discarded by one thread at a time (staged on one, committed on another)
    /// For messages only.
    private(set) var path: String
    private let folderPath: String
    /// The folder (our own duplicate of the descriptor given, or the descriptor of `owner`,
    /// kept open by holding it) and the file's name in it.
    let folder: Int32
    private let owner: BeneathRoot?
    private(set) var name: String
    let store: String
    let source: String
    private let fd: Int32
    private var written: Int64 = 0
    private var flushedTo: Int64 = 0
    /// Moved to its final name: `discard` must not remove it any more.
    private(set) var isPublished = false
    /// Start writeback every 16 MiB so the final fsync has little left to do.
    private static let writebackStep: Int64 = 16 << 20

    /// A new `<pid>@<host>.<random>.tmp` in the folder `folder` (a descriptor the caller keeps;
    /// `folderPath` is for messages).
    convenience init(in folder: Int32, folderPath: String, store: String, source: String) throws(StoreError) {
        let own = dup(folder)
        guard own >= 0 else { throw TempFile.error(errno, source: source, store: store, op: "create temp file in \(folderPath)") }
        try self.init(folder: own, owner: nil, folderPath: folderPath, store: store, source: source)
    }

    /// A new `<pid>@<host>.<random>.tmp` in `folder`, which it holds (no descriptor of its own: a
    /// burst keeps hundreds of staged files).
    convenience init(in folder: BeneathRoot, folderPath: String, store: String, source: String) throws(StoreError) {
        try self.init(folder: folder.directory, owner: folder, folderPath: folderPath, store: store, source: source)
    }

    private init(folder: Int32, owner: BeneathRoot?, folderPath: String, store: String, source: String) throws(StoreError) {
        self.store = store
        self.source = source
        guard let (fd, name) = TempWriter.create(in: folder) else {
            let e = errno
            if owner == nil { close(folder) }
            throw TempFile.error(e, source: source, store: store, op: "create temp file in \(folderPath)")
        }
        self.fd = fd
        self.folder = folder
        self.owner = owner
        self.name = name
        self.folderPath = folderPath
        self.path = folderPath + "/" + name
    }

    deinit { if owner == nil { close(folder) } }

    /// Renames the (synced) file to `target` in the folder `into`, then fsyncs that folder.
    func publish(into directory: Int32, as target: String, path: String) throws(StoreError) {
        try place(into: directory, as: target, path: path)
        if fsync(directory) != 0 { throw StoreError.from(errno: errno, path: path, operation: "fsync directory") }
    }

    /// Renames the (synced) file to `target` in the folder `into`, without fsyncing that folder:
    /// for a file already durable under a name of its own (see `ObjectStore.commit`).
    func place(into directory: Int32, as target: String, path: String) throws(StoreError) {
        guard renameat(folder, name, directory, target) == 0 else {
            throw StoreError.from(errno: errno, path: path, operation: "rename")
        }
        isPublished = true
    }

    /// Renames the file within its folder; it stays the caller's to place or discard.
    func rename(to newName: String) throws(StoreError) {
        guard renameat(folder, name, folder, newName) == 0 else {
            throw StoreError.from(errno: errno, path: path, operation: "rename in \(folderPath)")
        }
        name = newName
        path = folderPath + "/" + newName
    }

    static func error(_ e: Int32, source: String, store: String, op: String) -> StoreError {
        if e == ENOSPC || e == EDQUOT { return .diskFull(path: source, store: store) }
        return .ioError(path: source, operation: op, errno: e)
    }

    func write(_ bytes: UnsafeRawBufferPointer) throws(StoreError) {
        var off = 0
        while off < bytes.count {
            let n = Glibc.write(fd, bytes.baseAddress! + off, bytes.count - off)
            if n < 0 {
                if errno == EINTR { continue }
                throw TempFile.error(errno, source: source, store: store, op: "write to store")
            }
            off += n
        }
        written += Int64(bytes.count)
        if written - flushedTo >= Self.writebackStep { startWriteback() }
    }

    /// Starts writing what is not yet on its way to the disk, without waiting: a batch starts
    /// every file's writeback before the first fsync, so the fsyncs overlap.
    func startWriteback() {
        guard !closed, written > flushedTo else { return }
        _ = evidence_start_writeback(fd, off_t(flushedTo), off_t(written - flushedTo))
        flushedTo = written
    }

    /// Make read-only and fsync (the mode change is then durable too): after this the bytes are
    /// durable.
    func sync() throws(StoreError) {
        if fchmod(fd, 0o440) != 0 { throw TempFile.error(errno, source: source, store: store, op: "chmod") }
        if fsync(fd) != 0 { throw TempFile.error(errno, source: source, store: store, op: "fsync") }
        closeFile()
    }

    /// Removes the file unless it was placed (once: a second call does nothing).
    func discard() {
        closeFile()
        if !isPublished && !removed { unlinkat(folder, name, 0) }
        removed = true
    }
    private var removed = false

    /// Closes the file once (a synced file that is then discarded must not close a descriptor
    /// number another thread may have been given since).
    private var closed = false
    private func closeFile() {
        guard !closed else { return }
        closed = true
        close(fd)
    }
}
