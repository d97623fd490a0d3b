import COpenSSL
import Glibc

/// A file being written in the store's `tmp/`, removed unless published.
final class TempFile: @unchecked Sendable {
    private(set) var path: String
    let store: String
    let source: String
    /// -1 once closed (by `sync` or `discard`): a descriptor is never closed twice, which could
    /// close one another thread has just opened.
    private var fd: Int32
    private var written: Int64 = 0
    private var flushedTo: Int64 = 0
    /// Moved into the store: `discard` must not remove it any more.
    private(set) var isPublished = false
    /// Start writeback every 16 MiB so the final fsync has little left to do.
    private static let writebackStep: Int64 = 16 << 20

    init(directory: String, store: String, source: String) throws(StoreError) {
        self.store = store
        self.source = source
        var fd: Int32 = -1
        var path = ""
        for _ in 0..<8 {
            path = "\(directory)/\(getpid()).\(UInt64.random(in: 0...UInt64.max)).tmp"
            fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
            if fd >= 0 || errno != EEXIST { break }
        }
        guard fd >= 0 else { throw TempFile.error(errno, source: source, store: store, op: "create temp file in \(directory)") }
        self.fd = fd
        self.path = path
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
        guard fd >= 0, written > flushedTo else { return }
        _ = evidence_start_writeback(fd, off_t(flushedTo), off_t(written - flushedTo))
        flushedTo = written
    }

    /// fsync and make read-only: after this the bytes are durable.
    func sync() throws(StoreError) {
        if fchmod(fd, 0o440) != 0 { throw TempFile.error(errno, source: source, store: store, op: "chmod") }
        if fsync(fd) != 0 { throw TempFile.error(errno, source: source, store: store, op: "fsync") }
        close(fd)
        fd = -1
    }

    /// The file now has this name (still the caller's to publish or discard).
    func renamed(to newPath: String) { path = newPath }

    /// The file is in the store under its final name.
    func published() { isPublished = true }

    func discard() {
        if fd >= 0 { close(fd); fd = -1 }
        unlink(path)
    }
}
