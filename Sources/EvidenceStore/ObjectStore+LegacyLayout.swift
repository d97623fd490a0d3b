import EvidenceCore
import Foundation
import Glibc

/// The store's former layout, `objects/sha256/ab/cd/<hex>`, and the move of its objects to
/// `objects/sha256/ab/<hex>`.
///
/// `flatten` runs when a store is opened and `objects/layout` does not say the move is done: in
/// each fan-out folder, every object of each two-level folder `cd` gets its new name by a hard
/// link and the fan-out folder is fsynced; only then are the old names removed (a crash between
/// the two leaves the same file under both names, which the next run resolves by their inode),
/// each `cd` folder fsynced, the emptied ones removed and the fan-out folder fsynced again. When
/// every folder is done, `objects/layout` is written (temp + fsync + rename) and the move never
/// runs again. Several processes may run it at once: a name already moved by another is skipped.
///
/// Nothing is lost on the way: an object is under its old name, its new one, or both, at every
/// moment, and an old name is removed only once the new one names the same inode. A name at the
/// old place that cannot take its new one (another file is there already) stays where it is for
/// `evidence fsck` to report (`misplaced`). The store looks for an object at both places whenever
/// it is not at its own (`ObjectStore.existingFolder`), so one left behind, or written at the old
/// place by a node of an earlier version, stays readable.
enum LegacyLayout {
    /// The file that records that the store has one fan-out level.
    static let markerName = "layout"
    static let markerText = "sha256/ab/<hex>: one fan-out level (written when the store was made or its objects were moved up)\n"

    /// The two-level place of `d`'s object.
    static func path(_ objectsDir: String, _ d: SHA256Digest) -> String {
        let h = d.hex
        return "\(objectsDir)/\(h.prefix(2))/\(h.dropFirst(2).prefix(2))/\(h)"
    }

    /// A two-level folder's name: two lower-case hex digits.
    static func isLeafName(_ name: String) -> Bool {
        name.utf8.count == 2 && name.utf8.allSatisfy { ($0 >= 48 && $0 <= 57) || ($0 >= 97 && $0 <= 102) }
    }

    /// Moves every object at its two-level place up one level (see the type's comment); true when
    /// the store holds none there any more and `objects/layout` says so.
    static func flatten(home: String, objectsDir: String) -> Bool {
        let marker = (objectsDir as NSString).deletingLastPathComponent + "/" + markerName
        if access(marker, F_OK) == 0 { return true }
        for b in 0..<256 {
            let fanOut = objectsDir + "/" + Hex.encode([UInt8(b)])
            let folder: BeneathRoot
            do { folder = try BeneathRoot(path: fanOut + "/-", root: home, sameFileSystem: true) } catch {
                if case .missing = error { continue }   // made again when an object needs it
                return false
            }
            guard let leaves = names(in: folder.directory)?.filter({ isLeafName($0) && isFolder(folder.directory, $0) }) else { return false }
            if leaves.isEmpty { continue }
            // 1. Every object of this fan-out folder gets its new name, and the folder is fsynced:
            //    the new names are durable before any old one is removed.
            var linked: [(leaf: Int32, names: [String])] = []
            defer { for l in linked where l.leaf >= 0 { close(l.leaf) } }
            for leaf in leaves {
                guard let moved = linkUp(leaf, in: folder.directory, fanOut: Hex.encode([UInt8(b)])) else { return false }
                linked.append(moved)
            }
            guard fsync(folder.directory) == 0 else { return false }
            // 2. The old names go, each two-level folder fsynced, then removed when empty.
            for l in linked where l.leaf >= 0 {
                for name in l.names where unlinkat(l.leaf, name, 0) != 0 && errno != ENOENT { return false }
                guard fsync(l.leaf) == 0 else { return false }
            }
            // A folder left non-empty holds something that is not an object of its place, or an
            // object whose new name another file has: kept for fsck, and the old place is still
            // looked at (`ObjectStore.existingFolder`).
            for leaf in leaves { _ = unlinkat(folder.directory, leaf, AT_REMOVEDIR) }
            guard fsync(folder.directory) == 0 else { return false }
        }
        do { try AtomicFile.write(Data(markerText.utf8), to: marker, mode: 0o440) } catch { return false }
        return true
    }

    /// Gives each object in the two-level folder `leaf` its name in `parent` (the fan-out folder
    /// `fanOut`) by a hard link; returns the folder (open, -1 when it is gone: the caller closes
    /// it) with the old names to remove once the new ones are durable; nil when a link failed for
    /// a reason other than a name already moved.
    private static func linkUp(_ leaf: String, in parent: Int32, fanOut: String) -> (leaf: Int32, names: [String])? {
        let dir = openat(parent, leaf, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        guard dir >= 0 else { return errno == ENOENT ? (-1, []) : nil }
        guard BeneathRoot.device(dir) == BeneathRoot.device(parent), let objects = names(in: dir) else { close(dir); return nil }
        var moved: [String] = []
        for name in objects {
            guard let d = SHA256Digest(hex: name), d.hex == name, name.hasPrefix(fanOut + leaf) else { continue }
            var old = Glibc.stat()
            guard fstatat(dir, name, &old, AT_SYMLINK_NOFOLLOW) == 0 else {
                if errno == ENOENT { continue }
                close(dir); return nil
            }
            guard SourceStat(old).kind == .regular else { continue }
            if linkat(dir, name, parent, name, 0) != 0 {
                switch errno {
                case EEXIST:
                    // Linked by a run that died before the old name was removed (the same inode),
                    // else a different file has the new name: this one stays for fsck.
                    var new = Glibc.stat()
                    guard fstatat(parent, name, &new, AT_SYMLINK_NOFOLLOW) == 0,
                          new.st_ino == old.st_ino, new.st_dev == old.st_dev else { continue }
                case ENOENT:
                    continue   // moved by another process meanwhile
                case EPERM, EOPNOTSUPP, EMLINK:
                    // A file system without hard links (or out of them): a rename, unless the
                    // object has its new name already.
                    var new = Glibc.stat()
                    if fstatat(parent, name, &new, AT_SYMLINK_NOFOLLOW) == 0 { continue }
                    if renameat(dir, name, parent, name) != 0 && errno != ENOENT { close(dir); return nil }
                    continue
                default:
                    close(dir); return nil
                }
            }
            moved.append(name)
        }
        return (dir, moved)
    }

    private static func isFolder(_ dir: Int32, _ name: String) -> Bool {
        var st = Glibc.stat()
        return fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && SourceStat(st).kind == .directory
    }

    /// The names in the folder `dir` (but `.` and `..`), or nil when it cannot be listed.
    static func names(in dir: Int32) -> [String]? {
        let fd = dup(dir)
        guard fd >= 0 else { return nil }
        guard let stream = fdopendir(fd) else { close(fd); return nil }
        defer { closedir(stream) }
        rewinddir(stream)   // the duplicate shares the descriptor's position
        var names: [String] = []
        while let entry = readdir(stream) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }
}
