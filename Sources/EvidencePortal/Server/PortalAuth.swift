import EvidenceStore
import Foundation

/// Who may read the portal: a bearer token and/or one HTTP Basic user. Secrets are kept only
/// as SHA-256 digests, compared in constant time (no early exit, no length leak), and never
/// logged or shown.
public struct PortalAuth: Sendable {
    private let tokenDigest: [UInt8]?
    private let userDigest: [UInt8]?
    private let passwordDigest: [UInt8]?

    /// The `WWW-Authenticate` challenge sent with 401 (browsers then ask for user and password).
    public static let challenge = "Basic realm=\"evidence\", charset=\"UTF-8\""

    /// At least one of `token` or `user` + `password` must be given.
    public init(token: String?, user: String?, password: String?) throws {
        guard token != nil || (user != nil && password != nil) else { throw AuthError.noMethod }
        tokenDigest = token.map(Self.digest)
        if let user, let password {
            userDigest = Self.digest(user)
            passwordDigest = Self.digest(password)
        } else {
            userDigest = nil
            passwordDigest = nil
        }
    }

    public enum AuthError: Error, CustomStringConvertible {
        case noMethod
        public var description: String { "the portal needs a token or a user and password" }
    }

    /// True when the `Authorization` header carries the token or the user and password.
    public func allows(authorization: String?) -> Bool {
        guard let authorization else { return false }
        let trimmed = authorization.trimmingCharacters(in: .whitespaces)
        guard let space = trimmed.firstIndex(of: " ") else { return false }
        let scheme = trimmed[..<space].lowercased()
        let credentials = trimmed[space...].trimmingCharacters(in: .whitespaces)
        switch scheme {
        case "bearer":
            guard let tokenDigest else { return false }
            return Self.equal(Self.digest(credentials), tokenDigest)
        case "basic":
            guard let userDigest, let passwordDigest,
                  let decoded = Data(base64Encoded: credentials), let text = String(data: decoded, encoding: .utf8),
                  let colon = text.firstIndex(of: ":") else { return false }
            let userOK = Self.equal(Self.digest(String(text[..<colon])), userDigest)
            let passwordOK = Self.equal(Self.digest(String(text[text.index(after: colon)...])), passwordDigest)
            return userOK && passwordOK
        default:
            return false
        }
    }

    /// The user name of Basic credentials (whether or not it is the right one); nil for any other scheme.
    static func basicUser(authorization: String) -> String? {
        let trimmed = authorization.trimmingCharacters(in: .whitespaces)
        guard let space = trimmed.firstIndex(of: " "), trimmed[..<space].lowercased() == "basic",
              let decoded = Data(base64Encoded: trimmed[space...].trimmingCharacters(in: .whitespaces)),
              let text = String(data: decoded, encoding: .utf8), let colon = text.firstIndex(of: ":") else { return nil }
        return String(text[..<colon])
    }

    static func digest(_ s: String) -> [UInt8] { Array(SHA256Hasher.hash(Data(s.utf8)).hex.utf8) }

    /// Constant time for equal-length inputs (digests always are).
    static func equal(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        var diff: UInt8 = 0
        for i in 0..<a.count { diff |= a[i] ^ b[i] }
        return diff == 0
    }
}
