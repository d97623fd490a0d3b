import EvidenceCore
import EvidenceStore
import Foundation
import Glibc

/// One file or folder in the emulated Dropbox namespace.
struct DropboxEntry: Codable, Sendable {
    var id: String
    var folder: Bool
    var pathDisplay: String
    var size: Int64 = 0
    var contentHash: String = ""
    var rev: String = ""
    var serverModified: Date
    var clientModified: Date
    /// File name of the body under `files/` (files only).
    var blob: String = ""

    var name: String { (pathDisplay as NSString).lastPathComponent }
    var pathLower: String { pathDisplay.lowercased() }
}

/// An upload session: its bytes live in `sessions/<id>`.
struct DropboxSession: Codable, Sendable {
    var id: String
    var offset: Int64
    var closed: Bool
    /// Hex SHA-256 of every 4 MiB block received so far.
    var blocks: [String]
    var created: Date
    /// Started with `session_type: concurrent` (nil in state saved before it was kept: sequential).
    var concurrent: Bool?
}

/// A shared link on a file or folder (by Dropbox id, so it follows renames and overwrites).
struct DropboxLink: Codable, Sendable {
    var entryID: String
    var linkID: String
    var rlkey: String
    var audience: String
    var created: Date
}

struct DropboxAccessToken: Codable, Sendable {
    var expires: Date
    var generation: Int
}

struct DropboxRefreshToken: Codable, Sendable {
    /// Issued to a PKCE client: refreshing needs only `client_id`.
    var pkce: Bool
}

struct DropboxAuthCode: Codable, Sendable {
    var challenge: String
    var method: String
    var expires: Date
    var redirectURI: String?
    var offline: Bool
}

/// How an upload treats an existing file (`WriteMode`).
enum DropboxWriteMode: Sendable, Equatable {
    case add
    case overwrite
    case update(String)
}

/// The Dropbox emulation's state: namespace, sessions, links and credentials, in memory and
/// in `<state>/dropbox/state.json` (rewritten atomically after every change); bodies under
/// `files/`, session bytes under `sessions/`, bodies being received under `tmp/`.
actor DropboxStore {
    struct State: Codable {
        var version = 1
        var entries: [String: DropboxEntry] = [:]
        var sessions: [String: DropboxSession] = [:]
        var links: [String: DropboxLink] = [:]
        var accessTokens: [String: DropboxAccessToken] = [:]
        var refreshTokens: [String: DropboxRefreshToken] = [:]
        var codes: [String: DropboxAuthCode] = [:]
    }

    enum TokenCheck: Sendable { case valid, expired, invalid }

    enum CommitOutcome: Sendable {
        /// Stored (new or replaced): the metadata.
        case stored(DropboxEntry)
        /// The same content was already there and the mode does not force a conflict.
        case unchanged(DropboxEntry)
        /// `WriteConflictError` tag: "file" or "folder".
        case conflict(String)
        case disallowedName
    }

    enum FolderOutcome: Sendable {
        case created(DropboxEntry)
        case conflict(String)
        case disallowedName
    }

    enum AppendCheck: Sendable {
        case ready(DropboxSession)
        case notFound
        case incorrectOffset(Int64)
        case closed
    }

    static let sessionLifetime: TimeInterval = 7 * 24 * 3600
    static let disallowedNames: Set<String> = ["desktop.ini", "thumbs.db", ".ds_store", "icon\r", ".dropbox", ".dropbox.attr"]

    let directory: String
    let statePath: String
    let filesDir: String
    let sessionsDir: String
    let tmpDir: String
    let random: SandboxRandom
    private var state: State
    private var busySessions: Set<String> = []

    init(directory: String, random: SandboxRandom) throws {
        self.directory = directory
        self.random = random
        statePath = (directory as NSString).appendingPathComponent("state.json")
        filesDir = (directory as NSString).appendingPathComponent("files")
        sessionsDir = (directory as NSString).appendingPathComponent("sessions")
        tmpDir = (directory as NSString).appendingPathComponent("tmp")
        let fm = FileManager.default
        for dir in [filesDir, sessionsDir] {
            do { try fm.createDirectory(atPath: dir, withIntermediateDirectories: true) } catch {
                throw SandboxError.stateDirectory("cannot create \(dir): \(error)")
            }
        }
        // Bodies half-received when the sandbox stopped are dropped.
        try? fm.removeItem(atPath: tmpDir)
        try? fm.createDirectory(atPath: tmpDir, withIntermediateDirectories: true)
        state = try StateFile.load(State.self, from: statePath) ?? State()
        state.refreshTokens[DropboxEmulator.refreshToken] = DropboxRefreshToken(pkce: false)
    }

    private func save() throws {
        try StateFile.save(state, to: statePath)
    }

    nonisolated func tempPath() -> String {
        (tmpDir as NSString).appendingPathComponent("up-\(random.slug(length: 16))")
    }

    nonisolated func blobPath(_ blob: String) -> String {
        (filesDir as NSString).appendingPathComponent(blob)
    }

    nonisolated func sessionPath(_ id: String) -> String {
        (sessionsDir as NSString).appendingPathComponent(id.replacingOccurrences(of: ":", with: "_"))
    }

    // MARK: Credentials

    func issueAccessToken(now: Date, lifetime: Double, generation: Int) throws -> String {
        let value = "sl.u." + token(96)
        state.accessTokens = state.accessTokens.filter { $0.value.expires > now }
        state.accessTokens[value] = DropboxAccessToken(expires: now.addingTimeInterval(lifetime), generation: generation)
        try save()
        return value
    }

    func checkAccessToken(_ token: String, now: Date, generation: Int) -> TokenCheck {
        guard let t = state.accessTokens[token] else { return .invalid }
        return t.expires <= now || t.generation < generation ? .expired : .valid
    }

    func refreshToken(_ token: String) -> DropboxRefreshToken? { state.refreshTokens[token] }

    func issueRefreshToken(pkce: Bool) throws -> String {
        let value = token(64)
        state.refreshTokens[value] = DropboxRefreshToken(pkce: pkce)
        try save()
        return value
    }

    func issueCode(_ code: DropboxAuthCode) throws -> String {
        let value = token(43)
        state.codes = state.codes.filter { $0.value.expires > code.expires.addingTimeInterval(-600) }
        state.codes[value] = code
        try save()
        return value
    }

    /// Removes and returns the code (codes are single-use, even when the exchange fails).
    func takeCode(_ value: String) throws -> DropboxAuthCode? {
        guard let code = state.codes.removeValue(forKey: value) else { return nil }
        try save()
        return code
    }

    // MARK: Namespace

    func entry(lower: String) -> DropboxEntry? { state.entries[lower] }

    func entry(id: String) -> DropboxEntry? { state.entries.values.first { $0.id == id } }

    /// Letters (both cases) and digits, as Dropbox's opaque identifiers look.
    nonisolated func token(_ length: Int) -> String {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")
        return String((0..<length).map { _ in alphabet[random.int(in: 0..<alphabet.count)] })
    }

    private func newID() -> String { "id:" + token(22) }

    private func newRev() -> String {
        "0" + Hex.encode(random.bytes(8)).dropFirst(1)
    }

    /// Creates folders for `components[0..<count]` that do not exist yet. Returns the
    /// display path of that prefix, or the conflict tag when a file is in the way.
    private func ensureParents(_ components: [String], count: Int, now: Date) -> String? {
        var display = ""
        for i in 0..<count {
            let lower = (display + "/" + components[i]).lowercased()
            if let e = state.entries[lower] {
                guard e.folder else { return nil }
                display = e.pathDisplay
            } else {
                display += "/" + components[i]
                state.entries[lower] = DropboxEntry(id: newID(), folder: true, pathDisplay: display,
                                                    serverModified: now, clientModified: now)
            }
        }
        return display
    }

    private func parentConflict(_ components: [String]) -> String? {
        var lower = ""
        for c in components.dropLast() {
            lower += "/" + c.lowercased()
            if let e = state.entries[lower], !e.folder { return "file" }
        }
        return nil
    }

    /// "name (1).ext", "name (2).ext", … in `parent` until one is free.
    private func autorenamed(_ name: String, parentDisplay: String) -> String {
        let ns = name as NSString
        let ext = ns.pathExtension
        let stem = ext.isEmpty || ns.deletingPathExtension.isEmpty ? name : ns.deletingPathExtension
        let suffix = stem == name ? "" : "." + ext
        var n = 1
        while true {
            let candidate = "\(stem) (\(n))\(suffix)"
            if state.entries[(parentDisplay + "/" + candidate).lowercased()] == nil { return candidate }
            n += 1
        }
    }

    func createFolder(_ components: [String], autorename: Bool, now: Date) throws -> FolderOutcome {
        if Self.disallowedNames.contains(components.last!.lowercased()) { return .disallowedName }
        if let c = parentConflict(components) { return .conflict(c) }
        var name = components.last!
        let parentLower = components.dropLast().map { "/" + $0 }.joined().lowercased()
        if let existing = state.entries[(parentLower + "/" + name).lowercased()] {
            guard autorename else { return .conflict(existing.folder ? "folder" : "file") }
            let parentDisplay = parentLower.isEmpty ? "" : state.entries[parentLower]?.pathDisplay ?? ""
            name = autorenamed(name, parentDisplay: parentDisplay)
        }
        guard let parentDisplay = ensureParents(components, count: components.count - 1, now: now) else {
            return .conflict("file")
        }
        let entry = DropboxEntry(id: newID(), folder: true, pathDisplay: parentDisplay + "/" + name,
                                 serverModified: now, clientModified: now)
        state.entries[entry.pathLower] = entry
        try save()
        return .created(entry)
    }

    /// Stores the received body at `temp` as the file at `components` following Dropbox's
    /// write-mode rules; the temp file is moved into `files/` only when the outcome is `.stored`.
    func commitFile(_ components: [String], mode: DropboxWriteMode, autorename: Bool, strictConflict: Bool,
                    clientModified: Date?, temp: String, size: Int64, contentHash: String, now: Date) throws -> CommitOutcome {
        if Self.disallowedNames.contains(components.last!.lowercased()) { return .disallowedName }
        if let c = parentConflict(components) { return .conflict(c) }
        var name = components.last!
        let parentLower = components.dropLast().map { "/" + $0 }.joined().lowercased()
        var replacing: DropboxEntry?
        if let existing = state.entries[(parentLower + "/" + name).lowercased()] {
            let parentDisplay = parentLower.isEmpty ? "" : state.entries[parentLower]?.pathDisplay ?? ""
            let identical = !existing.folder && existing.contentHash == contentHash && existing.size == size
            if existing.folder {
                guard autorename else { return .conflict("folder") }
                name = autorenamed(name, parentDisplay: parentDisplay)
            } else {
                switch mode {
                case .add:
                    if identical && !strictConflict { return .unchanged(existing) }
                    guard autorename else { return .conflict("file") }
                    name = autorenamed(name, parentDisplay: parentDisplay)
                case .overwrite:
                    if identical && !strictConflict { return .unchanged(existing) }
                    replacing = existing
                case .update(let rev):
                    if rev == existing.rev {
                        if identical && !strictConflict { return .unchanged(existing) }
                        replacing = existing
                    } else {
                        if identical && !strictConflict { return .unchanged(existing) }
                        guard autorename else { return .conflict("file") }
                        let ns = name as NSString
                        let ext = ns.pathExtension
                        name = ext.isEmpty ? "\(name) (conflicted copy)" : "\(ns.deletingPathExtension) (conflicted copy).\(ext)"
                        if state.entries[(parentLower + "/" + name).lowercased()] != nil {
                            name = autorenamed(name, parentDisplay: parentDisplay)
                        }
                    }
                }
            }
        }
        guard let parentDisplay = ensureParents(components, count: components.count - 1, now: now) else {
            return .conflict("file")
        }
        let blob = random.slug(length: 24)
        guard rename(temp, blobPath(blob)) == 0 else {
            throw DropboxFiles.IOError(description: "rename \(temp): \(String(cString: strerror(errno)))")
        }
        var entry = DropboxEntry(id: replacing?.id ?? newID(), folder: false,
                                 pathDisplay: replacing?.pathDisplay ?? parentDisplay + "/" + name,
                                 size: size, contentHash: contentHash, rev: newRev(),
                                 serverModified: now, clientModified: clientModified ?? now, blob: blob)
        if let old = replacing { unlink(blobPath(old.blob)); entry.id = old.id }
        state.entries[entry.pathLower] = entry
        try save()
        return .stored(entry)
    }

    /// What `list_folder` lists under the folder `lower` ("" for the root): its children, or
    /// with `recursive` everything below it; in path order so paging is stable.
    func listing(under lower: String, recursive: Bool) -> [DropboxEntry] {
        state.entries.values.filter { e in
            guard e.pathLower.hasPrefix(lower + "/") else { return false }
            return recursive || !e.pathLower.dropFirst(lower.count + 1).contains("/")
        }.sorted { $0.pathLower < $1.pathLower }
    }

    /// Deletes the entry (and, for a folder, everything below it, with their links).
    func delete(lower: String) throws -> DropboxEntry? {
        guard let entry = state.entries[lower] else { return nil }
        let removed = state.entries.filter { $0.key == lower || $0.key.hasPrefix(lower + "/") }
        for (key, e) in removed {
            state.entries.removeValue(forKey: key)
            state.links.removeValue(forKey: e.id)
            if !e.folder { unlink(blobPath(e.blob)) }
        }
        try save()
        return entry
    }

    // MARK: Upload sessions

    private func pruneSessions(now: Date) {
        for (id, s) in state.sessions where s.created.addingTimeInterval(Self.sessionLifetime) <= now {
            state.sessions.removeValue(forKey: id)
            unlink(sessionPath(id))
        }
    }

    func startSession(now: Date, concurrent: Bool = false) throws -> DropboxSession {
        pruneSessions(now: now)
        let id = "pid_upload_session:" + token(40)
        let session = DropboxSession(id: id, offset: 0, closed: false, blocks: [], created: now, concurrent: concurrent)
        state.sessions[id] = session
        _ = FileManager.default.createFile(atPath: sessionPath(id), contents: nil)
        try save()
        busySessions.insert(id)
        return session
    }

    /// Turns a received body into a closed session (what `files/upload` offers in its
    /// conflict error as `upload_session_id`, so the bytes can be committed elsewhere).
    func adoptAsSession(temp: String, size: Int64, blocks: [String], now: Date) throws -> String {
        let id = "pid_upload_session:" + token(40)
        guard rename(temp, sessionPath(id)) == 0 else {
            throw DropboxFiles.IOError(description: "rename \(temp): \(String(cString: strerror(errno)))")
        }
        state.sessions[id] = DropboxSession(id: id, offset: size, closed: true, blocks: blocks, created: now)
        try save()
        return id
    }

    /// Checks a cursor and reserves the session for one request.
    func beginAppend(_ id: String, offset: Int64, now: Date, allowClosed: Bool) -> AppendCheck {
        guard let s = state.sessions[id] else { return .notFound }
        if s.created.addingTimeInterval(Self.sessionLifetime) <= now {
            state.sessions.removeValue(forKey: id)
            unlink(sessionPath(id))
            try? save()
            return .notFound
        }
        if s.closed && !allowClosed { return .closed }
        if busySessions.contains(id) || offset != s.offset { return .incorrectOffset(s.offset) }
        busySessions.insert(id)
        return .ready(s)
    }

    func endAppend(_ id: String, added: Int64, blocks: [String], close: Bool) throws -> DropboxSession? {
        busySessions.remove(id)
        guard var s = state.sessions[id] else { return nil }
        s.offset += added
        s.blocks += blocks
        if close { s.closed = true }
        state.sessions[id] = s
        try save()
        return s
    }

    func abortAppend(_ id: String) { busySessions.remove(id) }

    /// Corruption after the fact: the session's block list no longer matches its bytes.
    func replaceBlocks(_ id: String, blocks: [String]) throws {
        state.sessions[id]?.blocks = blocks
        try save()
    }

    func removeSession(_ id: String) throws {
        busySessions.remove(id)
        state.sessions.removeValue(forKey: id)
        unlink(sessionPath(id))
        try save()
    }

    // MARK: Shared links

    func link(entryID: String) -> DropboxLink? { state.links[entryID] }

    func createLink(entryID: String, audience: String, now: Date) throws -> DropboxLink {
        let link = DropboxLink(entryID: entryID, linkID: random.slug(length: 25), rlkey: random.slug(length: 25),
                               audience: audience, created: now)
        state.links[entryID] = link
        try save()
        return link
    }

    /// Links on `lower` and (unless `directOnly`) on its parent folders, with their entries.
    func links(under lower: String?, directOnly: Bool) -> [(DropboxLink, DropboxEntry)] {
        var out: [(DropboxLink, DropboxEntry)] = []
        let byID = Dictionary(state.entries.values.map { ($0.id, $0) }, uniquingKeysWith: { a, _ in a })
        for link in state.links.values.sorted(by: { $0.created < $1.created }) {
            guard let e = byID[link.entryID] else { continue }
            if let lower {
                let match = e.pathLower == lower || (!directOnly && e.folder && lower.hasPrefix(e.pathLower + "/"))
                if !match { continue }
            }
            out.append((link, e))
        }
        return out
    }
}

