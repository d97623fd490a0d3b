import EvidenceCore
import EvidencePipeline
import EvidenceStore
import Foundation
import Glibc
import ZIPFoundation

/// A case's disclosure package (`DisclosureWriter`'s folder) as one `.zip`: built in a work
/// folder under the home's `tmp/` (`<pid>.<random>.portal`, removed by a later start if this
/// process dies), opened, and the work folder deleted before a byte is sent.
public enum DisclosureDownload {
    /// Packs `folder` as `top/…` into a zip written at `out` (under a temporary name, fsynced,
    /// then renamed into place). Originals, usually compressed media already, are stored; the
    /// rest is deflated. `evidence disclose -o FILE.zip` uses it too.
    public static func zip(_ folder: String, to out: String, top: String) throws {
        let temp = out + ".partial-\(getpid())"
        try? FileManager.default.removeItem(atPath: temp)
        defer { try? FileManager.default.removeItem(atPath: temp) }
        let archive = try Archive(url: URL(fileURLWithPath: temp), accessMode: .create)
        for rel in try BundleDownload.files(under: folder) {
            let method: CompressionMethod = rel.contains("/original/") ? .none : .deflate
            try archive.addEntry(with: top + "/" + rel, fileURL: URL(fileURLWithPath: folder + "/" + rel), compressionMethod: method)
        }
        let fd = open(temp, O_RDONLY | O_CLOEXEC)
        if fd >= 0 { fsync(fd); close(fd) }
        chmod(temp, 0o600)
        guard rename(temp, out) == 0 else { throw BundleError.io(out, "rename failed: \(String(cString: strerror(errno)))") }
    }

    /// The package of `caseName` packed as a zip, open for reading (its name already removed), and its size.
    static func make(home: EvidenceHome, book: CaseBook, caseName: String, tsaCAFiles: [String: String], timezone: LocalTime,
                     actor: String) throws -> (FileHandle, Int64) {
        let work = home.store.tmpDir + "/\(TempWriter.tag).\(UInt64.random(in: 0...UInt64.max)).portal"
        guard mkdir(work, 0o700) == 0 else {
            throw BundleError.io(work, "cannot create work folder: \(String(cString: strerror(errno)))")
        }
        defer { try? FileManager.default.removeItem(atPath: work) }
        let top = "disclosure-\(caseName)"
        _ = try DisclosureWriter.write(home: home, book: book, caseName: caseName, to: work + "/" + top, tsaCAFiles: tsaCAFiles,
                                       timezone: timezone, actor: actor)
        let zipPath = work + "/package.zip"
        try zip(work + "/" + top, to: zipPath, top: top)
        return try BundleDownload.openForSending(zipPath)
    }
}
