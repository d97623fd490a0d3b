/// Remote folder path → provider id, learned while walking or creating folders (Box and
/// ShareFile address everything by id). Lowercased keys: both services compare names without case.
actor FolderIDs {
    private var ids: [String: String] = [:]

    init(root: String) { ids[""] = root }

    func get(_ path: String) -> String? { ids[path.lowercased()] }
    func set(_ path: String, _ id: String) { ids[path.lowercased()] = id }
    func forget(_ path: String) { ids[path.lowercased()] = nil }
}
