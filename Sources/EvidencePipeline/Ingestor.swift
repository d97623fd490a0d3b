import EvidenceCatalog
import EvidenceCore
import EvidenceMedia
import EvidenceStore
import Foundation

/// Takes one file into the home: store (one read pass, hash + copy), media probe of the
/// stored copy, catalog record — or a clear refusal.
public struct Ingestor: Sendable {
    public let home: EvidenceHome
    /// Who is acting, for the custody log ("cli:root", "run:host:pid").
    public let actor: String
    /// Reads the stored copy's media facts: in this process by default, in a child process
    /// (`ChildMediaProbe`) for `evidence run` and `evidence ingest`.
    let prober: MediaProber

    public init(home: EvidenceHome, actor: String, prober: @escaping MediaProber = { MediaProbe.probe(path: $0, name: $1) }) {
        self.home = home
        self.actor = actor
        self.prober = prober
    }

    public enum Outcome: Sendable {
        /// Stored (or found already stored) and recorded.
        case ingested(IngestOutcome)
        /// Not taken: not a regular file, unreadable, vanished, … Recorded in quarantine when `quarantined`.
        case rejected(reason: String, quarantined: Bool)
        /// The file was still changing: nothing stored, try again later.
        case retryLater(reason: String)
        /// The home itself failed (disk full, catalog error): not the file's fault, nothing recorded.
        case failed(reason: String)

        public var isSuccess: Bool { if case .ingested = self { return true } else { return false } }
    }

    /// Ingests `path`. Never throws: every outcome is a value with a one-line reason that
    /// names the path.
    /// - Parameter lifecycle: the rule's lifecycle; its jobs are queued in the same transaction as the
    ///   catalog record (manual ingests pass none and queue nothing).
    /// - Parameter lifecycle: under a rule, the file is read through its folder opened beneath the
    ///   rule's root (`lifecycle.rule.path`) without following links.
    public func ingest(path: String, rule: String? = nil, lifecycle: ItemLifecycle? = nil, followSymlinks: Bool = false,
                       progress: ((Int64) -> Void)? = nil) -> Outcome {
        let result: ObjectStore.IngestResult
        do {
            result = try home.store.ingest(path: path, followSymlinks: followSymlinks, beneath: lifecycle?.rule.path,
                                           progress: progress)
        } catch {
            switch error {
            case .changedDuringRead:
                return .retryLater(reason: error.description)
            case .diskFull, .insufficientSpace, .objectCorrupt, .ioError, .remote:
                return .failed(reason: error.description)
            case .notFound:
                return .rejected(reason: error.description, quarantined: false)
            default:
                return quarantine(path: path, rule: rule, reason: error.description)
            }
        }
        // Probe the stored copy (or, for a remote store, the local copy that was hashed and sent):
        // exactly the bytes that were hashed.
        let name = (path as NSString).lastPathComponent
        let media = (try? home.store.withLocalCopy(of: result.digest) { prober($0, name) }) ?? nil
        let record = IngestRecord(sha256: result.digest, size: result.size, path: path, rule: rule,
                                  device: result.source.device, inode: result.source.inode,
                                  mtimeNanos: result.source.mtimeNanos, media: media,
                                  newObject: result.newObject, actor: actor,
                                  jobsForNewItem: lifecycle?.jobsForNewItem ?? [], jobsForNewSource: lifecycle?.jobsForNewSource ?? [],
                                  jobsForKnownItem: lifecycle?.jobsForKnownItem ?? [])
        do {
            return .ingested(try home.catalog.recordIngest(record))
        } catch {
            return .failed(reason: "\(path): stored as \(result.digest.hex) but not recorded: \(error.description)")
        }
    }

    /// Records a refusal in the catalog's quarantine list (the file itself is left in place).
    public func quarantine(path: String, rule: String?, reason: String) -> Outcome {
        do {
            _ = try home.catalog.recordQuarantine(path: path, rule: rule, reason: reason)
            return .rejected(reason: reason, quarantined: true)
        } catch {
            return .rejected(reason: "\(reason) (and could not be recorded: \(error.description))", quarantined: false)
        }
    }
}
