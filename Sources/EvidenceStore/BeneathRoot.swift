import CEvidenceSys
import Foundation
import Glibc

/// A file's folder, opened beneath a watched root without following any symbolic link on the
/// way, so that what is then done to the file (`fstatat`, `unlinkat`, `renameat`, `openat`) acts
/// in that very folder, whatever the path leads to by then.
///
/// Whoever can write a recursive drop folder can swap a sub-folder for a symbolic link between a
/// check and an action by path: `unlink("<root>/sub/clip.mp4")` would then delete a file
/// outside the root. With the folder's descriptor the action stays where the check was.
/// `openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)` where the kernel has it (5.6), else one
/// `openat(O_NOFOLLOW | O_DIRECTORY)` per component.
public final class BeneathRoot: Sendable {
    /// The folder's descriptor (closed when this value goes away).
    public let directory: Int32
    /// The file's name in that folder.
    public let name: String
    /// The whole path, for messages.
    public let path: String

    public enum Failure: Error, Equatable, CustomStringConvertible {
        /// The path is not below the root.
        case outside(path: String, root: String)
        /// A folder on the way is a symbolic link (or not a folder, or, when asked, on another file system).
        case symlink(path: String)
        /// A folder on the way, or the root, does not exist.
        case missing(path: String)
        case io(path: String, errno: Int32)

        public var description: String {
            switch self {
            case .outside(let p, let r): return "\(p) is not below \(r)"
            case .symlink(let p): return "\(p): a folder on the way is a symbolic link, not a folder, or another file system; left alone"
            case .missing(let p): return "\(p): a folder on the way is gone"
            case .io(let p, let e): return "\(p): \(String(cString: strerror(e)))"
            }
        }
    }

    /// Opens the folder holding `path` beneath `root` (the root itself as configured; below it,
    /// no symbolic link is followed).
    ///
    /// - `createFolders`: missing folders on the way are made with this mode (`mkdirat` in the
    ///   folder opened just before, then opened without following a link), and each new one's
    ///   parent fsynced.
    /// - `sameFileSystem`: no folder on the way may be on another file system than the root (a
    ///   mount placed inside is refused like a link): the folder reached is the root's own.
    public init(path: String, root: String, createFolders: mode_t? = nil, sameFileSystem: Bool = false) throws(Failure) {
        let rootPath = root.hasSuffix("/") ? String(root.dropLast()) : root
        guard path.hasPrefix(rootPath + "/") else { throw .outside(path: path, root: root) }
        let rel = String(path.dropFirst(rootPath.count + 1))
        let parts = rel.split(separator: "/", omittingEmptySubsequences: true).map(String.init)
        guard let last = parts.last, !parts.contains(".."), !parts.contains(".") else { throw .outside(path: path, root: root) }
        let rootFD = open(rootPath.isEmpty ? "/" : rootPath, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard rootFD >= 0 else { throw errno == ENOENT ? .missing(path: path) : .io(path: rootPath, errno: errno) }
        let folders = Array(parts.dropLast())
        if folders.isEmpty {
            directory = rootFD
        } else {
            defer { close(rootFD) }
            if let mode = createFolders {
                directory = try Self.walk(rootFD, folders, create: mode, sameFileSystem: sameFileSystem, path: path)
            } else {
                directory = try Self.openBeneath(rootFD, folders.joined(separator: "/"), sameFileSystem: sameFileSystem, path: path)
            }
        }
        name = last
        self.path = path
    }

    deinit { close(directory) }

    static func device(_ fd: Int32) -> UInt64? {
        var st = Glibc.stat()
        return fstat(fd, &st) == 0 ? UInt64(st.st_dev) : nil
    }

    static func openBeneath(_ rootFD: Int32, _ rel: String, sameFileSystem: Bool, path: String) throws(Failure) -> Int32 {
        let flags = UInt64(O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        var resolve = UInt64(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS)
        if sameFileSystem { resolve |= UInt64(RESOLVE_NO_XDEV) }
        let fd = evidence_openat2(rootFD, rel, flags, resolve)
        if fd >= 0 { return fd }
        switch errno {
        case ENOSYS: break
        case ELOOP, ENOTDIR, EXDEV: throw .symlink(path: path)
        case ENOENT: throw .missing(path: path)
        default: throw .io(path: path, errno: errno)
        }
        // No openat2: one component at a time, refusing links.
        return try walk(rootFD, rel.split(separator: "/").map(String.init), create: nil, sameFileSystem: sameFileSystem, path: path)
    }

    /// One `openat(O_NOFOLLOW | O_DIRECTORY)` per component from `rootFD` (kept open by the
    /// caller), making missing ones with `create`.
    static func walk(_ rootFD: Int32, _ parts: [String], create: mode_t?, sameFileSystem: Bool, path: String) throws(Failure) -> Int32 {
        let rootDevice = sameFileSystem ? device(rootFD) : nil
        var current = dup(rootFD)
        guard current >= 0 else { throw .io(path: path, errno: errno) }
        for part in parts {
            var next = openat(current, part, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
            if next < 0, errno == ENOENT, let mode = create {
                if mkdirat(current, part, mode) == 0 {
                    fsync(current)
                } else if errno != EEXIST {
                    let saved = errno
                    close(current)
                    throw .io(path: path, errno: saved)
                }
                next = openat(current, part, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
            }
            let saved = errno
            close(current)
            guard next >= 0 else {
                if saved == ELOOP || saved == ENOTDIR { throw .symlink(path: path) }
                throw saved == ENOENT ? .missing(path: path) : .io(path: path, errno: saved)
            }
            if let rootDevice, device(next) != rootDevice {
                close(next)
                throw .symlink(path: path)
            }
            current = next
        }
        return current
    }

    /// `lstat` of the file itself, in its folder (a symbolic link is reported as one).
    public func stat() -> Result<SourceStat, Failure> {
        var st = Glibc.stat()
        guard fstatat(directory, name, &st, AT_SYMLINK_NOFOLLOW) == 0 else {
            return .failure(errno == ENOENT ? .missing(path: path) : .io(path: path, errno: errno))
        }
        return .success(SourceStat(st))
    }

    /// Removes the file from its folder and makes that durable.
    public func unlink() -> Failure? {
        guard unlinkat(directory, name, 0) == 0 else { return .io(path: path, errno: errno) }
        fsync(directory)
        return nil
    }

    /// Renames the file to `target` (an absolute path) on the same file system; `EXDEV` is returned
    /// as `.io` with that errno for the caller's copy.
    public func rename(to target: String) -> Failure? {
        guard renameat(directory, name, AT_FDCWD, target) == 0 else { return .io(path: path, errno: errno) }
        fsync(directory)
        return nil
    }

    /// Opens the file for reading, refusing a symbolic link.
    public func openForReading() -> Result<Int32, Failure> {
        let fd = openat(directory, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
        guard fd >= 0 else {
            switch errno {
            case ENOENT: return .failure(.missing(path: path))
            case ELOOP: return .failure(.symlink(path: path))
            default: return .failure(.io(path: path, errno: errno))
            }
        }
        return .success(fd)
    }

    /// Opens the file for reading if it is a regular file (a link, FIFO or device is refused
    /// without blocking on it); returns the descriptor and what `fstat` says of it.
    public func openRegularFile() -> Result<(fd: Int32, stat: SourceStat), Failure> {
        let fd = openat(directory, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else {
            switch errno {
            case ENOENT: return .failure(.missing(path: path))
            case ELOOP: return .failure(.symlink(path: path))
            default: return .failure(.io(path: path, errno: errno))
            }
        }
        var st = Glibc.stat()
        guard fstat(fd, &st) == 0 else { let e = errno; close(fd); return .failure(.io(path: path, errno: e)) }
        let s = SourceStat(st)
        guard s.kind == .regular else { close(fd); return .failure(.io(path: path, errno: s.kind == .directory ? EISDIR : EINVAL)) }
        // Reads block normally from here on.
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK)
        return .success((fd, s))
    }
}
