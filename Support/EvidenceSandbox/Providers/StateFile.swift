import EvidenceStore
import Foundation

/// An emulator's persisted state: one JSON file, rewritten whole and atomically (temp, fsync,
/// rename) on every change, so a sandbox restarted on the same folder has its files and tokens.
/// Errors name the file.
enum StateFile {
    /// The state in `path`; nil when the file does not exist yet.
    static func load<T: Decodable>(_ type: T.Type, from path: String) throws -> T? {
        guard FileManager.default.fileExists(atPath: path) else { return nil }
        do {
            return try JSONDecoder().decode(T.self, from: Data(contentsOf: URL(fileURLWithPath: path)))
        } catch {
            throw SandboxError.stateFile(path: path, reason: "\(error)")
        }
    }

    static func save<T: Encodable>(_ value: T, to path: String) throws {
        do {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            try AtomicFile.write(try encoder.encode(value), to: path)
        } catch {
            throw SandboxError.stateFile(path: path, reason: "\(error)")
        }
    }
}
