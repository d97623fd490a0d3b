import EvidenceCatalog
import EvidenceConfig
import EvidenceCore
import EvidenceStore
import Foundation
import Logging
import Synchronization

/// Accounts and notaries whose credentials were refused (`CredentialPause`), as the catalog
/// keeps them: read at most every `refresh` (other nodes and `evidence accounts resume` write
/// there too), written when a job meets a refusal, removed when the secret changes, on
/// SIGHUP, or by an operator.
public final class Pauses: Sendable {
    let catalog: any Catalog
    let logger: Logger
    /// SHA-256 over the secrets an account or notary would read now (nil: it has none or they
    /// cannot be read): a value other than the one recorded with its pause means someone fixed them.
    let fingerprint: @Sendable (CredentialPause.Kind, String) -> String?
    /// Rebuilds the accounts and notaries from the configuration, their secrets read again.
    let reload: @Sendable () -> Void
    private let cache = Mutex<(read: ContinuousClock.Instant?, pauses: [String: CredentialPause])>((nil, [:]))
    static let refresh: Duration = .seconds(2)
    /// How long a job of a paused account or notary waits before it is looked at again (it is
    /// woken at once when the pause ends).
    public static let hold: Double = 3600

    public init(catalog: any Catalog, logger: Logger,
                fingerprint: @escaping @Sendable (CredentialPause.Kind, String) -> String?,
                reload: @escaping @Sendable () -> Void) {
        self.catalog = catalog; self.logger = logger; self.fingerprint = fingerprint; self.reload = reload
    }

    /// Every pause in the catalog, by scope.
    public static func all(in catalog: any Catalog) throws(CatalogError) -> [String: CredentialPause] {
        var out: [String: CredentialPause] = [:]
        for (_, value) in try catalog.metaEntries(prefix: CredentialPause.metaPrefix) {
            if let p = CredentialPause.decoded(value) { out[p.scope] = p }
        }
        return out
    }

    /// The pauses now (re-read from the catalog when the copy is older than `refresh`).
    public func current() -> [String: CredentialPause] {
        let now = ContinuousClock.now
        let (read, cached) = cache.withLock { ($0.read, $0.pauses) }
        if let read, now - read < Self.refresh { return cached }
        let pauses = (try? Self.all(in: catalog)) ?? cached
        cache.withLock { $0 = (now, pauses) }
        return pauses
    }

    public func active(_ scope: String) -> CredentialPause? { current()[scope] }

    /// Whether the copy read less than `refresh` ago says `scope` is not paused: then no job
    /// of it is held, and `confirmed` (which may read the catalog) need not be asked.
    public func knownClear(_ scope: String) -> Bool {
        let now = ContinuousClock.now
        return cache.withLock { c in c.read.map { now - $0 < Self.refresh } == true && c.pauses[scope] == nil }
    }

    /// `active`, and when the copy says paused, asked of the catalog again: a job woken by
    /// `evidence accounts resume` must not be held on a copy read before the resume.
    public func confirmed(_ scope: String) -> CredentialPause? {
        guard active(scope) != nil else { return nil }
        guard let pauses = try? Self.all(in: catalog) else { return active(scope) }
        cache.withLock { $0 = (.now, pauses) }
        return pauses[scope]
    }

    /// Records that `name`'s credentials were refused (once: a pause already recorded stays as it was).
    @discardableResult
    public func pause(_ kind: CredentialPause.Kind, _ name: String, reason: String, fix: String) -> CredentialPause {
        let scope = CredentialPause.scope(kind, name)
        if let existing = active(scope) { return existing }
        let p = CredentialPause(kind: kind, name: name, reason: Self.summary(reason), fix: fix, since: Date(),
                                fingerprint: fingerprint(kind, name))
        do {
            try catalog.setMeta(CredentialPause.metaPrefix + scope, p.encoded())
        } catch {
            logger.error("cannot record the pause of \(scope): \(error)")
        }
        cache.withLock { $0.pauses[scope] = p }
        logger.error("credentials refused: \(kind.rawValue) \(name) paused, no request is sent until they change: \(p.reason) — \(fix)")
        return p
    }

    /// Ends a pause and makes its jobs due now.
    public func resume(_ scope: String, why: String) {
        guard let p = current()[scope] else { return }
        do {
            try Self.resume(p, in: catalog)
        } catch {
            logger.error("cannot resume \(scope): \(error)")
            return
        }
        cache.withLock { $0.pauses[scope] = nil }
        logger.notice("\(p.kind.rawValue) \(p.name) resumed: \(why)")
    }

    /// `resume` for any process holding the catalog (`evidence accounts resume`).
    public static func resume(_ p: CredentialPause, in catalog: any Catalog) throws(CatalogError) {
        try catalog.setMeta(CredentialPause.metaPrefix + p.scope, nil)
        let kinds: [JobKind] = p.kind == .account ? [.archive, .share, .anchorCopy] : [.notarize, .stamp, .certificate]
        try catalog.wakeQueuedJobs(kinds: kinds, now: Date())
    }

    /// Resumes every pause whose secrets changed since it was recorded, after rebuilding the
    /// accounts and notaries from them; with `reloaded` (SIGHUP: rebuilt already) every pause
    /// is given its chance, changed or not.
    public func checkSecrets(reloaded: Bool = false) {
        let changed = current().values.filter { reloaded || fingerprint($0.kind, $0.name) != $0.fingerprint }
        guard !changed.isEmpty else { return }
        if !reloaded { reload() }
        for p in changed { resume(p.scope, why: reloaded ? "configuration reloaded (SIGHUP)" : "its credentials changed") }
    }

    /// One line of what the service said: its own error words where the body is XML (Sabre's
    /// `s:message`) or JSON (`error_summary`, `message`, `error`), no markup, at most 240 characters.
    public static func summary(_ text: String) -> String {
        var t = text
        if let m = t.range(of: "<s:message>"), let e = t.range(of: "</s:message>", range: m.upperBound..<t.endIndex) {
            let head = t[..<(t.range(of: "<?xml")?.lowerBound ?? t.range(of: "<d:error")?.lowerBound ?? m.lowerBound)]
            t = head.trimmingCharacters(in: .whitespaces) + " " + t[m.upperBound..<e.lowerBound]
        }
        t = t.replacingOccurrences(of: "\n", with: " ")
        return t.count > 240 ? String(t.prefix(239)) + "…" : t
    }

    /// SHA-256 over the values of these secrets and the bytes of these files (a token file), or
    /// nil when there are none. A secret that cannot be read counts by its error.
    public static func fingerprint(secrets: [SecretSource], files: [String]) -> String? {
        guard !secrets.isEmpty || !files.isEmpty else { return nil }
        let h = SHA256Hasher()
        for s in secrets {
            let value: String
            do { value = try ConfigLoader.readSecret(s, field: "", configFile: "") } catch { value = "unreadable: \(error.message)" }
            h.update(Data("\(value.utf8.count):".utf8) + Data(value.utf8))
        }
        for f in files {
            let bytes = FileManager.default.contents(atPath: f) ?? Data("absent".utf8)
            h.update(Data("\(bytes.count):".utf8) + bytes)
        }
        return h.finalize().hex
    }
}
