import EvidenceHTTP
import Foundation

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
    let clientID: String
    let clientSecret: String?
    let grant: Grant
    let tokenFile: String
    let http: HTTPClient
    let now: @Sendable () -> Date
    private var record: TokenRecord?
    private var loaded = false
    private var inFlight: Task<Result<TokenRecord, ArchiveError>, Never>?
    /// Token endpoint calls made by this process (tests assert single flight with it).
    public private(set) var refreshCount = 0

    public init(account: String, tokenURL: String, clientID: String, clientSecret: String?, grant: Grant,
                tokenFile: String, http: HTTPClient, now: @escaping @Sendable () -> Date = { Date() }) {
        self.account = account; self.tokenURL = tokenURL; self.clientID = clientID; self.clientSecret = clientSecret
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
        var form: [(String, String)] = []
        let saved = record?.refreshToken
        switch grant {
        case .refreshToken(let initial):
            guard let rt = saved ?? initial else {
                return .failure(ArchiveError(.permanent, "\(account): no refresh token: run `evidence accounts login \(account)` or set refresh_token_file"))
            }
            form = [("grant_type", "refresh_token"), ("refresh_token", rt)]
        case .clientCredentials(let extra):
            form = [("grant_type", "client_credentials")] + extra
        case .password(let username, let password):
            if let rt = saved {
                form = [("grant_type", "refresh_token"), ("refresh_token", rt)]
            } else {
                form = [("grant_type", "password"), ("username", username), ("password", password)]
            }
        }
        form.append(("client_id", clientID))
        if let clientSecret { form.append(("client_secret", clientSecret)) }
        let result = await post(form)
        // A stored ShareFile refresh token that stopped working: fall back to the password once.
        if case .failure(let e) = result, e.kind == .permanent, saved != nil, case .password(let u, let p) = grant {
            var again = [("grant_type", "password"), ("username", u), ("password", p), ("client_id", clientID)]
            if let clientSecret { again.append(("client_secret", clientSecret)) }
            return await post(again)
        }
        return result
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

    private func post(_ form: [(String, String)], login: Bool = false) async -> Result<TokenRecord, ArchiveError> {
        let request = HTTPRequest(method: "POST", url: tokenURL,
                                  headers: [("Content-Type", "application/x-www-form-urlencoded"), ("Accept", "application/json")],
                                  body: .data(Data(FormEncoding.encode(form).utf8)))
        let response: HTTPResponse
        do {
            response = try await http.execute(request, classify: { r in
                (r.status == 429 || r.status >= 500) ? .retryable(retryAfter: nil) : .success
            })
        } catch {
            if case .status = error.kind, let r = error.response { response = r } else {
                return .failure(ArchiveError.transport(error, account: account, doing: "getting an access token"))
            }
        }
        let json = (try? JSONSerialization.jsonObject(with: response.body)) as? [String: Any]
        guard response.isSuccess else {
            // The provider's words, minus anything we sent it (a server may quote the request back).
            let sent = form.filter { ["client_secret", "password", "refresh_token", "code", "code_verifier"].contains($0.0) }.map(\.1)
            let code = Redact.text(json?["error"] as? String ?? "HTTP \(response.status)", secrets: sent)
            let detail = Redact.text(json?["error_description"] as? String ?? "", secrets: sent)
            let kind: ArchiveError.Kind = (response.status == 429 || response.status >= 500) ? .transient : .permanent
            var hint = ""
            if code == "invalid_grant" {
                hint = login ? " (the code or password was refused; a code works once and only for minutes: run `evidence accounts login \(account)` again)"
                             : " (the refresh token or password was refused: run `evidence accounts login \(account)`)"
            }
            if code == "invalid_client" { hint = " (check client_id and the client secret)" }
            return .failure(ArchiveError(kind, "\(account): token endpoint \(Redact.url(tokenURL)) answered \(code)\(detail.isEmpty ? "" : ": \(detail)")\(hint)"))
        }
        guard let json else {
            // A 200 that is not JSON at all (a proxy's or captive portal's page, a cut body) says
            // nothing about the credentials: try again later rather than give up on the item.
            return .failure(ArchiveError(.transient, "\(account): token endpoint \(Redact.url(tokenURL)) answered HTTP \(response.status) "
                                         + "with \(response.header("content-type") ?? "no content type"), \(response.body.count) bytes, not JSON"))
        }
        guard let access = json["access_token"] as? String, !access.isEmpty else {
            return .failure(ArchiveError(.permanent, "\(account): token endpoint \(Redact.url(tokenURL)) answered without access_token"))
        }
        let lifetime = (json["expires_in"] as? NSNumber)?.doubleValue ?? Double(json["expires_in"] as? String ?? "") ?? 3600
        var next = record ?? TokenRecord()
        next.accessToken = access
        next.obtainedAt = now()
        next.expiresAt = now().addingTimeInterval(lifetime)
        if let rt = json["refresh_token"] as? String, !rt.isEmpty { next.refreshToken = rt }
        for key in ["subdomain", "apicp", "appcp", "account_id"] {
            if let v = json[key] as? String { next.extra[key] = v }
        }
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
