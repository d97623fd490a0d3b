/// A service that addresses folders by id (Box, ShareFile): the three questions
/// `FolderResolver` asks it while turning a path into an id.
protocol FolderTree: Sendable {
    var account: String { get }
    /// The id of the folder paths are relative to (Box: `0`; ShareFile: the home folder).
    func rootFolderID() async throws(ArchiveError) -> String
    /// What is called `name` in folder `parent` (names compared without case), or nil.
    func folderChild(named name: String, in parent: String) async throws(ArchiveError) -> FolderChild?
    /// Creates folder `name` in `parent`. `.exists` when the name was taken meanwhile (by
    /// another worker, or by our own earlier attempt whose answer was lost), with the holder's
    /// id when the service names it.
    func createFolder(named name: String, in parent: String) async throws(ArchiveError) -> FolderCreation
}

struct FolderChild: Sendable, Equatable {
    var id: String
    var isFolder: Bool
}

enum FolderCreation: Sendable, Equatable {
    case created(id: String)
    case exists(id: String?)
}

/// Remote folder path → id for the id-addressed services, one per account: walks the path
/// from the root, creates what is missing (each folder once: concurrent callers wanting the
/// same folder wait for the one creation), re-resolves a create that conflicts by looking the
/// name up again, and caches every id learned. Keys are lowercased: both services compare
/// names without case.
actor FolderResolver {
    private var ids: [String: String] = [:]
    private var creating: [String: Task<Result<String, ArchiveError>, Never>] = [:]

    /// The id of folder `path` (`a/b`, relative to the root); nil when some part is missing and
    /// `create` is false. A file where a folder should be is a `.conflict`.
    func folderID(_ path: String, create: Bool, in tree: some FolderTree) async throws(ArchiveError) -> String? {
        let parts = path.split(separator: "/").map(String.init)
        let whole = parts.joined(separator: "/").lowercased()
        if let id = ids[whole] { return id }
        var id = try await root(tree)
        var current = ""
        for part in parts {
            current += (current.isEmpty ? "" : "/") + part
            let key = current.lowercased()
            if let known = ids[key] { id = known; continue }
            if let found = try await tree.folderChild(named: part, in: id) {
                guard found.isFolder else { throw ArchiveError(.conflict, "\(tree.account): \(current) is a file, not a folder") }
                id = found.id
            } else if create {
                id = try await createOnce(key, path: current, name: part, in: id, tree: tree)
            } else {
                return nil
            }
            ids[key] = id
        }
        return id
    }

    /// Forgets what is cached (a folder removed behind our back).
    func forget(_ path: String) {
        let key = path.split(separator: "/").joined(separator: "/").lowercased()
        ids = ids.filter { $0.key != key && !$0.key.hasPrefix(key + "/") }
    }

    private func root(_ tree: some FolderTree) async throws(ArchiveError) -> String {
        if let id = ids[""] { return id }
        let id = try await tree.rootFolderID()
        ids[""] = id
        return id
    }

    private func createOnce(_ key: String, path: String, name: String, in parent: String,
                            tree: some FolderTree) async throws(ArchiveError) -> String {
        if let known = ids[key] { return known }   // made by another caller since our lookup
        if let running = creating[key] { return try await running.value.get() }
        let task = Task { () async -> Result<String, ArchiveError> in
            do throws(ArchiveError) {
                switch try await tree.createFolder(named: name, in: parent) {
                case .created(let id), .exists(let id?):
                    return .success(id)
                case .exists(nil):
                    // Made meanwhile, and the service did not say by whom: look again.
                    guard let found = try await tree.folderChild(named: name, in: parent) else {
                        return .failure(ArchiveError(.transient, "\(tree.account): creating folder \(path): the name is taken, "
                                                     + "yet nothing is listed under it; will look again"))
                    }
                    guard found.isFolder else { return .failure(ArchiveError(.conflict, "\(tree.account): \(path) is a file, not a folder")) }
                    return .success(found.id)
                }
            } catch {
                return .failure(error)
            }
        }
        creating[key] = task
        let result = await task.value
        creating[key] = nil
        if case .success(let id) = result { ids[key] = id }
        return try result.get()
    }
}
