import EvidenceCatalog
import EvidenceCore
import EvidenceStore
import Foundation

/// A home folder: the object store and the catalog that describes it.
public final class EvidenceHome: Sendable {
    public let path: String
    public let store: ObjectStore
    public let catalog: SQLiteCatalog

    public var catalogPath: String { path + "/catalog.sqlite" }

    public enum OpenError: Error, CustomStringConvertible {
        case store(StoreError)
        case catalog(CatalogError)
        case missing(String)
        public var description: String {
            switch self {
            case .store(let e): return e.description
            case .catalog(let e): return e.description
            case .missing(let p): return "\(p): no evidence home here (nothing ingested yet?); pass --home or set EVIDENCE_HOME"
            }
        }
    }

    /// Opens the home at `path`, creating it unless `mustExist`.
    public init(path: String, mustExist: Bool = false) throws(OpenError) {
        let abs = path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path
        self.path = (abs as NSString).standardizingPath
        if mustExist, !FileManager.default.fileExists(atPath: self.path + "/catalog.sqlite") {
            throw .missing(self.path)
        }
        do { store = try ObjectStore(home: self.path) } catch { throw .store(error) }
        do { catalog = try SQLiteCatalog(path: self.path + "/catalog.sqlite") } catch { throw .catalog(error) }
    }
}
