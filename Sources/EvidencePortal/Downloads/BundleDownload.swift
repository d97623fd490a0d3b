import EvidenceCore
import EvidencePipeline
import Foundation
import ZIPFoundation
#if canImport(Glibc)
import Glibc
#endif

/// An auditor's bundle (`BundleWriter`'s folder) packed as one `.zip` or `.tar` file.
///
/// Built in a work folder under the home's `tmp/` named `<pid>.<random>.portal`, so that it
/// can be told apart from the store's temp files and removed by a later start if this
/// process dies; the finished archive is opened, then the work folder is deleted at once: the
/// open descriptor keeps the bytes readable while they are sent, and nothing is left behind
/// whether the client reads to the end, disconnects, or only asked for HEAD.
public struct BundleDownload: Sendable {
    public enum Format: String, Sendable, CaseIterable {
        case zip, tar
        public var contentType: String { self == .zip ? "application/zip" : "application/x-tar" }
    }

    /// The archive, open for reading, and its size.
    public let file: FileHandle
    public let size: Int64
    /// `evidence-item-<id>-<sha8>.zip`: ASCII only, safe in a Content-Disposition header.
    public let fileName: String

    /// The folder name inside the archive.
    public static func folderName(for item: Item) -> String { "evidence-item-\(item.id)-\(item.sha256.short)" }

    public static func make(home: EvidenceHome, item: Item, format: Format, tsaCAFiles: [String: String]) throws -> BundleDownload {
        let fm = FileManager.default
        let work = home.store.tmpDir + "/\(getpid()).\(UInt64.random(in: 0...UInt64.max)).portal"
        guard mkdir(work, 0o700) == 0 else {
            throw BundleError.io(work, "cannot create work folder: \(String(cString: strerror(errno)))")
        }
        defer { try? fm.removeItem(atPath: work) }
        let folder = folderName(for: item)
        let bundleDir = work + "/" + folder
        try BundleWriter.write(home: home, item: item, to: bundleDir, tsaCAFiles: tsaCAFiles)
        // Sorted, so the same bundle always packs in the same order (SHA256SUMS first among equals is not needed).
        let files = try Self.files(under: bundleDir)
        let archivePath = work + "/bundle." + format.rawValue
        switch format {
        case .zip:
            let archive: Archive
            do { archive = try Archive(url: URL(fileURLWithPath: archivePath), accessMode: .create) } catch {
                throw BundleError.io(archivePath, "cannot create zip: \(error)")
            }
            try archive.addEntry(with: folder + "/", type: .directory, uncompressedSize: Int64(0), provider: { _, _ in Data() })
            for rel in files {
                // The original is usually compressed media already: store it; deflate the text.
                let method: CompressionMethod = rel.hasPrefix("original/") ? .none : .deflate
                try archive.addEntry(with: folder + "/" + rel, fileURL: URL(fileURLWithPath: bundleDir + "/" + rel),
                                     compressionMethod: method)
            }
        case .tar:
            guard fm.createFile(atPath: archivePath, contents: nil), let out = FileHandle(forWritingAtPath: archivePath) else {
                throw BundleError.io(archivePath, "cannot create tar")
            }
            defer { try? out.close() }
            let tar = TarWriter(writingTo: out)
            try tar.addDirectory(folder)
            var dirs = Set<String>()
            for rel in files {
                let parent = (rel as NSString).deletingLastPathComponent
                if !parent.isEmpty, dirs.insert(parent).inserted { try tar.addDirectory(folder + "/" + parent) }
                try tar.addFile(folder + "/" + rel, from: bundleDir + "/" + rel)
            }
            try tar.finish()
            try out.synchronize()
        }
        let fd = open(archivePath, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw BundleError.io(archivePath, "cannot open: \(String(cString: strerror(errno)))") }
        var st = stat()
        guard fstat(fd, &st) == 0 else {
            close(fd)
            throw BundleError.io(archivePath, "cannot stat: \(String(cString: strerror(errno)))")
        }
        return BundleDownload(file: FileHandle(fileDescriptor: fd, closeOnDealloc: true), size: Int64(st.st_size),
                              fileName: folder + "." + format.rawValue)
    }

    /// Regular files below `dir`, relative, sorted.
    static func files(under dir: String) throws -> [String] {
        var out: [String] = []
        guard let e = FileManager.default.enumerator(atPath: dir) else { throw BundleError.io(dir, "cannot list") }
        while let rel = e.nextObject() as? String {
            var isDir: ObjCBool = false
            if FileManager.default.fileExists(atPath: dir + "/" + rel, isDirectory: &isDir), !isDir.boolValue { out.append(rel) }
        }
        return out.sorted()
    }

    /// Removes work folders of portal processes that no longer run (a crash mid-download);
    /// the store's own clean-up only removes files.
    public static func removeStaleWorkFolders(home: EvidenceHome) {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: home.store.tmpDir) else { return }
        for name in names where name.hasSuffix(".portal") {
            guard let pid = Int32(name.split(separator: ".").first ?? ""), pid > 0 else { continue }
            if kill(pid, 0) == 0 || errno == EPERM { continue }
            try? FileManager.default.removeItem(atPath: home.store.tmpDir + "/" + name)
        }
    }
}
