import ArgumentParser
import EvidenceArchive
import EvidencePipeline
import EvidenceStore
import Foundation
import Logging

struct AccountsPut: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "put",
        abstract: "Copy local files to an account (like `rclone copy`), each verified by the provider's hash.",
        discussion: Help.reflow("""
        Uploads FILEs into --to (a folder below the account's root, created if missing), up to
        --jobs at a time, large files in resumable chunks. A file already there with the same
        content is skipped; a different one is never replaced (that file fails, the rest go on).
        Each upload is checked against the provider's own hash; where the server reports none
        (a plain WebDAV server) --read-back downloads and re-hashes it. Prints a summary with the
        throughput (`make bench` compares it with `rclone copy` to the same server).

          evidence accounts put office clip.mp4 notes.txt --to incoming/2026-11
          evidence accounts put vault /srv/export/*.pdf --jobs 8 --json

        Exit codes: 0 every file is there · 1 some failed · 2 usage or config error.
        """)
    )

    @OptionGroup var global: GlobalOptions

    @Argument(help: ArgumentHelp("Account name ([archives.NAME]).", valueName: "name"))
    var name: String

    @Argument(help: ArgumentHelp("Files to copy.", valueName: "file"))
    var files: [String]

    @Option(name: .long, help: ArgumentHelp("Remote folder (default: the account's root).", valueName: "dir"))
    var to: String = ""

    @Option(name: .long, help: "Files uploaded at once.")
    var jobs: Int = 4

    @Flag(name: .long, help: "Where the server reports no hash, download each copy and compare.")
    var readBack = false

    func validate() throws {
        guard (1...64).contains(jobs) else { throw ValidationError("--jobs must be 1…64") }
        guard !files.isEmpty else { throw ValidationError("give at least one file") }
    }

    struct Outcome: Encodable {
        var file: String
        var remote: String
        var size: Int64
        var result: String   // uploaded | already there | failed
        var verifiedBy: String?
        var error: String?
    }

    struct Summary: Encodable {
        var account: String
        var files: Int
        var failed: Int
        var bytes: Int64
        var seconds: Double
        var megabytesPerSecond: Double
        var outcomes: [Outcome]
    }

    func run() async throws {
        let config = try global.loadConfig()
        StderrLogHandler.bootstrap(level: global.verbose ? .debug : .warning, format: .text)
        guard config.archives[name] != nil else {
            throw CLIError.usage("no archive account \"\(name)\" in \(config.file ?? "the embedded defaults")")
        }
        let home = try global.homePath(config)
        let archives: Archives
        do {
            archives = try Archives.build(config: config, used: [name], home: home, logger: Logger(label: "evidence"))
        } catch { throw CLIError.config(error.description) }
        guard let p = archives.providers[name] else { throw CLIError.config("account \(name) was not built") }
        let folder = RemotePath.sanitized(to, for: p)
        let started = Date()
        do { try await p.makeFolders(folder) } catch {
            Output.err(error.message)
            throw ExitCode(1)
        }
        let readBack = self.readBack
        var outcomes: [Outcome] = []
        try await withThrowingTaskGroup(of: Outcome.self) { group in
            var next = 0
            func add() {
                let file = files[next]
                next += 1
                group.addTask { await Self.put(file, into: folder, provider: p, readBack: readBack) }
            }
            while next < min(jobs, files.count) { add() }
            while let o = try await group.next() {
                outcomes.append(o)
                if !global.json && !global.quiet {
                    Output.err(o.result == "failed" ? "✗ \(o.file): \(o.error ?? "")" : "✓ \(o.file) → \(o.remote) (\(o.result), \(o.verifiedBy ?? "size only"))")
                }
                if next < files.count { add() }
            }
        }
        let seconds = Date().timeIntervalSince(started)
        let bytes = outcomes.filter { $0.result == "uploaded" }.reduce(Int64(0)) { $0 + $1.size }
        let failed = outcomes.filter { $0.result == "failed" }.count
        let summary = Summary(account: name, files: outcomes.count, failed: failed, bytes: bytes, seconds: seconds,
                              megabytesPerSecond: Double(bytes) / 1_048_576 / max(seconds, 0.001), outcomes: outcomes)
        if global.json {
            Output.json(summary)
        } else {
            Output.line(String(format: "%d file(s), %d failed, %@ uploaded in %.2f s (%.1f MiB/s)", summary.files, failed,
                               Output.bytes(bytes), seconds, summary.megabytesPerSecond))
        }
        if failed > 0 { throw ExitCode(1) }
    }

    static func put(_ file: String, into folder: String, provider p: any ArchiveProvider, readBack: Bool) async -> Outcome {
        let remote = (folder.isEmpty ? "" : folder + "/") + p.sanitize(component: (file as NSString).lastPathComponent)
        var o = Outcome(file: file, remote: remote, size: 0, result: "failed")
        do {
            let attributes = try FileManager.default.attributesOfItem(atPath: file)
            guard attributes[.type] as? FileAttributeType == .typeRegular else {
                throw ArchiveError(.local, "\(file): not a regular file")
            }
            o.size = (attributes[.size] as? NSNumber)?.int64Value ?? 0
            // The provider's digest: first when the upload carries it; else only once the server
            // reports a hash to compare with (a plain WebDAV server reports none: reading and
            // hashing the file a second time there would only slow the upload down).
            let kind = p.hashKind
            var computed: String?
            func ourDigest() async throws -> String {
                if let computed { return computed }
                let d = try await Task.detached { () throws(StoreError) -> String in try kind.digest(of: file) }.value
                computed = d
                return d
            }
            let hash = p.checksHashOnUpload ? try await ourDigest() : ""
            if let existing = try await p.stat(remote) {
                var same = existing.size == o.size
                if same, let theirs = existing.hash { same = try await theirs == ourDigest() }
                if same {
                    o.result = "already there"; o.verifiedBy = existing.hash.map { "\(p.hashKind.rawValue):\($0)" }
                    return o
                }
                throw ArchiveError(.conflict, "\(p.account): \(remote) holds a different file; not replacing it")
            }
            _ = try await p.upload(local: file, size: o.size, hash: hash, to: remote, progress: nil)
            guard let stored = try await p.stat(remote), stored.size == o.size else {
                throw ArchiveError(.permanent, "\(p.account): \(remote) is not there (or has another size) after the upload")
            }
            if let h = stored.hash {
                guard try await h == ourDigest() else { throw ArchiveError(.permanent, "\(p.account): \(remote): the provider's \(p.hashKind.rawValue) differs from ours") }
                o.verifiedBy = "\(p.hashKind.rawValue):\(h)"
            } else if readBack {
                let temp = NSTemporaryDirectory() + "evidence-put-\(UUID().uuidString)"
                defer { unlink(temp) }
                try await p.download(remote, to: temp)
                guard try FileHasher.hash(path: temp).digest == (try FileHasher.hash(path: file).digest) else {
                    throw ArchiveError(.permanent, "\(p.account): \(remote): the copy read back differs")
                }
                o.verifiedBy = "read-back sha256"
            }
            o.result = "uploaded"
        } catch let e as ArchiveError {
            o.error = e.message
        } catch {
            o.error = "\(error)"
        }
        return o
    }
}
