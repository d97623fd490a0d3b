import Foundation

/// Every failure of the store names the path and the reason, in one line.
public enum StoreError: Error, CustomStringConvertible, Sendable, Equatable {
    case notFound(path: String)
    case permissionDenied(path: String)
    case symlink(path: String)
    case notRegularFile(path: String, kind: String)
    case isDirectory(path: String)
    case ioError(path: String, operation: String, errno: Int32)
    case diskFull(path: String, store: String)
    /// Refused before copying: the store's file system has fewer free bytes than the file
    /// needs plus a margin (`free` is what an unprivileged writer may use).
    case insufficientSpace(path: String, store: String, needed: Int64, free: Int64, margin: Int64)
    /// The source changed while it was read: the bytes hashed may not be one version of the file.
    case changedDuringRead(path: String, detail: String)
    case vanished(path: String)
    case objectCorrupt(path: String, detail: String)
    case nameNotUTF8(path: String)
    /// A folder on the way to a store object is a symbolic link or another file system: not followed.
    case unsafePath(path: String)
    /// A remote store (S3) failed or refused: `path` names the object's key (`s3://bucket/key`)
    /// or the bucket, `detail` what the server said. Not the source file's fault.
    case remote(path: String, detail: String)

    public var description: String {
        switch self {
        case .notFound(let p): return "\(p): no such file"
        case .permissionDenied(let p): return "\(p): permission denied (unreadable)"
        case .symlink(let p): return "\(p): symbolic link (not followed; pass --follow-symlinks to ingest its target)"
        case .notRegularFile(let p, let k): return "\(p): not a regular file (\(k)); rejected"
        case .isDirectory(let p): return "\(p): is a directory"
        case .ioError(let p, let op, let e): return "\(p): \(op) failed: \(String(cString: strerror(e)))"
        case .diskFull(let p, let store): return "\(p): no space left on device while writing to the store at \(store); nothing was stored"
        case .insufficientSpace(let p, let store, let needed, let free, let margin):
            return "\(p): no space left on device for it in the store at \(store): needs \(needed) bytes"
                + " (+ \(margin) kept free), \(free) free; nothing was copied"
        case .changedDuringRead(let p, let d): return "\(p): changed while being read (\(d)); not stored"
        case .vanished(let p): return "\(p): vanished while being read; not stored"
        case .objectCorrupt(let p, let d): return "\(p): store object is corrupt (\(d))"
        case .nameNotUTF8(let p): return "\(p): file name is not valid UTF-8"
        case .unsafePath(let p): return "\(p): a folder on the way is a symbolic link or another file system; not followed"
        case .remote(let p, let d): return "\(p): \(d)"
        }
    }

    /// Retrying later may succeed (the writer was still busy).
    public var isTransient: Bool {
        if case .changedDuringRead = self { return true }
        return false
    }

    public static func from(errno e: Int32, path: String, operation: String) -> StoreError {
        switch e {
        case ENOENT: return .notFound(path: path)
        case EACCES, EPERM: return .permissionDenied(path: path)
        case ELOOP: return .symlink(path: path)
        case ENOSPC, EDQUOT: return .diskFull(path: path, store: "?")
        case EISDIR: return .isDirectory(path: path)
        default: return .ioError(path: path, operation: operation, errno: e)
        }
    }
}
