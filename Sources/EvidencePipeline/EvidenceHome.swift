import EvidenceCatalog
import EvidenceCore
import EvidenceStore
import Foundation

/// A home folder: the object store and the catalog that describes it.
public final class EvidenceHome: Sendable {
    public let path: String
    public let store: ObjectStore
    public let catalog: any Catalog
    /// Where the catalog is: the SQLite file in the home, or a PostgreSQL database.
    public let catalogLocation: CatalogLocation

    /// The SQLite catalog's file (even when the catalog is on PostgreSQL: then it is not used).
    public var catalogPath: String { path + "/catalog.sqlite" }

    public enum CatalogLocation: Sendable, Equatable {
        /// `catalog.sqlite` in the home: one host.
        case sqlite
        /// A PostgreSQL database shared by several nodes.
        case postgres(PostgresTarget)
    }

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

    /// Opens the home at `path`, creating it unless `mustExist`, with its catalog where
    /// `catalog` says (the custody head anchor stays in the home either way).
    public init(path: String, mustExist: Bool = false, catalog location: CatalogLocation = .sqlite) throws(OpenError) {
        let abs = path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path
        self.path = (abs as NSString).standardizingPath
        self.catalogLocation = location
        let marker = location == .sqlite ? "/catalog.sqlite" : "/objects"
        if mustExist, !FileManager.default.fileExists(atPath: self.path + marker) {
            throw .missing(self.path)
        }
        do { store = try ObjectStore(home: self.path) } catch { throw .store(error) }
        switch location {
        case .sqlite:
            do { catalog = try SQLiteCatalog(path: self.path + "/catalog.sqlite") } catch { throw .catalog(error) }
        case .postgres(let target):
            do { catalog = try PostgresCatalog(target, headPath: self.path + "/custody.head") } catch { throw .catalog(error) }
        }
    }
}
