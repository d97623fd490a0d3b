import EvidenceCatalog
import EvidenceCore
import EvidenceS3
import EvidenceStore
import Foundation
import Glibc

/// A home folder: the object store and the catalog that describes it.
public final class EvidenceHome: Sendable {
    public let path: String
    /// The content-addressed store: `objects/` in the home (`ObjectStore`), or an S3 bucket.
    public let store: any ContentStore
    /// Where the store is.
    public let storeLocation: StoreLocation
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

    public enum StoreLocation: Sendable, Equatable {
        /// `objects/` in the home: one host, or a folder every node mounts.
        case local
        /// A bucket of an S3-compatible object store shared by several nodes; each node keeps
        /// only its temp files (`tmp/`), catalog (or none) and custody anchor in its own home.
        case s3(S3StoreSettings)
    }

    /// The local store, when the home's store is one (`objects/` in the home).
    public var localStore: ObjectStore? { store as? ObjectStore }

    /// The S3 store, when the home's store is one.
    public var s3Store: S3ObjectStore? { store as? S3ObjectStore }

    public enum OpenError: Error, CustomStringConvertible {
        case store(StoreError)
        case catalog(CatalogError)
        case missing(String)
        /// The catalog describes another store than this home's (a node whose home is not the
        /// shared one): its objects would not be found here, and this home's not by the others.
        case foreignStore(home: String, catalog: String, homeStore: String, catalogStore: String)
        public var description: String {
            switch self {
            case .store(let e): return e.description
            case .catalog(let e): return e.description
            case .foreignStore(let home, let catalog, let mine, let theirs):
                return "\(home): this home's store (\(mine)) is not the one \(catalog) describes (\(theirs)): every node sharing "
                    + "a catalog must use the same store: the same home on a filesystem they all mount (\(home)/store-id names it), "
                    + "or the same [store] bucket (its key \(S3ObjectStore.storeIDKey) names it)"
            case .missing(let p): return "\(p): no evidence home here (nothing ingested yet?); pass --home or set EVIDENCE_HOME"
            }
        }
    }

    /// Opens the home at `path`, creating it unless `mustExist`, with its catalog where
    /// `catalog` says (the custody head anchor stays in the home either way).
    public init(path: String, mustExist: Bool = false, catalog location: CatalogLocation = .sqlite,
                store storeLocation: StoreLocation = .local) throws(OpenError) {
        let abs = path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path
        self.path = (abs as NSString).standardizingPath
        self.catalogLocation = location
        self.storeLocation = storeLocation
        let marker = location == .sqlite ? "/catalog.sqlite" : storeLocation == .local ? "/objects" : "/tmp"
        if mustExist, !FileManager.default.fileExists(atPath: self.path + marker) {
            throw .missing(self.path)
        }
        switch storeLocation {
        case .local:
            do { store = try ObjectStore(home: self.path) } catch { throw .store(error) }
        case .s3(let settings):
            do { store = try S3ObjectStore(home: self.path, settings: settings) } catch { throw .store(error) }
        }
        switch location {
        case .sqlite:
            do { catalog = try SQLiteCatalog(path: self.path + "/catalog.sqlite") } catch { throw .catalog(error) }
        case .postgres(let target):
            do { catalog = try PostgresCatalog(target, headPath: self.path + "/custody.head") } catch { throw .catalog(error) }
        }
        let mine: String
        if let s3 = store as? S3ObjectStore {
            do { mine = try s3.storeID() } catch { throw .store(error) }
        } else {
            mine = try Self.storeID(home: self.path)
        }
        let recorded: String
        do { recorded = try catalog.claimStoreID(mine) } catch { throw .catalog(error) }
        guard recorded == mine else {
            throw .foreignStore(home: self.path, catalog: catalog.location, homeStore: mine, catalogStore: recorded)
        }
    }

    /// `storeID(home:)`, for tests of its race.
    public static func storeIDForTesting(home: String) throws -> String { try storeID(home: home) }

    /// This home's store identity (`store-id`, a random UUID written once, read-only), so a
    /// catalog can tell its own store from another. Two processes opening a new home at once
    /// agree on one: the file is made whole under a temporary name and linked into place, which
    /// fails if the other was first (then its id is read).
    static func storeID(home: String) throws(OpenError) -> String {
        let file = home + "/store-id"
        func read() -> String? {
            guard let text = try? String(contentsOfFile: file, encoding: .utf8) else { return nil }
            let id = text.trimmingCharacters(in: .whitespacesAndNewlines)
            return id.isEmpty ? nil : id
        }
        if let id = read() { return id }
        let id = UUID().uuidString.lowercased()
        let temp = home + "/.store-id.\(getpid()).\(UInt32.random(in: 0...UInt32.max))"
        do {
            try AtomicFile.write(Data((id + "\n").utf8), to: temp, mode: 0o440)
        } catch {
            throw .store(.ioError(path: error.path, operation: "writing the store identity (\(error.operation))", errno: error.errno))
        }
        defer { unlink(temp) }
        if link(temp, file) != 0 {
            let e = errno
            guard e == EEXIST, let theirs = read() else {
                throw .store(.ioError(path: file, operation: "creating the store identity", errno: e))
            }
            return theirs
        }
        let dir = open(home, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if dir >= 0 { fsync(dir); close(dir) }
        return id
    }
}
