import Glibc

/// Who wrote a temp file in a folder that several processes, and several hosts, may share (a
/// store's `tmp/` on a file system every node mounts): `<pid>@<host>`, the first dot-separated
/// part of every temp name the store, the S3 spool and the portal write.
///
/// A writer's leftovers are cleaned by whoever starts next; a pid says whether a writer still
/// runs only on its own host. Before the host was in the name, a node starting on host B took
/// host A's temp file for a dead writer's (no such pid on B) and removed it while A was still
/// writing it, or moved A's durable `.obj` into place under A's rename.
public enum TempWriter {
    /// This process: `<pid>@<host>`, the host name with every character but letters, digits
    /// and `-` made `_` (no `.`, so the tag is one part of a dot-separated name).
    public static let tag: String = "\(getpid())@\(host)"

    /// This host's name as it appears in tags.
    public static let host: String = {
        var buffer = [CChar](repeating: 0, count: 256)
        let raw = gethostname(&buffer, buffer.count - 1) == 0
            ? String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self) : ""
        let cleaned = String(raw.unicodeScalars.prefix(64).map { s -> Character in
            (s.isASCII && (s.properties.isAlphabetic || ("0"..."9").contains(s) || s == "-")) ? Character(s) : "_"
        })
        return cleaned.isEmpty ? "localhost" : cleaned
    }()

    /// How old another host's temp file must be before it counts as left by a dead writer:
    /// there is no pid check across hosts, and a live writer touches its file far more often.
    public static let foreignAge: Int = 24 * 3600

    /// Whether the writer `tag` may still be using a file last modified at `modified` (seconds
    /// since 1970): on this host, while its pid runs; on another host, for `foreignAge`. A bare
    /// pid (a name written before the host was in it) counts as this host's; a part that is no
    /// tag at all counts as dead.
    public static func mayBeAlive(_ tag: Substring, modified: Int?, now: Int = Int(time(nil))) -> Bool {
        let pieces = tag.split(separator: "@", maxSplits: 1, omittingEmptySubsequences: false)
        guard let pid = Int32(pieces[0]), pid > 0 else { return false }
        if pieces.count == 2, pieces[1] != host {
            guard let modified else { return true }
            return now - modified < foreignAge
        }
        return kill(pid, 0) == 0 || errno == EPERM
    }

    /// `mayBeAlive` for the entry `name` of the folder `folder` (a descriptor), by its mtime.
    public static func mayBeAlive(_ tag: Substring, name: String, in folder: Int32) -> Bool {
        var st = stat()
        let modified = fstatat(folder, name, &st, AT_SYMLINK_NOFOLLOW) == 0 ? Int(st.st_mtim.tv_sec) : nil
        return mayBeAlive(tag, modified: modified)
    }

    /// Creates a new temp file `<tag>.<random>.tmp` in the folder `folder` (a descriptor):
    /// exclusive, never through a link, mode 0600, open with `access` (`O_WRONLY` or `O_RDWR`).
    /// Returns its descriptor and name, or nil with `errno` set.
    public static func create(in folder: Int32, access: Int32 = O_WRONLY) -> (fd: Int32, name: String)? {
        for _ in 0..<8 {
            let name = "\(tag).\(UInt64.random(in: 0...UInt64.max)).tmp"
            let fd = openat(folder, name, access | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
            if fd >= 0 { return (fd, name) }
            if errno != EEXIST { return nil }
        }
        return nil
    }

    /// `mayBeAlive` for the file or folder at `path`, by its mtime.
    public static func mayBeAlive(_ tag: Substring, path: String) -> Bool {
        mayBeAlive(tag, name: path, in: AT_FDCWD)
    }
}
