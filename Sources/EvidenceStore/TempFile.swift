import COpenSSL
import Glibc

/// A file being written in a folder held open by descriptor (the store's `tmp/`, a bundle's
/// work folder), removed unless published. It is created, published (`renameat`) and removed
/// (`unlinkat`) relative to that descriptor, so a folder on the path swapped for a link
/// cannot move it elsewhere.
final class TempFile: @unchecked Sendable {
    /// For messages only.
    let path: String
    /// The folder (our own duplicate of the descriptor given) and the file's name in it.
    let folder: Int32
    let name: String
    let fd: Int32
    let store: String
    let source: String
    private var written: Int64 = 0
    private var flushedTo: Int64 = 0
    /// Start writeback every 16 MiB so the final fsync has little left to do.
    private static let writebackStep: Int64 = 16 << 20

    /// A new `<pid>.<random>.tmp` in the folder `folder` (a descriptor the caller keeps;
    /// `folderPath` is for messages).
    init(in folder: Int32, folderPath: String, store: String, source: String) throws(StoreError) {
        self.store = store
        self.source = source
        var fd: Int32 = -1
        var name = ""
        for _ in 0..<8 {
            name = "\(getpid()).\(UInt64.random(in: 0...UInt64.max)).tmp"
            fd = openat(folder, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
            if fd >= 0 || errno != EEXIST { break }
        }
        guard fd >= 0 else { throw TempFile.error(errno, source: source, store: store, op: "create temp file in \(folderPath)") }
        let own = dup(folder)
        guard own >= 0 else {
            let e = errno
            unlinkat(folder, name, 0)
            close(fd)
            throw TempFile.error(e, source: source, store: store, op: "create temp file in \(folderPath)")
        }
        self.fd = fd
        self.folder = own
        self.name = name
        self.path = folderPath + "/" + name
    }

    deinit { close(folder) }

    /// Renames the (synced) file to `target` in the folder `into`, then fsyncs that folder.
    func publish(into directory: Int32, as target: String, path: String) throws(StoreError) {
        guard renameat(folder, name, directory, target) == 0 else {
            throw StoreError.from(errno: errno, path: path, operation: "rename")
        }
        if fsync(directory) != 0 { throw StoreError.from(errno: errno, path: path, operation: "fsync directory") }
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
        if written - flushedTo >= Self.writebackStep {
            _ = evidence_start_writeback(fd, off_t(flushedTo), off_t(written - flushedTo))
            flushedTo = written
        }
    }

    /// fsync and make read-only: after this the bytes are durable.
    func sync() throws(StoreError) {
        if fsync(fd) != 0 { throw TempFile.error(errno, source: source, store: store, op: "fsync") }
        if fchmod(fd, 0o440) != 0 { throw TempFile.error(errno, source: source, store: store, op: "chmod") }
        closeFile()
    }

    func discard() {
        closeFile()
        unlinkat(folder, name, 0)
    }

    /// Closes the file once (a synced file that is then discarded must not close a descriptor
    /// number another thread may have been given since).
    private var closed = false
    private func closeFile() {
        guard !closed else { return }
        closed = true
        close(fd)
    }
}

