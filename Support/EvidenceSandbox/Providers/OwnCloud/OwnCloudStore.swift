import EvidenceCore
import EvidenceStore
import Foundation
import Glibc
import Hummingbird

/// One file or folder of the sandbox user's ownCloud home ("/" is the root folder).
struct OwnCloudEntry: Codable, Sendable {
    var fileID: Int64
    var folder: Bool
    var size: Int64 = 0
    var etag: String
    /// Seconds since 1970 (`X-OC-Mtime` when the client gave one).
    var mtime: Int64
    var digests: OwnCloudHasher.Digests?
    var blob: String = ""
    /// Nextcloud: the `OC-Checksum` the client sent, stored as it came (nil: none sent).
    var clientChecksum: String?
}

struct OwnCloudChunk: Codable, Sendable {
    var size: Int64
    var blob: String
    var mtime: Int64
}

/// A chunked-upload ("NG chunking") folder under `uploads/sandbox/<transfer-id>`.
struct OwnCloudUpload: Codable, Sendable {
    var created: Int64
    var etag: String
    var chunks: [String: OwnCloudChunk] = [:]
}

struct OwnCloudShare: Codable, Sendable {
    var id: Int64
    var fileID: Int64
    var token: String
    var permissions: Int
    var password: Bool
    /// `YYYY-MM-DD` or nil.
    var expiration: String?
    var stime: Int64
    var name: String
}

/// The ownCloud emulation's state, in memory and in `<state>/owncloud/state.json`
/// (rewritten atomically after every change); file bodies and chunks under `blobs/`.
actor OwnCloudStore {
    struct State: Codable {
        var version = 1
        var entries: [String: OwnCloudEntry] = [:]
        var uploads: [String: OwnCloudUpload] = [:]
        var shares: [OwnCloudShare] = []
        var nextFileID: Int64 = 10
        var nextShareID: Int64 = 1
    }

    enum PutOutcome: Sendable {
        case created(OwnCloudEntry)
        case replaced(OwnCloudEntry)
        case parentMissing
        case isFolder
        case exists
    }

    enum MoveOutcome: Sendable {
        case moved(created: Bool)
        case notFound
        case parentMissing
        case exists
        case identical
        case intoItself
    }

    let statePath: String
    let blobsDir: String
    let tmpDir: String
    let random: SandboxRandom
    private var state: State

    init(directory: String, random: SandboxRandom, now: Int64) throws {
        self.random = random
        statePath = (directory as NSString).appendingPathComponent("state.json")
        blobsDir = (directory as NSString).appendingPathComponent("blobs")
        tmpDir = (directory as NSString).appendingPathComponent("tmp")
        let fm = FileManager.default
        do { try fm.createDirectory(atPath: blobsDir, withIntermediateDirectories: true) } catch {
            throw SandboxError.stateDirectory("cannot create \(blobsDir): \(error)")
        }
        try? fm.removeItem(atPath: tmpDir)
        try? fm.createDirectory(atPath: tmpDir, withIntermediateDirectories: true)
        state = try StateFile.load(State.self, from: statePath) ?? State()
        if state.entries["/"] == nil {
            state.entries["/"] = OwnCloudEntry(fileID: state.nextFileID, folder: true, etag: Self.etag(random), mtime: now)
            state.nextFileID += 1
        }
    }

    static func etag(_ random: SandboxRandom) -> String {
        Hex.encode(random.bytes(7)).prefix(13).description
    }

    private func save() throws {
        try StateFile.save(state, to: statePath)
    }

    nonisolated func tempPath() -> String {
        (tmpDir as NSString).appendingPathComponent("in-\(random.slug(length: 16))")
    }

    nonisolated func blobPath(_ blob: String) -> String {
        (blobsDir as NSString).appendingPathComponent(blob)
    }

    static func parent(_ path: String) -> String {
        let p = (path as NSString).deletingLastPathComponent
        return p.isEmpty ? "/" : p
    }

    // MARK: Files

    func entry(_ path: String) -> OwnCloudEntry? { state.entries[path] }

    func entry(fileID: Int64) -> (String, OwnCloudEntry)? {
        state.entries.first { $0.value.fileID == fileID }.map { ($0.key, $0.value) }
    }

    func children(_ path: String) -> [(String, OwnCloudEntry)] {
        let prefix = path == "/" ? "/" : path + "/"
        return state.entries.filter { $0.key != "/" && $0.key.hasPrefix(prefix) && !$0.key.dropFirst(prefix.count).contains("/") }
            .sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
    }

    /// Total size below a folder (`quota-used-bytes`, `oc:size`).
    func treeSize(_ path: String) -> Int64 {
        let prefix = path == "/" ? "/" : path + "/"
        return state.entries.filter { $0.key.hasPrefix(prefix) && !$0.value.folder }.reduce(0) { $0 + $1.value.size }
    }

    /// New etags (and mtimes) up the tree, as ownCloud propagates changes to parents.
    private func propagate(from path: String, now: Int64) {
        var p = path
        while true {
            p = Self.parent(p)
            state.entries[p]?.etag = Self.etag(random)
            state.entries[p]?.mtime = now
            if p == "/" { break }
        }
    }

    func mkcol(_ path: String, now: Int64) throws -> Bool? {
        if state.entries[path] != nil { return false }
        guard let parent = state.entries[Self.parent(path)], parent.folder else { return nil }
        state.entries[path] = OwnCloudEntry(fileID: state.nextFileID, folder: true, etag: Self.etag(random), mtime: now)
        state.nextFileID += 1
        propagate(from: path, now: now)
        try save()
        return true
    }

    /// Moves `temp` into place as the file at `path`.
    func putFile(_ path: String, temp: String, size: Int64, digests: OwnCloudHasher.Digests, clientChecksum: String?,
                 mtime: Int64, ifNoneMatchStar: Bool, now: Int64) throws -> PutOutcome {
        guard let parent = state.entries[Self.parent(path)], parent.folder else { return .parentMissing }
        let existing = state.entries[path]
        if let existing, existing.folder { return .isFolder }
        if existing != nil && ifNoneMatchStar { return .exists }
        let blob = random.slug(length: 24)
        guard rename(temp, blobPath(blob)) == 0 else {
            throw DropboxFiles.IOError(description: "rename \(temp): \(String(cString: strerror(errno)))")
        }
        if let old = existing { unlink(blobPath(old.blob)) }
        var entry = OwnCloudEntry(fileID: existing?.fileID ?? state.nextFileID, folder: false, size: size,
                                  etag: Self.etag(random), mtime: mtime, digests: digests, blob: blob, clientChecksum: clientChecksum)
        if existing == nil { state.nextFileID += 1 } else { entry.fileID = existing!.fileID }
        state.entries[path] = entry
        propagate(from: path, now: now)
        try save()
        return existing == nil ? .created(entry) : .replaced(entry)
    }

    func delete(_ path: String, now: Int64) throws -> Bool {
        guard state.entries[path] != nil, path != "/" else { return false }
        let removed = state.entries.filter { $0.key == path || $0.key.hasPrefix(path + "/") }
        let ids = Set(removed.values.map(\.fileID))
        for (key, e) in removed {
            state.entries.removeValue(forKey: key)
            if !e.folder { unlink(blobPath(e.blob)) }
        }
        state.shares.removeAll { ids.contains($0.fileID) }
        propagate(from: path, now: now)
        try save()
        return true
    }

    func move(_ from: String, to: String, overwrite: Bool, now: Int64) throws -> MoveOutcome {
        guard state.entries[from] != nil, from != "/" else { return .notFound }
        if from == to { return .identical }
        if to.hasPrefix(from + "/") { return .intoItself }
        guard let parent = state.entries[Self.parent(to)], parent.folder else { return .parentMissing }
        let existed = state.entries[to] != nil
        if existed {
            guard overwrite else { return .exists }
            _ = try delete(to, now: now)
        }
        let moving = state.entries.filter { $0.key == from || $0.key.hasPrefix(from + "/") }
        for (key, e) in moving {
            state.entries.removeValue(forKey: key)
            state.entries[to + key.dropFirst(from.count)] = e
        }
        state.entries[to]?.etag = Self.etag(random)
        propagate(from: from, now: now)
        propagate(from: to, now: now)
        try save()
        return .moved(created: !existed)
    }

    // MARK: Chunked uploads

    func upload(_ id: String) -> OwnCloudUpload? { state.uploads[id] }

    func allUploads() -> [(String, OwnCloudUpload)] { state.uploads.sorted { $0.key < $1.key }.map { ($0.key, $0.value) } }

    func createUpload(_ id: String, now: Int64) throws -> Bool {
        guard state.uploads[id] == nil else { return false }
        state.uploads[id] = OwnCloudUpload(created: now, etag: Self.etag(random))
        try save()
        return true
    }

    /// nil when the upload folder does not exist; else whether the chunk is new.
    func putChunk(_ id: String, name: String, temp: String, size: Int64, now: Int64) throws -> Bool? {
        guard var up = state.uploads[id] else { return nil }
        let blob = random.slug(length: 24)
        guard rename(temp, blobPath(blob)) == 0 else {
            throw DropboxFiles.IOError(description: "rename \(temp): \(String(cString: strerror(errno)))")
        }
        let old = up.chunks[name]
        if let old { unlink(blobPath(old.blob)) }
        up.chunks[name] = OwnCloudChunk(size: size, blob: blob, mtime: now)
        up.etag = Self.etag(random)
        state.uploads[id] = up
        try save()
        return old == nil
    }

    func deleteChunk(_ id: String, name: String) throws -> Bool {
        guard let chunk = state.uploads[id]?.chunks.removeValue(forKey: name) else { return false }
        unlink(blobPath(chunk.blob))
        try save()
        return true
    }

    func deleteUpload(_ id: String) throws -> Bool {
        guard let up = state.uploads.removeValue(forKey: id) else { return false }
        for c in up.chunks.values { unlink(blobPath(c.blob)) }
        try save()
        return true
    }

    // MARK: Shares

    func createShare(fileID: Int64, permissions: Int, password: Bool, expiration: String?, name: String, now: Int64) throws -> OwnCloudShare {
        let share = OwnCloudShare(id: state.nextShareID, fileID: fileID, token: random.slugMixed(15), permissions: permissions,
                                  password: password, expiration: expiration, stime: now, name: name)
        state.nextShareID += 1
        state.shares.append(share)
        try save()
        return share
    }

    func shares(fileIDs: Set<Int64>?) -> [OwnCloudShare] {
        state.shares.filter { fileIDs == nil || fileIDs!.contains($0.fileID) }
    }

    func share(id: Int64) -> OwnCloudShare? { state.shares.first { $0.id == id } }

    func deleteShare(id: Int64) throws -> Bool {
        guard let i = state.shares.firstIndex(where: { $0.id == id }) else { return false }
        state.shares.remove(at: i)
        try save()
        return true
    }
}

extension SandboxRandom {
    /// Letters of both cases and digits (ownCloud share tokens).
    fileprivate func slugMixed(_ length: Int) -> String {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")
        return String((0..<length).map { _ in alphabet[int(in: 0..<alphabet.count)] })
    }
}
