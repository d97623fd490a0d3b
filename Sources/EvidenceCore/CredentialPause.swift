import Foundation

/// An account or notary whose credentials its service refused (HTTP 401/403, an OAuth grant
/// refused): its work waits, no attempt counted and no request sent, until the secret changes
/// (seen by its fingerprint, or after SIGHUP) or an operator runs `evidence accounts resume NAME`.
/// Kept in the catalog (`meta`, key `pause:SCOPE`), so every node, `status`, `doctor`, the
/// portal and `/metrics` see the same one alert.
public struct CredentialPause: Codable, Sendable, Equatable {
    public enum Kind: String, Codable, Sendable {
        case account, notary
    }
    public var kind: Kind
    /// The `[archives.NAME]` or `[notaries.NAME]` name.
    public var name: String
    /// What the service answered, summarised (never a secret: the messages are redacted where made).
    public var reason: String
    /// What to do: the fields to fix, and the command where one applies.
    public var fix: String
    public var since: Date
    /// SHA-256 over the secrets the account or notary was built with when it was refused;
    /// nil when they could not be read. A different value now means someone changed them.
    public var fingerprint: String?

    public init(kind: Kind, name: String, reason: String, fix: String, since: Date, fingerprint: String?) {
        self.kind = kind; self.name = name; self.reason = reason; self.fix = fix; self.since = since; self.fingerprint = fingerprint
    }

    /// `account:NAME` or `notary:NAME`: what jobs are matched against.
    public var scope: String { Self.scope(kind, name) }
    public static func scope(_ kind: Kind, _ name: String) -> String { "\(kind.rawValue):\(name)" }
    /// The catalog `meta` key prefix of every pause.
    public static let metaPrefix = "pause:"

    /// One line for `status`, `doctor` and logs.
    public var line: String {
        "\(kind.rawValue) \(name) paused since \(Timestamp.string(since)): \(reason) — \(fix)"
    }

    public func encoded() -> String {
        String(decoding: (try? CanonicalJSON.encode(self)) ?? Data("{}".utf8), as: UTF8.self)
    }

    public static func decoded(_ text: String) -> CredentialPause? {
        try? CanonicalJSON.decoder().decode(CredentialPause.self, from: Data(text.utf8))
    }

    /// How an account's refusal is fixed: `accounts login` (every kind that can be refused signs
    /// in that way), or its fields.
    public static func accountFix(_ name: String) -> String {
        "run `evidence accounts login \(name)`, or fix the credentials of [archives.\(name)] (password_env/password_file, tokens); "
            + "the account resumes when they change (or after SIGHUP), or with `evidence accounts resume \(name)`"
    }

    /// How a notary's refusal is fixed.
    public static func notaryFix(_ name: String) -> String {
        "fix api_key_env or api_key_file of [notaries.\(name)]; the notary resumes when the key changes (or after SIGHUP), "
            + "or with `evidence accounts resume \(name)`"
    }
}
