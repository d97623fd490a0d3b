import EvidenceStore
import Foundation
import Glibc

/// What an OAuth account keeps between runs: the current access token (so a restart does not
/// ask for a new one), and the refresh token, which for Box changes on every refresh.
public struct TokenRecord: Codable, Sendable, Equatable {
    public var accessToken: String?
    public var expiresAt: Date?
    public var refreshToken: String?
    public var obtainedAt: Date?
    /// Provider extras that are not secrets (ShareFile `subdomain`/`apicp`, Dropbox `account_id`).
    public var extra: [String: String]

    public init(accessToken: String? = nil, expiresAt: Date? = nil, refreshToken: String? = nil,
                obtainedAt: Date? = nil, extra: [String: String] = [:]) {
        self.accessToken = accessToken; self.expiresAt = expiresAt; self.refreshToken = refreshToken
        self.obtainedAt = obtainedAt; self.extra = extra
    }

    enum CodingKeys: String, CodingKey {
        case accessToken = "access_token", expiresAt = "expires_at", refreshToken = "refresh_token"
        case obtainedAt = "obtained_at", extra
    }
}

/// Token files: JSON, mode 0600, written temp + fsync + rename (so a crash leaves the old or the
/// new file, never half of one), in a 0700 folder. A token file others can read is refused,
/// as ssh refuses a readable private key.
public enum TokenStore {
    public static func load(_ path: String, account: String) throws(ArchiveError) -> TokenRecord? {
        let mode: Int
        do {
            guard let m = try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? NSNumber else {
                throw ArchiveError(.local, "\(account): token file \(path): no permissions")
            }
            mode = m.intValue
        } catch let e as ArchiveError {
            throw e
        } catch {
            if !FileManager.default.fileExists(atPath: path) { return nil }
            throw ArchiveError(.local, "\(account): token file \(path): \(error.localizedDescription)")
        }
        guard mode & 0o077 == 0 else {
            throw ArchiveError(.permanent, "\(account): token file \(path) is readable by others (mode \(String(mode & 0o777, radix: 8))); run `chmod 600 \(path)`")
        }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw ArchiveError(.local, "\(account): token file \(path) cannot be read")
        }
        do {
            return try decoder.decode(TokenRecord.self, from: data)
        } catch {
            throw ArchiveError(.permanent, "\(account): token file \(path) is not a token record (\(error.localizedDescription)); remove it and log in again")
        }
    }

    public static func save(_ record: TokenRecord, to path: String, account: String) throws(ArchiveError) {
        let dir = (path as NSString).deletingLastPathComponent
        if !dir.isEmpty && !FileManager.default.fileExists(atPath: dir) {
            do {
                try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true,
                                                        attributes: [.posixPermissions: 0o700])
            } catch {
                throw ArchiveError(.local, "\(account): cannot create token folder \(dir): \(error.localizedDescription)")
            }
        }
        let data: Data
        do { data = try encoder.encode(record) } catch {
            throw ArchiveError(.local, "\(account): cannot encode token record: \(error)")
        }
        do { try AtomicFile.write(data, to: path, mode: 0o600) } catch {
            throw ArchiveError(.local, "\(account): cannot save token file: \(error.description)")
        }
    }

    public static func remove(_ path: String) {
        unlink(path)
    }

    static let encoder: JSONEncoder = {
        let e = JSONEncoder()
        e.dateEncodingStrategy = .iso8601
        e.outputFormatting = [.sortedKeys, .prettyPrinted]
        return e
    }()
    static let decoder: JSONDecoder = {
        let d = JSONDecoder()
        d.dateDecodingStrategy = .iso8601
        return d
    }()
}
