import EvidenceCore
import EvidenceStore
import Foundation

/// RFC 7636 proof key: a fresh random `verifier` (64 characters of the unreserved set) and its
/// `S256` challenge, BASE64URL(SHA-256(verifier)) without padding.
public struct PKCE: Sendable {
    public let verifier: String
    public var challenge: String { Self.challenge(for: verifier) }

    public init() {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
        var rng = SystemRandomNumberGenerator()  // getrandom(2) on Linux
        verifier = String((0..<64).map { _ in alphabet[Int(rng.next(upperBound: UInt32(alphabet.count)))] })
    }

    public init(verifier: String) { self.verifier = verifier }

    public static func challenge(for verifier: String) -> String {
        let bytes = Hex.decode(SHA256Hasher.hash(Data(verifier.utf8)).hex) ?? []
        return Data(bytes).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }
}

/// The paste-back authorization-code flow (like `rclone authorize`): the operator opens
/// `url` in any browser, signs in and approves, and pastes back the code the provider shows
/// (or, where the provider redirects, the whole address it landed on).
public struct AuthorizationRequest: Sendable {
    public let url: String
    public let pkce: PKCE
    public let redirectURI: String?

    /// `extra` adds provider-specific parameters (Dropbox: `token_access_type=offline`).
    public init(authorizeURL: String, clientID: String, redirectURI: String?, extra: [(String, String)] = [],
                pkce: PKCE = PKCE()) {
        var q: [(String, String)] = [("client_id", clientID), ("response_type", "code"),
                                     ("code_challenge", pkce.challenge), ("code_challenge_method", "S256")]
        if let redirectURI { q.append(("redirect_uri", redirectURI)) }
        q += extra
        self.url = authorizeURL + (authorizeURL.contains("?") ? "&" : "?") + FormEncoding.encode(q)
        self.pkce = pkce
        self.redirectURI = redirectURI
    }

    /// The code in what the operator pasted: the bare code, or an address (or just its query)
    /// with `code=…`, read by Foundation's `URLComponents` (percent-decoded). Nil when there is
    /// nothing usable, or when the address is not one `URLComponents` can read.
    public static func code(fromPasted text: String) -> String? {
        let t = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !t.isEmpty else { return nil }
        if t.contains("code=") {
            let components = t.contains("?") ? URLComponents(string: t) : URLComponents(string: "?" + t)
            guard let items = components?.queryItems else { return nil }
            guard let code = items.first(where: { $0.name == "code" })?.value, !code.isEmpty else { return nil }
            return code
        }
        guard !t.contains(where: { $0 == " " || $0 == "\t" }) else { return nil }
        return t
    }
}

extension OAuthSession {
    /// Exchanges an authorization code for tokens (`grant_type=authorization_code` with the
    /// PKCE verifier) and saves them to the token file, replacing what it held. Nothing is
    /// saved when the endpoint refuses (a wrong, used or expired code: `invalid_grant`).
    public func login(code: String, request: AuthorizationRequest) async throws(ArchiveError) -> TokenRecord {
        var form = [("grant_type", "authorization_code"), ("code", code), ("code_verifier", request.pkce.verifier)]
        if let r = request.redirectURI { form.append(("redirect_uri", r)) }
        return try await exchange(form)
    }

    /// The resource-owner password grant (ShareFile): the password is sent once and never
    /// stored; the refresh token answered is saved.
    public func login(username: String, password: String) async throws(ArchiveError) -> TokenRecord {
        try await exchange([("grant_type", "password"), ("username", username), ("password", password)])
    }
}
