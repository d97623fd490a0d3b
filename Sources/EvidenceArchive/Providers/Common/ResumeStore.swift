import EvidenceCore
import EvidenceStore
import Foundation
import Glibc

/// Where chunked uploads remember how far they got: one small JSON file per (account, remote
/// path, content), rewritten atomically after every chunk the provider acknowledged. A process
/// killed mid-upload finds the provider's session id and offset here and goes on from there.
struct ResumeStore: Sendable {
    /// nil: resuming is off (nothing persisted; a crash restarts the upload).
    let directory: String?
    let account: String

    func key(path: String, hash: String, size: Int64) -> String {
        SHA256Hasher.hash(Data("\(account)\n\(path)\n\(hash)\n\(size)".utf8)).hex
    }

    func load<T: Decodable>(_ type: T.Type, key: String) -> T? {
        guard let directory, let data = FileManager.default.contents(atPath: "\(directory)/\(key).json") else { return nil }
        return try? JSONDecoder().decode(T.self, from: data)
    }

    func save<T: Encodable>(_ value: T, key: String) throws(ArchiveError) {
        guard let directory else { return }
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true,
                                                    attributes: [.posixPermissions: 0o700])
            try AtomicFile.write(try JSONEncoder().encode(value), to: "\(directory)/\(key).json", mode: 0o600)
        } catch {
            throw ArchiveError(.local, "\(account): cannot save upload progress in \(directory): \(error)")
        }
    }

    func remove(key: String) {
        guard let directory else { return }
        unlink("\(directory)/\(key).json")
    }
}
