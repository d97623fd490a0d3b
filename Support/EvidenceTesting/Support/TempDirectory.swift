import Foundation
import Glibc

/// A fresh folder for one test: made by `mkdtemp` (mode 0700) under the system's temporary
/// folder, and removed with everything in it when the value is released or `remove()` is called.
/// Tests that make read-only files or folders need not undo that: removal makes them writable first.
public final class TempDirectory: @unchecked Sendable {
    public let path: String

    /// `label` becomes part of the folder's name, to tell leftovers apart. `inMemory` puts the
    /// folder on /dev/shm (tmpfs) when there is one: for tests of tens of thousands of folders,
    /// which ext4 took minutes to remove here (3.6 ms a folder in a deep chain, under load).
    public init(_ label: String = "test", inMemory: Bool = false) {
        let parent = inMemory && access("/dev/shm", W_OK | X_OK) == 0 ? "/dev/shm" : NSTemporaryDirectory()
        let base = (parent as NSString).appendingPathComponent("evidence-\(label)-XXXXXX")
        var template = Array(base.utf8CString)
        let made = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
        guard let made else { preconditionFailure("mkdtemp in \(parent): \(String(cString: strerror(errno)))") }
        path = String(cString: made)
    }

    deinit { remove() }

    /// The path of `name` inside this folder (nothing is created).
    public func file(_ name: String) -> String { path + "/" + name }

    /// The names in this folder, sorted.
    public var contents: [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []).sorted()
    }

    /// Writes `data` to `name` (folders on the way made) with `mode`, and returns its path.
    @discardableResult
    public func write(_ name: String, _ data: Data, mode: Int? = nil) -> String {
        let target = file(name)
        try? FileManager.default.createDirectory(atPath: (target as NSString).deletingLastPathComponent,
                                                 withIntermediateDirectories: true)
        precondition(FileManager.default.createFile(atPath: target, contents: data), "cannot write \(target)")
        if let mode { _ = chmod(target, mode_t(mode)) }
        return target
    }

    /// Writes `text` as UTF-8 to `name`, as `write(_:_:mode:)` does for data.
    @discardableResult
    public func write(_ name: String, _ text: String, mode: Int? = nil) -> String {
        write(name, Data(text.utf8), mode: mode)
    }

    /// Removes the folder and everything in it; harmless when it is gone already.
    public func remove() {
        guard FileManager.default.fileExists(atPath: path) else { return }
        makeWritable(path)
        try? FileManager.default.removeItem(atPath: path)
    }

    private func makeWritable(_ folder: String) {
        _ = chmod(folder, 0o700)
        for name in (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? [] {
            let child = folder + "/" + name
            var st = stat()
            guard lstat(child, &st) == 0, (st.st_mode & S_IFMT) == S_IFDIR else { continue }
            makeWritable(child)
        }
    }
}
