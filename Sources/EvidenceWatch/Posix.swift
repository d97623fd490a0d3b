import Glibc

// Thin, byte-exact wrappers over the system calls the watcher uses. Paths are carried as
// `[UInt8]` (no NUL) at this level: Linux file names are bytes, and a Swift `String` built
// from arbitrary bytes would lose the invalid ones.

/// inotify(7) constants (as UInt32; the C macros import with assorted integer types).
enum IN {
    static let modify: UInt32 = 0x0000_0002
    static let attrib: UInt32 = 0x0000_0004
    static let closeWrite: UInt32 = 0x0000_0008
    static let movedFrom: UInt32 = 0x0000_0040
    static let movedTo: UInt32 = 0x0000_0080
    static let create: UInt32 = 0x0000_0100
    static let delete: UInt32 = 0x0000_0200
    static let deleteSelf: UInt32 = 0x0000_0400
    static let moveSelf: UInt32 = 0x0000_0800
    static let unmount: UInt32 = 0x0000_2000
    static let queueOverflow: UInt32 = 0x0000_4000
    static let ignored: UInt32 = 0x0000_8000
    static let onlyDir: UInt32 = 0x0100_0000
    static let dontFollow: UInt32 = 0x0200_0000
    static let exclUnlink: UInt32 = 0x0400_0000
    static let isDir: UInt32 = 0x4000_0000

    /// What every watched directory asks for. Beyond the brief's list, IN_DELETE and
    /// IN_MOVED_FROM let the watcher forget paths that left (bounded memory), and
    /// IN_EXCL_UNLINK stops events for already-unlinked children.
    static let directoryMask: UInt32 =
        closeWrite | movedTo | create | modify | attrib | deleteSelf | moveSelf
        | delete | movedFrom | onlyDir | exclUnlink

    static let initNonBlock: Int32 = 0o4000
    static let initCloexec: Int32 = 0o2000000
}

enum FileKind: Equatable {
    case regular, directory, symlink, fifo, socket, charDevice, blockDevice, other

    init(mode: UInt32) {
        switch mode & 0o170000 {
        case 0o100000: self = .regular
        case 0o040000: self = .directory
        case 0o120000: self = .symlink
        case 0o010000: self = .fifo
        case 0o140000: self = .socket
        case 0o020000: self = .charDevice
        case 0o060000: self = .blockDevice
        default: self = .other
        }
    }

    /// Why a non-regular file is not taken (the `.rejected` reason).
    var rejectionReason: String {
        switch self {
        case .symlink: return "symbolic link (not followed)"
        // The same words as `evidence ingest` uses (StoreError.notRegularFile), so one grep
        // finds a refused device whichever path met it.
        case .fifo: return "not a regular file (FIFO)"
        case .socket: return "not a regular file (socket)"
        case .charDevice: return "not a regular file (character device)"
        case .blockDevice: return "not a regular file (block device)"
        case .directory: return "directory"
        case .regular: return "regular file"
        case .other: return "not a regular file"
        }
    }
}

struct FileStat {
    var kind: FileKind
    var identity: FileIdentity
    /// Names the inode has (`st_nlink`).
    var links: UInt64 = 1
}

enum StatResult {
    case ok(FileStat)
    case failed(Int32)
}

@inline(__always)
func withCPath<R>(_ bytes: [UInt8], _ body: (UnsafePointer<CChar>) -> R) -> R {
    var z = bytes
    z.append(0)
    return z.withUnsafeBufferPointer { buf in
        buf.baseAddress!.withMemoryRebound(to: CChar.self, capacity: buf.count) { body($0) }
    }
}

private func makeStat(_ st: stat) -> FileStat {
    let mtime = Int64(st.st_mtim.tv_sec) &* 1_000_000_000 &+ Int64(st.st_mtim.tv_nsec)
    return FileStat(
        kind: FileKind(mode: UInt32(st.st_mode)),
        identity: FileIdentity(
            device: UInt64(st.st_dev), inode: UInt64(st.st_ino),
            size: Int64(st.st_size), mtimeNanos: mtime),
        links: UInt64(st.st_nlink))
}

/// `lstat(2)`: never follows a symbolic link.
func lstatPath(_ path: [UInt8]) -> StatResult {
    var st = stat()
    let rc = withCPath(path) { lstat($0, &st) }
    return rc == 0 ? .ok(makeStat(st)) : .failed(errno)
}

/// `stat(2)`: follows symbolic links (used for roots only).
func statPath(_ path: [UInt8]) -> StatResult {
    var st = stat()
    let rc = withCPath(path) { stat($0, &st) }
    return rc == 0 ? .ok(makeStat(st)) : .failed(errno)
}

/// Entry names of a directory (without "." and ".."), as raw bytes.
func readDirectory(_ path: [UInt8]) -> Result<[[UInt8]], WatchErrno> {
    guard let dir = withCPath(path, { opendir($0) }) else { return .failure(WatchErrno(errno)) }
    defer { closedir(dir) }
    var names: [[UInt8]] = []
    while true {
        errno = 0
        guard let ent = readdir(dir) else {
            if errno != 0 { return .failure(WatchErrno(errno)) }
            break
        }
        let name: [UInt8] = withUnsafeBytes(of: &ent.pointee.d_name) { raw in
            let n = raw.firstIndex(of: 0) ?? raw.count
            return Array(raw[0..<n])
        }
        if name == [0x2E] || name == [0x2E, 0x2E] || name.isEmpty { continue }
        names.append(name)
    }
    return .success(names)
}

struct WatchErrno: Error {
    var code: Int32
    init(_ code: Int32) { self.code = code }
}

/// `dir + "/" + name` on bytes.
func joinPath(_ dir: [UInt8], _ name: [UInt8]) -> [UInt8] {
    var out = dir
    out.reserveCapacity(dir.count + name.count + 1)
    if out.last != 0x2F { out.append(0x2F) }
    out.append(contentsOf: name)
    return out
}

/// True when `path` is `prefix` itself or lies below it.
func isSameOrBelow(_ path: [UInt8], _ prefix: [UInt8]) -> Bool {
    if path.count == prefix.count { return path == prefix }
    guard path.count > prefix.count, path.starts(with: prefix) else { return false }
    return prefix.last == 0x2F || path[prefix.count] == 0x2F
}

func hexString(_ bytes: [UInt8]) -> String {
    let digits: [Character] = Array("0123456789abcdef")
    var s = ""
    s.reserveCapacity(bytes.count * 2)
    for b in bytes {
        s.append(digits[Int(b >> 4)])
        s.append(digits[Int(b & 0x0F)])
    }
    return s
}

/// Nanoseconds on CLOCK_MONOTONIC.
func monotonicNanos() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return UInt64(ts.tv_sec) &* 1_000_000_000 &+ UInt64(ts.tv_nsec)
}

func seconds(toNanos s: Double) -> UInt64 {
    guard s > 0, s.isFinite else { return 0 }
    return UInt64(min(s, 1e9) * 1e9)
}

/// `fnmatch(3)` glob sets over raw names.
struct NameFilter {
    private let include: [[CChar]]
    private let ignore: [[CChar]]

    init(include: [String], ignore: [String]) {
        self.include = include.map { Array($0.utf8CString) }
        self.ignore = ignore.map { Array($0.utf8CString) }
    }

    private static func matches(_ patterns: [[CChar]], _ name: UnsafePointer<CChar>) -> Bool {
        for p in patterns where p.withUnsafeBufferPointer({ fnmatch($0.baseAddress!, name, 0) == 0 }) {
            return true
        }
        return false
    }

    /// Name of a file: not ignored, and matching an include glob (empty include = all).
    func acceptsFile(_ name: [UInt8]) -> Bool {
        withCPath(name) { c in
            !Self.matches(ignore, c) && (include.isEmpty || Self.matches(include, c))
        }
    }

    /// Name of a subdirectory: descended unless ignored (include globs are for files).
    func acceptsDirectory(_ name: [UInt8]) -> Bool {
        withCPath(name) { !Self.matches(ignore, $0) }
    }
}
