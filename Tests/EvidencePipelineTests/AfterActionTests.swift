import EvidenceArchive
import EvidenceCatalog
import EvidenceConfig
import EvidenceCore
import EvidencePipeline
import EvidenceTesting
import Foundation
import Testing

/// Deletion and moving of an original only after ITS OWN rule's evidence exists: every notary of
/// that rule confirmed, and a verified copy in that rule's archive account. The pipeline's real
/// handlers run in-process on a temporary home, one job at a time, as the job runner would.
@Suite("After-actions wait for their own rule's notaries and archive", .serialized)
struct AfterActionTests {
    final class Setup {
        let scratch = TempDirectory("after-action")
        var root: String { scratch.path }
        let home: EvidenceHome
        var rules: [String: WatchRule] = [:]
        let archives: Archives
        /// Runs right before the after-action acts (see `AfterActionHandler.beforeAct`).
        var beforeAct: @Sendable () -> Void = {}

        init() throws {
            let root = scratch.path
            for sub in ["a", "b", "vault"] {
                try FileManager.default.createDirectory(atPath: root + "/" + sub, withIntermediateDirectories: true)
            }
            home = try EvidenceHome(path: root + "/home")
            archives = Archives(providers: ["vault": LocalProvider(account: "vault", root: root + "/vault")])
        }

        func rule(_ name: String, notary: [String] = [], archive: String? = nil, after: AfterAction = .keep) {
            rules[name] = WatchRule(name: name, file: root + "/\(name).toml", path: root + "/" + name.prefix(1), settle: 0,
                                    notary: notary, archive: archive, remotePath: "evidence/{rule}/{sha8}-{name}", after: after)
        }

        /// Drops `content` under the rule's folder and ingests it as `evidence run` would.
        @discardableResult
        func drop(_ name: String, _ content: String, rule: String) throws -> (path: String, item: Item) {
            let path = rules[rule]!.path + "/" + name
            try Data(content.utf8).write(to: URL(fileURLWithPath: path))
            let outcome = Ingestor(home: home, actor: "test").ingest(path: path, rule: rule, lifecycle: ItemLifecycle(rule: rules[rule]!))
            guard case .ingested(let r) = outcome else { throw SetupError.ingest("\(outcome)") }
            return (path, r.item)
        }

        /// A notary's confirmation, as NotarizeHandler records it.
        func confirm(_ item: Item, notary: String, rule: String) throws {
            let lifecycle = ItemLifecycle(rule: rules[rule]!)
            let receipt = try home.store.put(Data("{\"slug\":\"slug-\(notary)\",\"status\":\"confirmed\"}".utf8)).digest
            let proof = Proof(itemID: item.id, notary: notary, kind: .qed, state: .confirmed, remoteID: "slug-\(notary)",
                              receipt: receipt, txHash: "0x\(notary)", submittedAt: Date())
            // Only the state change, not the certificate job: this test runs no certificate handler.
            try home.catalog.saveProof(proof) { state, confirmed in
                lifecycle.transition(from: state, on: .proofSaved(notary: notary, state: .confirmed, error: nil, confirmed: confirmed))
                    .map { JobTransition(state: $0.state, event: $0.event, details: $0.details) }
            }
        }

        func markDone(_ item: Item) throws {
            // As the share job's completion does: the lifecycle's transition to done, which wakes
            // the parked after-actions.
            guard let rule = try home.catalog.sources(itemID: item.id).first?.rule.flatMap({ rules[$0] }) else {
                throw SetupError.ingest("item \(item.id) has no rule")
            }
            let transition = ItemLifecycle(rule: rule).transition(from: item.state, on: .shared(details: [:]))
            let job = try home.catalog.enqueue(JobSpec(.share(rule: rule.name)), itemID: item.id, dedupeKey: "test-share:\(UUID())")
            guard let claimed = try home.catalog.claimJob(id: job.id, owner: "test", lease: 60, now: Date()) else {
                throw SetupError.ingest("share job \(job.id) not claimed")
            }
            try home.catalog.completeJob(claimed.id, owner: "test", transition: transition)
        }

        /// Claims one due job of `kind` and runs it with the real handler; `complete: false`
        /// leaves it leased, as a crash right after the handler's work would.
        @discardableResult
        func run(_ kind: JobKind, complete: Bool = true) async throws -> JobOutcome? {
            guard let job = try home.catalog.claimJob(kinds: [kind], owner: "test", lease: 60, now: Date()) else { return nil }
            let handler: any JobHandler = switch kind {
            case .afterAction: AfterActionHandler(home: home, rules: LiveRules(rules), beforeAct: beforeAct)
            case .archive: ArchiveHandler(home: home, rules: LiveRules(rules), archives: archives)
            default: fatalError("no handler for \(kind) in this test")
            }
            let outcome = try await handler.run(job)
            guard complete else { return outcome }
            switch outcome {
            case .done(let t): try home.catalog.completeJob(job.id, owner: "test", transition: t)
            case .notYet: try home.catalog.releaseJob(job.id, owner: "test", runAt: Date())
            }
            return outcome
        }

        /// Returns the crashed process's leases to the queue, as `evidence run` does at start.
        func restart() throws {
            _ = try home.catalog.releaseLeases(owners: ["test"])
        }

        func open(_ item: Item, _ kind: JobKind) throws -> [QueuedJob] {
            try home.catalog.jobs(itemID: item.id).filter { $0.kind == kind && ($0.state == .queued || $0.state == .running) }
        }

        func events(_ item: Item, _ kind: String) throws -> [CustodyEvent] {
            try home.catalog.events(itemID: item.id).filter { $0.kind == kind }
        }

        func archivedOriginal(_ item: Item) throws -> Bool {
            try home.catalog.archivedFiles(itemID: item.id).contains { $0.account == "vault" && $0.role == .original && $0.sha256 == item.sha256 }
        }

        enum SetupError: Error { case ingest(String) }
    }

    func exists(_ path: String) -> Bool { FileManager.default.fileExists(atPath: path) }

    @Test("content taken under rule A (notary only, keep) and dropped again under rule B (archive, delete) survives until B's archive holds it, then is deleted")
    func ruleAThenRuleB() async throws {
        let s = try Setup()
        s.rule("a", notary: ["n1"])
        s.rule("b", archive: "vault", after: .delete)
        let (_, item) = try s.drop("clip.bin", "the same bytes", rule: "a")
        try s.confirm(item, notary: "n1", rule: "a")
        try s.markDone(item)
        let (path, again) = try s.drop("clip.bin", "the same bytes", rule: "b")
        #expect(again.id == item.id)

        let first = try await s.run(JobKind.afterAction)
        guard case .notYet(_, let reason, _)? = first else { Issue.record("after-action did not wait: \(String(describing: first))"); return }
        #expect(reason.contains("archive to vault"), "\(reason)")
        #expect(exists(path), "the file under rule B was deleted before B's archive held it")
        let archive = try #require(try s.open(item, JobKind.archive).first, "B's archive job was not queued")
        #expect(archive.payload.rule == "b")

        try await s.run(JobKind.archive)
        #expect(try s.archivedOriginal(item))
        #expect(exists(path))
        let second = try await s.run(JobKind.afterAction)
        guard case .done? = second else { Issue.record("after-action did not act: \(String(describing: second))"); return }
        #expect(!exists(path))
        #expect(try s.events(item, "source-deleted").count == 1)
        #expect(try s.home.catalog.item(id: item.id)?.state == .done)
    }

    @Test("a duplicate under a rule with another notary waits for that notary's confirmation, queued with rule B")
    func ruleBNotaryQueued() async throws {
        let s = try Setup()
        s.rule("a", notary: ["n1"])
        s.rule("b", notary: ["n1", "n2"], after: .delete)
        let (_, item) = try s.drop("clip.bin", "bytes under two rules", rule: "a")
        try s.confirm(item, notary: "n1", rule: "a")
        try s.markDone(item)
        let (path, _) = try s.drop("copy.bin", "bytes under two rules", rule: "b")

        guard case .notYet? = try await s.run(JobKind.afterAction) else { Issue.record("after-action did not wait"); return }
        #expect(exists(path))
        let notarize = try s.open(item, JobKind.notarize)
        #expect(notarize.map(\.payload) == [.notarize(rule: "b", notary: "n2")], "\(notarize)")

        try s.confirm(item, notary: "n2", rule: "b")
        guard case .done? = try await s.run(JobKind.afterAction) else { Issue.record("after-action did not act"); return }
        #expect(!exists(path))
    }

    @Test("a rule edited to add an archive after its item was done: the pending deletion waits for the new archive")
    func changedRule() async throws {
        let s = try Setup()
        s.rule("a", notary: ["n1"], after: .delete)
        let (path, item) = try s.drop("clip.bin", "edited rule", rule: "a")
        try s.confirm(item, notary: "n1", rule: "a")
        try s.markDone(item)
        s.rule("a", notary: ["n1"], archive: "vault", after: .delete)   // the operator's edit, picked up at restart

        guard case .notYet? = try await s.run(JobKind.afterAction) else { Issue.record("after-action did not wait"); return }
        #expect(exists(path), "deleted although the edited rule's archive has no copy")
        #expect(try s.open(item, JobKind.archive).count == 1)
        try await s.run(JobKind.archive)
        guard case .done? = try await s.run(JobKind.afterAction) else { Issue.record("after-action did not act"); return }
        #expect(try !exists(path) && s.archivedOriginal(item))
    }

    @Test("a crash between the archive and the deletion: after restart the file is deleted once, and never before the copy exists")
    func crashBetweenArchiveAndDeletion() async throws {
        let s = try Setup()
        s.rule("a", notary: ["n1"])
        s.rule("b", archive: "vault", after: .delete)
        let (_, item) = try s.drop("clip.bin", "crash", rule: "a")
        try s.confirm(item, notary: "n1", rule: "a")
        try s.markDone(item)
        let (path, _) = try s.drop("clip.bin", "crash", rule: "b")
        guard case .notYet? = try await s.run(JobKind.afterAction) else { Issue.record("after-action did not wait"); return }
        #expect(exists(path))

        // The archive job uploads and records its copy, then the process dies before completing it.
        try await s.run(JobKind.archive, complete: false)
        #expect(try s.archivedOriginal(item))
        try s.restart()
        // After restart the after-action runs first, deletes, and dies before recording it.
        guard case .done? = try await s.run(JobKind.afterAction, complete: false) else { Issue.record("after-action did not act"); return }
        #expect(!exists(path))
        try s.restart()
        // Both jobs run again: the archive adopts its recorded copy, the deletion finds nothing to do.
        try await s.run(JobKind.archive)
        guard case .done(let t)? = try await s.run(JobKind.afterAction) else { Issue.record("after-action did not finish"); return }
        #expect(t?.event == .sourceDeleted, "the deletion is recorded, not reported as a file gone missing")
        #expect(try s.events(item, "source-deleting").count == 1)
        #expect(try s.events(item, "source-deleted").count == 1)
        #expect(try s.open(item, JobKind.afterAction).isEmpty)
        let copy = try #require(try s.home.catalog.archivedFiles(itemID: item.id).first { $0.role == .original })
        #expect(FileManager.default.contents(atPath: s.root + "/vault/" + copy.remotePath) == Data("crash".utf8))
    }

    @Test("a duplicate under a rule that keeps its files still gets that rule's archive; the file stays")
    func keepDuplicateGetsItsArchive() async throws {
        let s = try Setup()
        s.rule("a", notary: ["n1"])
        s.rule("b", archive: "vault")
        let (_, item) = try s.drop("clip.bin", "kept twice", rule: "a")
        try s.confirm(item, notary: "n1", rule: "a")
        try s.markDone(item)
        let (path, _) = try s.drop("clip.bin", "kept twice", rule: "b")
        guard case .notYet? = try await s.run(JobKind.afterAction) else { Issue.record("no keep job waited for B's stages"); return }
        try await s.run(JobKind.archive)
        guard case .done(let t)? = try await s.run(JobKind.afterAction) else { Issue.record("keep job did not finish"); return }
        #expect(t?.event == .ruleStagesComplete)
        #expect(try exists(path) && s.archivedOriginal(item))
    }

    @Test("a sub-folder swapped for a symbolic link between the checks and the deletion: nothing outside the watched folder is deleted")
    func folderSwappedForALinkAtTheLastMoment() async throws {
        let s = try Setup()
        s.rule("a", after: .delete)
        try FileManager.default.createDirectory(atPath: s.root + "/a/sub", withIntermediateDirectories: true)
        let (path, item) = try s.drop("sub/clip.bin", "officer A's recording", rule: "a")
        try s.markDone(item)
        // Another officer's file, with the same name, outside the watched folder.
        let outside = s.root + "/outside"
        try FileManager.default.createDirectory(atPath: outside, withIntermediateDirectories: true)
        try Data("officer B's recording".utf8).write(to: URL(fileURLWithPath: outside + "/clip.bin"))
        let root = s.root
        s.beforeAct = {
            // The attacker's move, exactly between the checks and the unlink.
            rename(root + "/a/sub", root + "/a/sub.real")
            symlink(outside, root + "/a/sub")
        }
        let outcome = try await s.run(JobKind.afterAction)
        guard case .done? = outcome else { Issue.record("after-action did not finish: \(String(describing: outcome))"); return }
        #expect(exists(outside + "/clip.bin"), "a file outside the watched folder was deleted through the planted link")
        #expect(!exists(root + "/a/sub.real/clip.bin"), "the checked file itself, in the folder that was checked, is the one deleted")
        #expect(path == root + "/a/sub/clip.bin")
    }


    @Test("a sub-folder swapped for a link before ingest: the file outside the watched folder is not read, the path is quarantined")
    func ingestThroughASwappedFolderIsRefused() throws {
        let s = try Setup()
        s.rule("a")
        let outside = s.root + "/outside"
        try FileManager.default.createDirectory(atPath: outside, withIntermediateDirectories: true)
        try Data("another officer's recording".utf8).write(to: URL(fileURLWithPath: outside + "/clip.bin"))
        #expect(symlink(outside, s.root + "/a/sub") == 0)
        let outcome = Ingestor(home: s.home, actor: "test").ingest(path: s.root + "/a/sub/clip.bin", rule: "a",
                                                                   lifecycle: ItemLifecycle(rule: s.rules["a"]!))
        guard case .rejected(let reason, _) = outcome else { Issue.record("read through the link: \(outcome)"); return }
        #expect(reason.contains("symbolic link"), "\(reason)")
        #expect(try s.home.catalog.summary().items == 0)
    }

}
