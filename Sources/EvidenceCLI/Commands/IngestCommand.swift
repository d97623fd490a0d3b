import ArgumentParser
import EvidenceCatalog
import EvidenceCore
import EvidencePipeline
import Foundation
import Synchronization

struct IngestCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ingest",
        abstract: "Store files and folders now, without the service.",
        discussion: Help.reflow("""
        Each file is read once: hashed and copied into the store in the same pass, fsynced,
        renamed into objects/sha256/ab/<hash>, and recorded in the catalog with its media
        metadata and a custody event. Files read while others are being made durable are
        committed together (one folder fsync and one catalog transaction per batch); none is
        reported before it is durable. Content already stored is not written twice: the new
        name and path are recorded on the existing item.

        Folders are walked recursively. Symbolic links are reported and not followed unless
        --follow-symlinks. FIFOs, sockets and devices are refused without being opened. A file
        that changes while it is read is not stored (it is retried up to --retries times).
        Refused files are listed in the quarantine (`evidence status`) and left in place.

        Exit codes: 0 every file ingested · 1 some paths were refused or failed · 2 usage error.
        """)
    )

    @OptionGroup var global: GlobalOptions

    @Flag(name: .long, help: "Ingest the targets of symbolic links given or found.")
    var followSymlinks = false

    @Option(name: .long, help: "Re-reads of a file that changed while read, before giving up.")
    var retries = 3

    @Option(name: [.customShort("j"), .long], help: "Files ingested at once (default: config workers.ingest, one per core, at least 4).")
    var jobs: Int?

    @Option(name: .customLong("digest"), help: ArgumentHelp(
        "Also compute this digest from the same read and record it (md5, sha1, sha512; repeatable). SHA-256 is always computed.",
        valueName: "name"))
    var digests: [String] = []

    @Argument(help: ArgumentHelp("Files and folders to ingest.", valueName: "path"))
    var paths: [String]

    struct Entry: Encodable {
        var path: String
        var status: String
        var item: Int64?
        var sha256: String?
        var size: Int64?
        var media: String?
        var reason: String?
    }

    func validate() throws {
        if paths.isEmpty { throw ValidationError("give at least one PATH to ingest") }
        if retries < 0 { throw ValidationError("--retries must be 0 or more") }
        if let jobs, !(1...64).contains(jobs) { throw ValidationError("--jobs must be between 1 and 64") }
        for d in digests where DigestAlgorithm(rawValue: d) == nil {
            throw ValidationError("--digest \(d): not a digest this tool computes (md5, sha1, sha256, sha512)")
        }
    }

    func run() async throws {
        let config = try global.loadConfig()
        let home = try global.openHome()
        var configured = Ingestor(home: home, actor: "cli:\(ProcessInfo.processInfo.userName)",
                                  prober: ChildMediaProbe.prober(executable: ProbeCommand.executable))
        configured.digests = digests.compactMap(DigestAlgorithm.init(rawValue:)).filter { $0 != .sha256 }
        let ingestor = configured
        let walker = SourceWalker(followSymlinks: followSymlinks)
        let (files, refused) = walker.expand(paths)
        var entries: [Entry] = []
        var failures = 0

        for r in refused {
            failures += 1
            if r.quarantine { _ = ingestor.quarantine(path: r.path, rule: nil, reason: r.reason) }
            entries.append(Entry(path: r.path, status: "rejected", reason: r.reason))
            Output.err(r.reason)
        }

        let progress = Progress(totalBytes: files.reduce(0) { $0 + $1.size }, totalFiles: files.count,
                                quiet: global.quiet || global.json)
        // Several files read at once; those read wait together for their batch's commit (one
        // folder fsync and one catalog transaction per batch, not per file). The board (results,
        // next file) is held while anything is printed, so lines and the progress bar never mix.
        final class Board: Sendable {
            struct State {
                var results: [Entry?]
                var next = 0
            }
            let state: Mutex<State>
            init(_ n: Int) { state = Mutex(State(results: Array(repeating: nil, count: n))) }
        }
        let board = Board(files.count)
        let workers = max(1, min(jobs ?? config.workers.ingest, files.count))
        let committed = DispatchGroup()
        let listFiles = !global.json && !global.quiet
        // Called on the committing thread too: the output goes where this command's goes.
        let output = OutputCapture.current
        let report = { @Sendable (i: Int, outcome: Ingestor.Outcome, attempt: Int) in
            let file = files[i]
            OutputCapture.$current.withValue(output) {
                board.state.withLock { board in
                    progress.finishFile(size: file.size)
                    switch outcome {
                    case .ingested(let o):
                        let item = o.item
                        board.results[i] = Entry(path: file.path, status: Self.status(o), item: item.id, sha256: item.sha256.hex,
                                           size: item.size, media: item.media?.summary)
                        if listFiles {
                            Progress.clearLine()
                            Output.line("\(item.sha256.short)  #\(item.id)  \(o.label.padding(toLength: 16, withPad: " ", startingAt: 0))  \(file.path)")
                        }
                    case .rejected(let reason, _), .retryLater(let reason), .failed(let reason):
                        // Whoever reads this must know nothing will try again by itself.
                        let gaveUp: Bool = { if case .retryLater = outcome { return true } else { return false } }()
                        let told = gaveUp ? "\(reason) (gave up after \(attempt) re-read\(attempt == 1 ? "" : "s"); ingest it again once it is complete)" : reason
                        board.results[i] = Entry(path: file.path, status: Self.status(outcome), reason: told)
                        Output.err(told)
                    }
                }
            }
        }
        // The same re-reads as the watcher's for a file still being written (`Ingestor.Reread`):
        // --retries of them, 0.5 s, 1 s, 1.5 s … apart.
        let reread = Ingestor.Reread(delays: (0..<retries).map { 0.5 * Double($0 + 1) }, quiet: 0)
        let room = AsyncGate(Ingestor.maxPending)
        let followSymlinks = self.followSymlinks
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<workers {
                group.addTask {
                    while true {
                        let i = board.state.withLock { board in
                            defer { board.next += 1 }
                            return board.next
                        }
                        guard i < files.count else { return }
                        let file = files[i]
                        await room.acquire()
                        let (staging, rereads) = await ingestor.stage(path: file.path, followSymlinks: followSymlinks, retrying: reread) { bytes in
                            board.state.withLock { _ in progress.update(fileBytes: bytes, name: file.path) }
                        }
                        switch staging {
                        case .finished(let outcome):
                            report(i, outcome, rereads)
                            room.release()
                        case .staged(let staged):
                            committed.enter()
                            ingestor.commit(staged) { outcome in
                                report(i, outcome, rereads)
                                room.release()
                                committed.leave()
                            }
                        }
                    }
                }
            }
        }
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            committed.notify(queue: .global()) { done.resume() }
        }
        try home.catalog.flushHead()
        let results = board.state.withLock { $0.results }
        entries += results.compactMap { $0 }
        failures += results.filter { $0?.item == nil }.count
        Progress.clearLine()
        if global.json {
            Output.json(entries)
        } else if !global.quiet {
            let ok = entries.filter { $0.item != nil }.count
            Output.line("\(ok) of \(entries.count) ingested" + (failures > 0 ? ", \(failures) refused or failed" : ""))
        }
        if failures > 0 { throw ExitCode(1) }
    }

    static func status(_ o: IngestOutcome) -> String {
        switch o { case .created: return "stored"; case .duplicate: return "duplicate"; case .alreadyKnown: return "already-ingested" }
    }

    static func status(_ o: Ingestor.Outcome) -> String {
        switch o {
        case .ingested(let i): return status(i)
        case .rejected: return "rejected"
        case .retryLater: return "changed-while-read"
        case .failed: return "failed"
        }
    }
}
