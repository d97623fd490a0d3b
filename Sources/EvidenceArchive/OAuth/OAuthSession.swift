import EvidenceHTTP
import Foundation
import Synchronization

/// One account's OAuth 2 access tokens: obtained from the token endpoint, cached in the token
/// file, refreshed once for everybody (single flight) when it expires or a call comes back 401.
///
/// Grants: `refresh_token` (Dropbox, Box, ShareFile after a login), `client_credentials` (Box
/// CCG, with `box_subject_type`/`box_subject_id`), `password` (ShareFile). When the provider
/// rotates refresh tokens (Box: each one is single-use) the new one is saved to the token file
/// atomically *before* the access token is handed out, so a crash right after a refresh never
/// leaves us holding only a spent refresh token.
public actor OAuthSession {
    public enum Grant: Sendable {
        /// `initial` comes from the config (`refresh_token_env/_file`); a token file's newer one wins.
        case refreshToken(initial: String?)
        case clientCredentials(extra: [(String, String)])
        case password(username: String, password: String)
    }

    public nonisolated let account: String
    let tokenURL: String
    /// The token endpoint a token answer names for later refreshes (ShareFile: the answer's
    /// `subdomain` and `appcp`, so an EU tenant's refreshes go to `{subdomain}.sharefile.eu` as
    /// the ShareFile SDK sends them); nil, or nil for this answer, keeps `tokenURL`. Every other
    /// grant (a password above all) goes to `tokenURL`, the endpoint the operator configured.
    let tokenURLFromAnswer: (@Sendable ([String: String]) -> String?)?
    let clientID: String
    let clientSecret: String?
    let grant: Grant
    let tokenFile: String
    let http: HTTPClient
    let now: @Sendable () -> Date
    private var record: TokenRecord?
    private var loaded = false
    private var inFlight: Task<Result<TokenRecord, ArchiveError>, Never>?
    /// The last access token a provider answered 401: never taken back from the token file.
    private var rejectedToken: String?
    /// Token endpoint calls made by this process (tests assert single flight with it).
    public private(set) var refreshCount = 0

    public init(account: String, tokenURL: String, clientID: String, clientSecret: String?, grant: Grant,
                tokenFile: String, http: HTTPClient, now: @escaping @Sendable () -> Date = { Date() },
                tokenURLFromAnswer: (@Sendable ([String: String]) -> String?)? = nil) {
        self.account = account; self.tokenURL = tokenURL; self.clientID = clientID; self.clientSecret = clientSecret
        self.tokenURLFromAnswer = tokenURLFromAnswer
        self.grant = grant; self.tokenFile = tokenFile; self.http = http; self.now = now
    }

    /// The current record (token file contents), e.g. for `accounts list`.
    public func current() throws(ArchiveError) -> TokenRecord? {
        try loadOnce()
        return record
    }

    /// A valid access token: the cached one while it has more than a minute left, else a new one.
    public func accessToken() async throws(ArchiveError) -> String {
        try loadOnce()
        if let r = record, let token = r.accessToken, let exp = r.expiresAt, exp.timeIntervalSince(now()) > 60 {
            return token
        }
        return try await refresh().accessToken ?? ""
    }

    /// `token` was answered 401: refresh, unless someone already did since it was handed out.
    public func rejected(_ token: String) async throws(ArchiveError) -> String {
        if let current = record?.accessToken, current != token { return current }
        record?.accessToken = nil
        rejectedToken = token
        return try await refresh().accessToken ?? ""
    }

    private func loadOnce() throws(ArchiveError) {
        guard !loaded else { return }
        record = try TokenStore.load(tokenFile, account: account)
        loaded = true
    }

    /// Single flight: concurrent callers wait for the same token request.
    private func refresh() async throws(ArchiveError) -> TokenRecord {
        if let running = inFlight { return try await running.value.get() }
        let task = Task { await self.requestToken() }
        inFlight = task
        let result = await task.value
        inFlight = nil
        return try result.get()
    }

    private func requestToken() async -> Result<TokenRecord, ArchiveError> {
        refreshCount += 1
        // Another process sharing the token file (`evidence run` beside `accounts`/`doctor`) may
        // have rotated a single-use refresh token since we read it: its record is the current one.
        if let fresh = rotatedOnDisk(than: record?.refreshToken) {
            record = fresh
            if usable(fresh) { return .success(fresh) }
        }
        var form: [(String, String)] = []
        let saved = record?.refreshToken
        switch grant {
        case .refreshToken(let initial):
            guard let rt = saved ?? initial else {
                return .failure(ArchiveError(.permanent, "\(account): no refresh token: run `evidence accounts login \(account)` or set refresh_token_file"))
            }
            return await refresh(with: rt)
        case .clientCredentials(let extra):
            form = [("grant_type", "client_credentials")] + extra
        case .password(let username, let password):
            if let rt = saved {
                let result = await refresh(with: rt)
                // A stored ShareFile refresh token that stopped working: fall back to the password once.
                if case .failure(let e) = result, e.kind == .permanent {
                    var again = [("grant_type", "password"), ("username", username), ("password", password), ("client_id", clientID)]
                    if let clientSecret { again.append(("client_secret", clientSecret)) }
                    return await post(again)
                }
                return result
            }
            form = [("grant_type", "password"), ("username", username), ("password", password)]
        }
        form.append(("client_id", clientID))
        if let clientSecret { form.append(("client_secret", clientSecret)) }
        return await post(form)
    }

    /// A refresh grant, never re-sent blindly: a refresh token may be single-use (Box), so an
    /// answer that was lost (no answer, a 5xx, a 429, a 2xx we could not read) may have spent it.
    /// Before the HTTP client's retry loop sends it again (the loop owns the waiting and the
    /// count of attempts), `nextRefresh` reads the token file once more — whoever got the new
    /// token (another process, or this one in an earlier run) saved it there — and a rotated token
    /// found there is used instead, or ends the loop when its access token is still good. A
    /// refresh token refused as `invalid_grant` is checked the same way before giving up.
    private func refresh(with first: String) async -> Result<TokenRecord, ArchiveError> {
        let round = RefreshRound(token: first)
        let response: HTTPResponse
        do {
            response = try await http.execute(refreshRequest(first), classify: { r in
                if r.isSuccess {
                    // A 2xx without a token in it (a cut body) may have spent the grant all the same.
                    let token = r.decoded(OAuthAPI.TokenAnswer.self)?.access_token
                    return token?.isEmpty == false ? .success : .retryable(retryAfter: nil)
                }
                if r.status == 429 || r.status >= 500 || Self.isInvalidGrant(r) { return .retryable(retryAfter: nil) }
                return .permanent
            }, beforeRetry: { [self] failure in await self.nextRefresh(after: failure, round) })
        } catch {
            if let found = round.found { return .success(found) }
            guard let r = error.response else {
                return .failure(ArchiveError.transport(error, account: account, doing: "getting an access token"))
            }
            response = r
        }
        if let found = round.found { return .success(found) }
        let sent = round.token
        let result = decode(response, form: refreshForm(sent), login: false)
        guard case .failure(let error) = result, Self.isInvalidGrant(response) else { return result }
        // Refused: a token rotated on disk since the last look still wins.
        if let fresh = rotatedOnDisk(than: sent) {
            record = fresh
            if usable(fresh) { return .success(fresh) }
        }
        guard round.lost > 0 else { return result }
        return .failure(ArchiveError(.permanent, error.message + "; an earlier refresh's answer was lost, and with it the "
                                     + "new refresh token (\(account)'s token file holds no newer one)"))
    }

    /// Asked by the HTTP retry loop before it sends a refresh grant again: a usable record in the
    /// token file ends the loop; a rotated refresh token there is sent instead of ours; a refused
    /// grant with nothing newer on disk is not sent again; a lost answer is sent again as is.
    private func nextRefresh(after failure: HTTPError, _ round: RefreshRound) -> Resend {
        if let fresh = rotatedOnDisk(than: round.token) {
            record = fresh
            if usable(fresh) { round.found = fresh; return .stop }
            guard let next = fresh.refreshToken else { return .stop }
            round.token = next
            return .send(refreshRequest(next))
        }
        if let r = failure.response, Self.isInvalidGrant(r) { return .stop }
        round.lost += 1
        return .same
    }

    /// One refresh's state, shared with the retry loop's `beforeRetry`: the refresh token sent
    /// last, how many answers were lost, and a usable record found in the token file.
    private final class RefreshRound: Sendable {
        private struct State {
            var token: String
            var lost = 0
            var found: TokenRecord?
        }
        private let state: Mutex<State>
        init(token: String) { state = Mutex(State(token: token)) }

        var token: String {
            get { state.withLock { $0.token } }
            set { state.withLock { $0.token = newValue } }
        }
        var lost: Int {
            get { state.withLock { $0.lost } }
            set { state.withLock { $0.lost = newValue } }
        }
        var found: TokenRecord? {
            get { state.withLock { $0.found } }
            set { state.withLock { $0.found = newValue } }
        }
    }

    private func refreshForm(_ token: String) -> [(String, String)] {
        var form = [("grant_type", "refresh_token"), ("refresh_token", token), ("client_id", clientID)]
        if let clientSecret { form.append(("client_secret", clientSecret)) }
        return form
    }

    private func refreshRequest(_ token: String) -> HTTPRequest {
        tokenRequest(refreshForm(token))
    }

    /// Where a refresh goes: the endpoint the last answer named, else `tokenURL`.
    private var refreshEndpoint: String {
        guard let extra = record?.extra, let named = tokenURLFromAnswer?(extra) else { return tokenURL }
        return named
    }

    /// Where a token request with `form` goes: a refresh may follow the answer; anything else
    /// (password, client credentials, a login's code) only to the configured `tokenURL`.
    private func endpoint(for form: [(String, String)]) -> String {
        form.first { $0.0 == "grant_type" }?.1 == "refresh_token" ? refreshEndpoint : tokenURL
    }

    private func tokenRequest(_ form: [(String, String)]) -> HTTPRequest {
        HTTPRequest(method: "POST", url: endpoint(for: form),
                    headers: [("Content-Type", "application/x-www-form-urlencoded"), ("Accept", "application/json")],
                    body: .data(Data(FormEncoding.encode(form).utf8)))
    }

    private static func isInvalidGrant(_ r: HTTPResponse) -> Bool {
        !r.isSuccess && r.decoded(OAuthAPI.TokenAnswer.self)?.error == .invalidGrant
    }

    /// A record whose access token can be handed out: more than a minute left, not refused.
    private func usable(_ r: TokenRecord) -> Bool {
        guard let token = r.accessToken, !token.isEmpty, token != rejectedToken, let exp = r.expiresAt else { return false }
        return exp.timeIntervalSince(now()) > 60
    }

    /// The token file's record when it holds a refresh token other than `known` (rotated by
    /// someone else since), else nil.
    private func rotatedOnDisk(than known: String?) -> TokenRecord? {
        guard let known, let disk = try? TokenStore.load(tokenFile, account: account),
              let rt = disk.refreshToken, rt != known else { return nil }
        return disk
    }

    /// A first token request (a login): starts from an empty record, so nothing of an earlier
    /// login survives; the token file changes only on success.
    func exchange(_ grantForm: [(String, String)]) async throws(ArchiveError) -> TokenRecord {
        var form = grantForm
        form.append(("client_id", clientID))
        if let clientSecret { form.append(("client_secret", clientSecret)) }
        let previous = record
        record = nil
        loaded = true
        refreshCount += 1
        switch await post(form, login: true) {
        case .success(let r): return r
        case .failure(let e): record = previous; throw e
        }
    }

    /// A grant that may be sent again when its answer is lost (a password or client
    /// credentials grant, a login's code exchange answered 429/5xx): the shared retry loop.
    private func post(_ form: [(String, String)], login: Bool = false) async -> Result<TokenRecord, ArchiveError> {
        let response: HTTPResponse
        do {
            response = try await http.execute(tokenRequest(form), classify: { r in
                (r.status == 429 || r.status >= 500) ? .retryable(retryAfter: nil) : .success
            })
        } catch {
            guard case .status = error.kind, let r = error.response else {
                return .failure(ArchiveError.transport(error, account: account, doing: "getting an access token"))
            }
            response = r
        }
        return decode(response, form: form, login: login)
    }

    private func decode(_ response: HTTPResponse, form: [(String, String)], login: Bool) -> Result<TokenRecord, ArchiveError> {
        let json = response.decoded(OAuthAPI.TokenAnswer.self)
        guard response.isSuccess else {
            // The provider's words, minus anything we sent it (a server may quote the request back).
            let sent = form.filter { ["client_secret", "password", "refresh_token", "code", "code_verifier"].contains($0.0) }.map(\.1)
            let code = Redact.text(json?.error?.description ?? "HTTP \(response.status)", secrets: sent)
            let detail = Redact.text(json?.error_description ?? "", secrets: sent)
            let kind: ArchiveError.Kind = (response.status == 429 || response.status >= 500) ? .transient : .permanent
            var hint = ""
            if code == "invalid_grant" {
                hint = login ? " (the code or password was refused; a code works once and only for minutes: run `evidence accounts login \(account)` again)"
                             : " (the refresh token or password was refused: run `evidence accounts login \(account)`)"
            }
            if code == "invalid_client" { hint = " (check client_id and the client secret)" }
            // A refused grant or client is refused credentials, whatever status carried it
            // (RFC 6749 answers 400): the account pauses until they are fixed.
            let refused = code == "invalid_grant" || code == "invalid_client" || response.status == 401 || response.status == 403
            var error = ArchiveError(kind, "\(account): token endpoint \(Redact.url(endpoint(for: form))) answered \(code)\(detail.isEmpty ? "" : ": \(detail)")\(hint)",
                                     httpStatus: response.status)
            error.grantRefused = refused
            return .failure(error)
        }
        guard let json else {
            // A 200 that is not JSON at all (a proxy's or captive portal's page, a cut body) says
            // nothing about the credentials: try again later rather than give up on the item.
            return .failure(ArchiveError(.transient, "\(account): token endpoint \(Redact.url(endpoint(for: form))) answered HTTP \(response.status) "
                                         + "with \(response.header("content-type") ?? "no content type"), \(response.body.count) bytes, not JSON"))
        }
        guard let access = json.access_token, !access.isEmpty else {
            return .failure(ArchiveError(.permanent, "\(account): token endpoint \(Redact.url(endpoint(for: form))) answered without access_token"))
        }
        let lifetime = json.expires_in ?? 3600
        var next = record ?? TokenRecord()
        next.accessToken = access
        next.obtainedAt = now()
        next.expiresAt = now().addingTimeInterval(lifetime)
        if let rt = json.refresh_token, !rt.isEmpty { next.refreshToken = rt }
        next.extra.merge(json.extras) { _, new in new }
        // Persist first (Box's old refresh token is already spent), then use.
        do { try TokenStore.save(next, to: tokenFile, account: account) } catch { return .failure(error) }
        record = next
        return .success(next)
    }
}

/// `application/x-www-form-urlencoded` bodies and query strings.
public enum FormEncoding {
    static let allowed = CharacterSet(charactersIn: "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~")

    public static func component(_ s: String) -> String {
        s.addingPercentEncoding(withAllowedCharacters: allowed) ?? s
    }

    public static func encode(_ pairs: [(String, String)]) -> String {
        pairs.map { component($0.0) + "=" + component($0.1) }.joined(separator: "&")
    }
}
