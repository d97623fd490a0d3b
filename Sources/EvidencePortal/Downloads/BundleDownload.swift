import EvidenceCore
import EvidencePipeline
import EvidenceStore
import Foundation
import ZIPFoundation
#if canImport(Glibc)
import Glibc
#endif

/// An auditor's bundle (`BundleWriter`'s folder) packed as one `.zip` or `.tar` file.
///
/// Built in a work folder under the home's `tmp/` named `<pid>.<random>.portal`, so that it
/// can be told apart from the store's temp files and removed by a later start if this
/// process dies; the work folder is deleted before a byte is sent, and nothing is left behind
/// whether the client reads to the end, disconnects, or only asked for HEAD.
///
/// The `.tar` is streamed: the work folder holds only the small files (proofs, certificates,
/// custody, manifest); the original is read from the store object as it is sent and re-hashed
/// on the way, so a download costs no copy of the original in `tmp/` (`BundleStream`). The
/// `.zip` is packed into the work folder (the original copied, then zipped), then sent from it.
public struct BundleDownload: Sendable {
    public enum Format: String, Sendable, CaseIterable {
        case zip, tar
        public var contentType: String { self == .zip ? "application/zip" : "application/x-tar" }
    }

    public enum Body: Sendable {
        /// A packed archive, open for reading (its name already removed).
        case file(FileHandle)
        case tar(BundleStream)
    }

    public let body: Body
    public let size: Int64
    /// `evidence-item-<id>-<sha8>.zip`: ASCII only, safe in a Content-Disposition header.
    public let fileName: String

    /// The folder name inside the archive.
    public static func folderName(for item: Item) -> String { "evidence-item-\(item.id)-\(item.sha256.short)" }

    public static func make(home: EvidenceHome, item: Item, format: Format, tsaCAFiles: [String: String]) throws -> BundleDownload {
        let fm = FileManager.default
        let work = home.store.tmpDir + "/\(TempWriter.tag).\(UInt64.random(in: 0...UInt64.max)).portal"
        guard mkdir(work, 0o700) == 0 else {
            throw BundleError.io(work, "cannot create work folder: \(String(cString: strerror(errno)))")
        }
        defer { try? fm.removeItem(atPath: work) }
        let folder = folderName(for: item)
        let bundleDir = work + "/" + folder
        if format == .tar {
            let manifest = try BundleWriter.write(home: home, item: item, to: bundleDir, tsaCAFiles: tsaCAFiles, original: .streamedByCaller)
            let stream = try BundleStream(home: home, item: item, folder: folder, bundleDir: bundleDir,
                                          originalRel: "original/" + manifest.item.fileName, files: try Self.files(under: bundleDir))
            return BundleDownload(body: .tar(stream), size: stream.size, fileName: folder + "." + format.rawValue)
        }
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
        let (file, size) = try openForSending(archivePath)
        return BundleDownload(body: .file(file), size: size, fileName: folder + "." + format.rawValue)
    }

    /// The packed file, open for reading (the caller's work folder and its name go before a byte
    /// is sent), and its size.
    static func openForSending(_ path: String) throws -> (FileHandle, Int64) {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw BundleError.io(path, "cannot open: \(String(cString: strerror(errno)))") }
        var st = stat()
        guard fstat(fd, &st) == 0 else {
            close(fd)
            throw BundleError.io(path, "cannot stat: \(String(cString: strerror(errno)))")
        }
        return (FileHandle(fileDescriptor: fd, closeOnDealloc: true), Int64(st.st_size))
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
            guard let tag = name.split(separator: ".").first, tag.split(separator: "@").first.flatMap({ Int32($0) }) != nil else { continue }
            if TempWriter.mayBeAlive(tag, path: home.store.tmpDir + "/" + name) { continue }
            try? FileManager.default.removeItem(atPath: home.store.tmpDir + "/" + name)
        }
    }
}

/// A bundle's `.tar` as it will be sent: the headers and small files in memory, and the original
/// read from its store object (opened beneath the home when the bundle was built) while it is
/// sent, re-hashed on the way. The archive's bytes are those `TarWriter` writes for the bundle
/// folder, in the same order.
public final class BundleStream: Sendable {
    enum Part: Sendable {
        case bytes(Data)
        case original(size: Int64)
    }

    let parts: [Part]
    /// The store object, open for reading.
    let object: FileHandle
    let digest: SHA256Digest
    public let size: Int64

    init(home: EvidenceHome, item: Item, folder: String, bundleDir: String, originalRel: String, files: [String]) throws {
        let (fd, st) = try home.store.openObject(item.sha256)
        object = FileHandle(fileDescriptor: fd, closeOnDealloc: true)
        guard st.size == item.size else {
            throw BundleError.io(home.store.location(of: item.sha256), "store object is \(st.size) bytes, not \(item.size): run `evidence fsck`")
        }
        digest = item.sha256
        final class Collector {
            var parts: [Part] = []
            var pending = Data()
            func flush() { if !pending.isEmpty { parts.append(.bytes(pending)); pending = Data() } }
        }
        let out = Collector()
        let tar = TarWriter(output: .init(write: { out.pending.append($0) }))
        try tar.addDirectory(folder)
        var dirs = Set<String>()
        for rel in (files + [originalRel]).sorted() {
            let parent = (rel as NSString).deletingLastPathComponent
            if !parent.isEmpty, dirs.insert(parent).inserted { try tar.addDirectory(folder + "/" + parent) }
            if rel == originalRel {
                try tar.beginFile(folder + "/" + rel, size: Int(st.size))
                out.flush()
                out.parts.append(.original(size: st.size))
                try tar.endFile(size: Int(st.size))
            } else {
                try tar.addFile(folder + "/" + rel, from: bundleDir + "/" + rel)
            }
        }
        try tar.finish()
        out.flush()
        parts = out.parts
        size = parts.reduce(Int64(0)) { n, p in
            switch p {
            case .bytes(let d): return n + Int64(d.count)
            case .original(let s): return n + s
            }
        }
    }
}
