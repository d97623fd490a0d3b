import EvidenceCatalog
import EvidencePipeline
import Foundation
import Glibc

/// One condition of `/readyz`: nil when it holds, else why not (one plain-text line).
public struct ReadinessCheck: Sendable {
    public let name: String
    public let check: @Sendable () async -> String?

    public init(name: String, check: @escaping @Sendable () async -> String?) {
        self.name = name
        self.check = check
    }

    /// The catalog answers a query.
    public static func catalog(_ catalog: any Catalog) -> ReadinessCheck {
        ReadinessCheck(name: "catalog") {
            await onIOThread {
                do { _ = try catalog.recentItems(limit: 1); return nil } catch { return "\(error)" }
            }
        }
    }

    /// A file can be created, written and removed in `folder` (the store's `tmp/`, where every
    /// ingest and download starts). The probe is named `<pid>.readyz-…`, like the pipeline's
    /// own temp files, so other processes leave it alone.
    public static func writable(_ folder: String, name: String = "store") -> ReadinessCheck {
        ReadinessCheck(name: name) {
            await onIOThread {
                let path = folder + "/\(getpid()).readyz-\(UUID().uuidString)"
                let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
                guard fd >= 0 else { return "\(folder) is not writable: \(String(cString: strerror(errno)))" }
                defer { unlink(path) }
                let byte: UInt8 = 0x2e
                let written = withUnsafePointer(to: byte) { write(fd, $0, 1) }
                let err = errno
                close(fd)
                return written == 1 ? nil : "\(folder): cannot write: \(String(cString: strerror(err)))"
            }
        }
    }

    /// `evidence run`'s own parts: the catalog, the store's tmp folder, the watcher (every rule's
    /// initial scan done) and the job runner (claiming jobs, not shutting down).
    public static func pipeline(_ pipeline: Pipeline) -> [ReadinessCheck] {
        let watch = pipeline.watchService, runner = pipeline.jobRunner
        return [
            catalog(pipeline.home.catalog),
            writable(pipeline.home.store.tmpDir),
            ReadinessCheck(name: "watcher") { watch.isWatching ? nil : "the watched folders' initial scan is not done" },
            ReadinessCheck(name: "jobs") { runner.isRunning ? nil : "the job runner is not running (starting or shutting down)" },
        ]
    }
}
