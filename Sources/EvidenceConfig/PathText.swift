import Foundation

/// Lexical path handling (no file system access, symlinks not followed).
enum PathText {
    /// `p` made absolute against `base` (itself absolute) and normalized: `.`/`..`/`//` removed.
    static func resolve(_ p: String, relativeTo base: String) -> String {
        normalize(p.hasPrefix("/") ? p : base + "/" + p)
    }

    /// Removes empty and `.` components and applies `..` (never above `/`). Keeps a leading `/`.
    static func normalize(_ p: String) -> String {
        var parts: [Substring] = []
        for c in p.split(separator: "/", omittingEmptySubsequences: true) {
            switch c {
            case ".": continue
            case "..": if !parts.isEmpty { parts.removeLast() }
            default: parts.append(c)
            }
        }
        let joined = parts.joined(separator: "/")
        return p.hasPrefix("/") ? "/" + joined : (joined.isEmpty ? "." : joined)
    }

    /// The directory containing `path`, absolute (resolved against `currentDirectory`).
    static func directory(of path: String, currentDirectory: String = currentDirectoryPath()) -> String {
        let abs = resolve(path, relativeTo: currentDirectory)
        guard let slash = abs.lastIndex(of: "/"), slash != abs.startIndex else { return "/" }
        return String(abs[..<slash])
    }

    /// True when `child` is `parent` or below it (both absolute and normalized).
    static func isInside(_ child: String, _ parent: String) -> Bool {
        if parent == "/" { return true }
        return child == parent || child.hasPrefix(parent + "/")
    }

    /// Last path component.
    static func lastComponent(_ path: String) -> String {
        path.split(separator: "/").last.map(String.init) ?? path
    }

    static func currentDirectoryPath() -> String {
        FileManager.default.currentDirectoryPath
    }
}
