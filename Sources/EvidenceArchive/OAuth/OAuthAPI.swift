import EvidenceCore
import Foundation

/// The OAuth 2 token endpoint's answer (RFC 6749 §5.1 and §5.2) with the providers' extras:
/// ShareFile's `subdomain`/`apicp`/`appcp`, Dropbox's `account_id`.
enum OAuthAPI {
    struct TokenAnswer: Decodable {
        var access_token: String?
        var refresh_token: String?
        /// Seconds; some servers send it as a string.
        var expires_in: Double?
        var subdomain: String?
        var apicp: String?
        var appcp: String?
        var account_id: String?
        var error: ErrorCode?
        var error_description: String?

        enum Keys: String, CodingKey {
            case access_token, refresh_token, expires_in, subdomain, apicp, appcp, account_id, error, error_description
        }

        init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: Keys.self)
            func text(_ key: Keys) -> String? { try? c.decodeIfPresent(String.self, forKey: key) }
            access_token = text(.access_token)
            refresh_token = text(.refresh_token)
            if let n = try? c.decodeIfPresent(Double.self, forKey: .expires_in) { expires_in = n }
            else { expires_in = text(.expires_in).flatMap { Double($0) } }
            subdomain = text(.subdomain)
            apicp = text(.apicp)
            appcp = text(.appcp)
            account_id = text(.account_id)
            error = text(.error).map(ErrorCode.init)
            error_description = text(.error_description)
        }

        /// The provider-specific extras kept with the token (ShareFile's API host comes from them).
        var extras: [String: String] {
            var out: [String: String] = [:]
            for (key, value) in [("subdomain", subdomain), ("apicp", apicp), ("appcp", appcp), ("account_id", account_id)] {
                if let value { out[key] = value }
            }
            return out
        }
    }

    /// RFC 6749 §5.2 error codes that change what we do; any other is `.other`.
    enum ErrorCode: Equatable, CustomStringConvertible {
        case invalidGrant, invalidClient
        case other(String)

        init(_ text: String) {
            switch text {
            case "invalid_grant": self = .invalidGrant
            case "invalid_client": self = .invalidClient
            default: self = .other(text)
            }
        }

        var description: String {
            switch self {
            case .invalidGrant: return "invalid_grant"
            case .invalidClient: return "invalid_client"
            case .other(let s): return s
            }
        }
    }
}
