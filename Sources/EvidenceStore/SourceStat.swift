import Glibc

/// What `lstat`/`fstat` said about a file, enough to tell whether it changed.
public struct SourceStat: Sendable, Hashable, Codable {
    public var device: UInt64
    public var inode: UInt64
    public var size: Int64
    public var mtimeNanos: Int64
    public var ctimeNanos: Int64
    public var mode: UInt32
    public var links: UInt64

    public init(_ st: stat) {
        device = UInt64(st.st_dev)
        inode = UInt64(st.st_ino)
        size = Int64(st.st_size)
        mtimeNanos = Int64(st.st_mtim.tv_sec) * 1_000_000_000 + Int64(st.st_mtim.tv_nsec)
        ctimeNanos = Int64(st.st_ctim.tv_sec) * 1_000_000_000 + Int64(st.st_ctim.tv_nsec)
        mode = UInt32(st.st_mode)
        links = UInt64(st.st_nlink)
    }

    public var kind: FileKind { FileKind(mode: mode) }

    /// Same version of the same file: device, inode, size and modification time agree.
    public func sameVersion(as o: SourceStat) -> Bool {
        device == o.device && inode == o.inode && size == o.size && mtimeNanos == o.mtimeNanos
    }

    /// Describes what differs, for error messages.
    public func difference(from o: SourceStat) -> String {
        var d: [String] = []
        if device != o.device || inode != o.inode { d.append("replaced by another file") }
        if size != o.size { d.append("size \(o.size) → \(size)") }
        if mtimeNanos != o.mtimeNanos { d.append("modified") }
        if d.isEmpty && ctimeNanos != o.ctimeNanos { d.append("metadata changed") }
        return d.isEmpty ? "unchanged" : d.joined(separator: ", ")
    }

    public static func lstat(_ path: String) -> Result<SourceStat, StoreError> {
        var st = stat()
        if Glibc.lstat(path, &st) != 0 { return .failure(.from(errno: errno, path: path, operation: "lstat")) }
        return .success(SourceStat(st))
    }

    public static func fstat(_ fd: Int32, path: String) -> Result<SourceStat, StoreError> {
        var st = stat()
        if Glibc.fstat(fd, &st) != 0 { return .failure(.from(errno: errno, path: path, operation: "fstat")) }
        return .success(SourceStat(st))
    }
}

public enum FileKind: String, Sendable, Codable {
    case regular = "regular file", directory, symlink = "symbolic link", fifo = "FIFO", socket
    case characterDevice = "character device", blockDevice = "block device", unknown

    public init(mode: UInt32) {
        switch mode & UInt32(S_IFMT) {
        case UInt32(S_IFREG): self = .regular
        case UInt32(S_IFDIR): self = .directory
        case UInt32(S_IFLNK): self = .symlink
        case UInt32(S_IFIFO): self = .fifo
        case UInt32(S_IFSOCK): self = .socket
        case UInt32(S_IFCHR): self = .characterDevice
        case UInt32(S_IFBLK): self = .blockDevice
        default: self = .unknown
        }
    }
}
