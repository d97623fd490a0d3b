import Foundation

/// What every emulated archive provider shares with the rest of the sandbox: its own state
/// folder, the counters (uploads per remote path), the seeded random source, the clock, and
/// the test controls (expire every access token, corrupt the next stored upload).
///
/// Sandbox credentials are fixed and public (see each emulator's doc comment); they exist so
/// `make demo` and the tests run with no account.
public struct ProviderEnvironment: Sendable {
    /// `<state>/<provider>/`: files, metadata and sessions, persisted so a restarted sandbox
    /// on the same folder still has them.
    public let stateDirectory: String
    public let counters: SandboxCounters
    public let random: SandboxRandom
    public let clock: @Sendable () -> Date
    /// Seconds an access token stays valid.
    public let tokenLifetime: Double
    public let control: ProviderControl

    public init(stateDirectory: String, counters: SandboxCounters, random: SandboxRandom,
                clock: @escaping @Sendable () -> Date, tokenLifetime: Double, control: ProviderControl) {
        self.stateDirectory = stateDirectory
        self.counters = counters
        self.random = random
        self.clock = clock
        self.tokenLifetime = tokenLifetime
        self.control = control
    }
}

/// Test switches shared by the provider emulations, driven by `/_sandbox/` control routes:
/// - `POST /_sandbox/expire-tokens` bumps `tokenGeneration`: every access token issued before
///   is answered 401 as expired (refresh tokens stay valid), so clients must refresh once.
/// - `POST /_sandbox/corrupt-next-upload?provider=NAME` makes that provider flip one byte of
///   the next file it stores (after receiving it, before computing its own hash), as a
///   corruption in transit would look to a client that verifies by the provider's hash.
/// - `POST /_sandbox/advance-clock?seconds=N` moves the providers' clock forward: codes and
///   tokens issued before expire as they would after that long (e.g. a login code pasted late).
/// - `POST /_sandbox/quirk?provider=NAME&quirk=QUIRK&count=N` arms one of the real services'
///   rarer answers (see `Quirk`) for the next N times it applies (count 0 disarms;
///   `count=always` keeps it until a reset).
public final class ProviderControl: @unchecked Sendable {
    /// Answers the real services give only now and then, which a test asks for on purpose.
    public enum Quirk: String, Sendable, CaseIterable {
        /// Dropbox: the next write (upload, finish, create_folder, delete) answers 409
        /// `path/too_many_write_operations/..` instead of a 429 (Dropbox does both).
        case dropboxWriteContention = "dropbox-409-too-many-writes"
        /// Box: the commit that follows the session's last part answers 400 `parts_mismatch`
        /// (the parts are still being processed), once per session.
        case boxPartsMismatch = "box-parts-mismatch"
        /// Box: list-parts pages hold at most 2 parts (as if the session had thousands).
        case boxSmallPartPages = "box-small-part-pages"
        /// Box: the next part is stored, but its answer is lost on the way (a 502 from a proxy
        /// in front), so the client sends it again and meets Box's refusal of a re-sent part.
        case boxPartAnswerLost = "box-part-answer-lost"
        /// Box: the next upload, session creation or commit answers 409 `name_temporarily_reserved`
        /// (uploads, sessions) or `operation_blocked_temporary` (commits) with `Retry-After: 1`:
        /// "try again later", not a name taken.
        case boxTemporaryConflict = "box-409-temporary"
        /// Box: the next content download (`GET /files/{id}/content`) answers 202 Accepted with
        /// `Retry-After: 1` and no body (Box is still preparing the file), not a redirect.
        case boxDownloadNotReady = "box-download-202"
        /// Box and Dropbox: the account is a free one, whatever the emulation's default plan
        /// would allow (Box: no company links, no expiry, no password; Dropbox: no link settings).
        case freePlan = "free-plan"
        /// ShareFile: the next chunk or finish answers HTTP 200 with a body `ERROR: …`.
        case shareFileChunkErrorText = "sharefile-chunk-error-text"
        /// ShareFile: the next chunk or finish answers HTTP 200 with `{"error":true,…}` JSON.
        case shareFileChunkErrorJSON = "sharefile-chunk-error-json"
        /// ShareFile: the upload id of the next threaded chunk has expired (as ShareFile's do
        /// after a while): the upload and its chunks are gone, and that chunk and any later use
        /// of the id answer HTTP 200 `{"error":true,"errorMessage":"Unrecognized Upload ID","errorCode":605}`.
        case shareFileUploadExpired = "sharefile-upload-expired"
        /// ShareFile: the user is a client user without "My Files & Folders": the home folder
        /// (`GET Items`, `Items(home)`) answers 404; folders shared with the user still work.
        case shareFileClientUser = "sharefile-client-user"
        /// ShareFile: the next file stored lands in a storage zone that computes no hash: its
        /// `Hash` (and the upload answer's `md5`) is the empty string.
        case shareFileEmptyHash = "sharefile-empty-hash"
        /// ownCloud/Nextcloud: the administrator enforces a default expiry on public links: one
        /// made without `expireDate` expires in 7 days, which the OCS answer's `expiration` says.
        case ownCloudEnforcedExpiry = "owncloud-enforced-expiry"
        /// ownCloud/Nextcloud: the next chunk assembly (`MOVE …/.file`) completes, but its answer is
        /// 412 `Overwrite` (as when the client's earlier MOVE, given up on during a silent assembly,
        /// finished while this one was on its way).
        case ownCloudAssembled412 = "owncloud-assembled-412"
        /// ownCloud/Nextcloud: the next chunk assembly keeps its answer for 3 s, sending nothing
        /// (a large file assembled on slow storage), then answers as usual.
        case ownCloudSlowAssembly = "owncloud-slow-assembly"
        /// ownCloud/Nextcloud: the next chunk assembly answers 423 Locked (as to a MOVE that came
        /// while an earlier one of the same upload still assembled) and completes after that
        /// answer: the upload folder is then gone, so the MOVE sent again answers 404.
        case ownCloudAssemblyLocked = "owncloud-assembly-423"
        /// ownCloud Infinite Scale: no chunked-upload endpoint (it has TUS): every request under
        /// `remote.php/dav/uploads/` answers 404 "File not found in root", as oCIS's ocdav does,
        /// status.php names "Infinite Scale", and the capabilities offer no NG chunking.
        case ownCloudNoUploads = "owncloud-no-uploads"
        /// ownCloud/Nextcloud: the next public link is made without the password asked for (as a
        /// server whose password policy silently drops it): the OCS answer shows none.
        case ownCloudLinkWithoutPassword = "owncloud-link-drops-password"
        /// ShareFile: the tenant is in the EU: token answers carry `apicp: sf-api.eu`, `appcp: sharefile.eu`.
        case shareFileEUTenant = "sharefile-eu-tenant"
        /// ShareFile: list answers (`Shares`, `Items(id)/Children`) hold at most 1 entry a page,
        /// the rest behind `odata.nextLink`.
        case shareFileSmallPages = "sharefile-small-pages"
    }

    /// The Dropbox calls answered, for the schema oracle (`GET /_sandbox/dropbox/exchanges`).
    public let dropboxExchanges = DropboxExchangeLog()

    private let lock = NSLock()
    private var generation = 0
    private var corrupt: Set<String> = []
    private var offset: TimeInterval = 0
    /// Armed quirks and how many times each still applies (nil = until reset).
    private var quirks: [Quirk: Int?] = [:]

    /// Arms `quirk` for the next `count` times it applies (nil: until reset; 0 disarms).
    public func arm(_ quirk: Quirk, count: Int?) {
        lock.lock(); defer { lock.unlock() }
        if count == 0 { quirks[quirk] = nil } else { quirks[quirk] = .some(count) }
    }

    /// True when `quirk` applies to this request; consumes one of its count.
    public func take(_ quirk: Quirk) -> Bool {
        lock.lock(); defer { lock.unlock() }
        guard let left = quirks[quirk] else { return false }
        if let n = left { quirks[quirk] = n > 1 ? .some(n - 1) : nil }
        return true
    }

    /// True while `quirk` is armed, without consuming it (account-wide settings).
    public func isArmed(_ quirk: Quirk) -> Bool {
        lock.lock(); defer { lock.unlock() }
        return quirks[quirk] != nil
    }

    public init() {}

    public var tokenGeneration: Int {
        lock.lock(); defer { lock.unlock() }
        return generation
    }

    public func expireTokens() {
        lock.lock(); generation += 1; lock.unlock()
    }

    /// Seconds added to the sandbox clock for the provider emulations.
    public var clockOffset: TimeInterval {
        lock.lock(); defer { lock.unlock() }
        return offset
    }

    public func advanceClock(by seconds: TimeInterval) {
        lock.lock(); offset += seconds; lock.unlock()
    }

    public func corruptNextUpload(provider: String) {
        lock.lock(); corrupt.insert(provider); lock.unlock()
    }

    /// True once after `corruptNextUpload(provider:)`: the caller corrupts this upload.
    public func takeCorruption(provider: String) -> Bool {
        lock.lock(); defer { lock.unlock() }
        return corrupt.remove(provider) != nil
    }

    public func reset() {
        lock.lock(); corrupt = []; quirks = [:]; lock.unlock()
        dropboxExchanges.reset()
    }
}
