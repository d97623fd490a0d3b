import EvidenceCore
import Foundation

/// What `GET {url}/status.php` says the server is, which decides whether its `oc:checksums`
/// prove anything.
///
/// ownCloud 10 computes SHA1/MD5/ADLER32 from the bytes it stored (and refuses an upload whose
/// `OC-Checksum` differs). Nextcloud stores the `OC-Checksum` the client sent and echoes it back
/// unchecked, so on Nextcloud a matching checksum proves only that we sent it: uploads are
/// verified by reading them back. Any other server (a plain WebDAV server with no status.php, a
/// rebranded or unknown product) is not trusted either.
package enum OwnCloudProduct: Sendable, Equatable {
    case owncloud(version: String)
    case nextcloud(version: String)
    case other(name: String)

    /// Whether `oc:checksums` are the server's own digests of the stored bytes.
    package var computesChecksums: Bool {
        if case .owncloud = self { return true }
        return false
    }

    /// ownCloud 10 and Nextcloud (Sabre) refuse a PUT with `If-None-Match: *` and an assembly
    /// with `Overwrite: F` onto an existing file; a server of unknown make may not (rclone's).
    package var honoursPreconditions: Bool {
        if case .other = self { return false }
        return true
    }

    /// ownCloud 10 and Nextcloud always serve `remote.php/dav/uploads/` (chunking NG); Infinite
    /// Scale (status.php: "Infinite Scale") and plain WebDAV servers do not.
    package var hasUploadsEndpoint: Bool { honoursPreconditions }

    /// "ownCloud 10.15.0", "Nextcloud 30.0.4", or the name status.php gave; the server's text
    /// with its control characters escaped (it goes into messages and logs).
    package var description: String {
        switch self {
        case .owncloud(let v): return "ownCloud" + (v.isEmpty ? "" : " \(TerminalText.escape(v))")
        case .nextcloud(let v): return "Nextcloud" + (v.isEmpty ? "" : " \(TerminalText.escape(v))")
        case .other(let name): return TerminalText.escape(name)
        }
    }

    /// Reads a status.php answer. Nextcloud forked from ownCloud 9 and keeps its status.php
    /// shape; it is told apart by its name, its `extendedSupport` field (Nextcloud 18 and
    /// later), or a version ownCloud never had (12 and later). ownCloud 10 also sends `product`.
    /// Product names can be rebranded (theming): an unrecognised name is `.other`.
    package static func parse(status body: Data) -> OwnCloudProduct {
        guard let status = WireJSON.decode(OwnCloudAPI.Status.self, from: body) else {
            return .other(name: "a WebDAV server without status.php")
        }
        let names = [status.productname, status.product].compactMap { $0 }
        let version = status.versionstring.flatMap { $0.isEmpty ? nil : $0 } ?? (status.version ?? "")
        let major = Int(version.split(separator: ".").first ?? "") ?? 0
        if names.contains(where: { $0.lowercased().contains("nextcloud") }) || status.extendedSupport != nil || major >= 12 {
            return .nextcloud(version: version)
        }
        if names.contains(where: { $0.lowercased() == "owncloud" }) { return .owncloud(version: version) }
        return .other(name: names.first.map { "\($0) \(version)".trimmingCharacters(in: .whitespaces) } ?? "an unknown WebDAV server")
    }
}

/// What one `OwnCloudProvider` (and every copy of it: workers share the struct) learns about
/// its server while running: the product behind it, and the folders known to exist.
///
/// Folders are created once per process, not once per worker: concurrent `makeFolders` of the
/// same path share one `MKCOL` per level (a WebDAV server locks a path while it creates it, and
/// answers a second `MKCOL` racing the first with 423 Locked), and a folder once made is not
/// asked for again until an upload finds it gone.
actor OwnCloudServerState {
    private var product: OwnCloudProduct?
    private var made: Set<String> = []
    private var making: [String: Task<Result<Void, ArchiveError>, Never>] = [:]
    /// False once the server showed it has no chunked-upload endpoint (Infinite Scale: TUS).
    private(set) var hasChunking = true

    func rememberNoChunking() { hasChunking = false }

    /// Paths a `stat` of this process found empty, and when: an upload right after may skip its
    /// own look (`takeAbsent`). At most `absentLimit` kept; each is taken once.
    private var absent: [String: ContinuousClock.Instant] = [:]
    static let absentLimit = 4096
    static let absentFor: Duration = .seconds(2)

    func noteAbsent(_ path: String) {
        let now = ContinuousClock.now
        if absent.count >= Self.absentLimit { absent = absent.filter { now - $0.value < Self.absentFor } }
        if absent.count < Self.absentLimit { absent[path] = now }
    }

    /// Whether `path` was found empty within `absentFor`; forgets it either way.
    func takeAbsent(_ path: String) -> Bool {
        guard let at = absent.removeValue(forKey: path) else { return false }
        return ContinuousClock.now - at < Self.absentFor
    }

    func knownProduct() -> OwnCloudProduct? { product }
    func remember(_ p: OwnCloudProduct) { product = p }

    /// Runs `create` for `path` unless it is known to exist, or joins the run already under way.
    func ensureFolder(_ path: String, _ create: @escaping @Sendable () async -> Result<Void, ArchiveError>)
        async -> Result<Void, ArchiveError>
    {
        if made.contains(path) { return .success(()) }
        if let running = making[path] { return await running.value }
        let task = Task { await create() }
        making[path] = task
        let result = await task.value
        making[path] = nil
        if case .success = result { made.insert(path) }
        return result
    }

    /// Forgets every folder known to exist (one was found missing: the tree changed under us).
    func forgetFolders() { made.removeAll() }

    /// Forgets `path` and what is below it (it was deleted).
    func forget(_ path: String) { made = made.filter { $0 != path && !$0.hasPrefix(path + "/") } }
}
