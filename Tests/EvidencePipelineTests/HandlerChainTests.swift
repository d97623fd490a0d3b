import Synchronization
@testable import EvidencePipeline
import EvidenceArchive
import EvidenceCatalog
import EvidenceConfig
import EvidenceCore
import EvidenceHTTP
import EvidenceNotary
import EvidenceSandbox
import EvidenceTesting
import Foundation
import Logging
import Testing

/// Every handler of the pipeline run in-process, one job at a time as the job runner runs them,
/// against the in-process sandbox (QED, a real `openssl ts` TSA) and a local archive. Time is
/// the claim's `now`: a job that waits (a pending QED report, a back-off) is reached by moving
/// `now` on, never by sleeping.
@Suite("Handlers in-process: verify → notarize → certificate → archive → share, time moved instead of slept", .serialized)
struct HandlerChainTests {
    final class Chain {
        let dir = TempDirectory("handlers")
        let home: EvidenceHome
        let rule: WatchRule
        var handlers: [JobKind: any JobHandler] = [:]
        /// The clock the queue is claimed with, and the batching TSA's windows read.
        let clock = TestClock()
        var now: Date {
            get { clock.value.withLock { $0 } }
            set { clock.value.withLock { $0 = newValue } }
        }
        var ran: [JobKind] = []
        var waits = 0

        init(sandbox url: URL) async throws {
            home = try EvidenceHome(path: dir.path + "/home")
            try FileManager.default.createDirectory(atPath: dir.path + "/drop", withIntermediateDirectories: true)
            let logger = Logger(label: "handlers")
            let http = HTTPClient(configuration: HTTPClientConfiguration(), logger: logger)
            let ca = dir.file("tsa-ca.pem")
            let fetched = try await http.send(HTTPRequest(url: url.absoluteString + "/tsa/ca.pem", downloadTo: ca))
            #expect(fetched.status == 200)
            let qed = NotaryConfig(name: "qed", kind: .qed, baseURL: url.absoluteString + "/v1/", pollFirst: 10, pollMax: 60)
            let tsa = NotaryConfig(name: "tsa", kind: .rfc3161, urls: [url.absoluteString + "/tsa"], caFile: ca)
            let notaries = Notaries(entries: [
                "qed": .init(config: qed, client: .qed(QEDClient(name: "qed", baseURL: qed.baseURL!, apiKey: "sandbox-key", http: http))),
                "tsa": .init(config: tsa, client: .rfc3161(Notaries.tsaClient(tsa, logger: logger))),
            ])
            try FileManager.default.createDirectory(atPath: dir.path + "/vault", withIntermediateDirectories: true)
            let archives = Archives(providers: ["vault": LocalProvider(account: "vault", root: dir.path + "/vault")])
            rule = WatchRule(name: "cam", file: dir.path + "/cam.toml", path: dir.path + "/drop", notary: ["qed", "tsa"],
                             archive: "vault", share: ShareSettings(access: .open))
            let rules = LiveRules(["cam": rule])
            for handler: any JobHandler in [
                VerifyHandler(home: home, rules: rules), NotarizeHandler(home: home, rules: rules, notaries: notaries, now: { [clock] in clock.now }),
                StampHandler(home: home, rules: rules, notaries: notaries, now: { [clock] in clock.now }),
                CertificateHandler(home: home, rules: rules, notaries: notaries),
                ArchiveHandler(home: home, rules: rules, archives: archives), ShareHandler(home: home, rules: rules, archives: archives),
            ] { handlers[handler.kind] = handler }
        }

        func ingest(_ name: String, _ text: String) throws -> Item {
            let path = dir.write("drop/" + name, text)
            guard case .ingested(let outcome) = Ingestor(home: home, actor: "test").ingest(path: path, rule: rule.name,
                                                                                         lifecycle: ItemLifecycle(rule: rule)) else {
                throw ChainError.notIngested(path)
            }
            return outcome.item
        }

        /// Claims and runs due jobs as `JobRunner.execute` does; when none is due, moves the
        /// clock an hour on. Stops when nothing is queued or after `steps` jobs.
        func drain(steps: Int = 40) async throws {
            let catalog = home.catalog
            for _ in 0..<steps {
                guard let job = try catalog.claimJob(kinds: Array(handlers.keys), owner: "test", lease: 60, now: now) else {
                    guard try catalog.jobCounts()["queued", default: 0] > 0 else { return }
                    now = now.addingTimeInterval(3600)
                    waits += 1
                    continue
                }
                ran.append(job.kind)
                let outcome: JobOutcome
                do throws(JobError) {
                    outcome = try await handlers[job.kind]!.run(job)
                } catch {
                    _ = try catalog.failJob(job.id, owner: "test", error: error.message,
                                            retryAt: error.retryable ? now.addingTimeInterval(1) : nil, onGiveUp: error.onGiveUp)
                    continue
                }
                switch outcome {
                case .done(let transition): try catalog.completeJob(job.id, owner: "test", transition: transition)
                case .notYet(let until, _, let unless):
                    try catalog.releaseJob(job.id, owner: "test", runAt: max(until, now))
                    if let unless, let item = job.itemID, unless() { _ = try catalog.wakeQueuedJobs(itemID: item, kinds: [job.kind], now: now) }
                }
            }
        }

        enum ChainError: Error { case notIngested(String) }
    }

    @Test("an item goes through every handler to done: one QED report, proofs, certificates, archive copies and a link")
    func everyHandlerToDone() async throws {
        let scratch = TempDirectory("handler-sandbox")
        // QED confirms on the first poll after a submission; the TSA answers at once.
        let server = try SandboxServer(options: SandboxOptions(stateDirectory: scratch.path, pendingSeconds: 0))
        try await server.withRunning { url in
            let chain = try await Chain(sandbox: url)
            let item = try chain.ingest("clip.txt", "evidence from a body-cam\n")
            try await chain.drain()

            let catalog = chain.home.catalog
            #expect(try catalog.item(id: item.id)?.state == .done, "\(chain.ran)")
            #expect(try catalog.jobCounts() == ["done": 7], "verify, 2 notarize, the TSA's batch, certificate, archive, share; \(chain.ran)")
            let states = try catalog.events(itemID: item.id).map(\.kind)
            for event in ["ingested", "verified", "submitted", "confirmed", "certified", "archived", "shared"] {
                #expect(states.contains(event), "no \(event) in \(states)")
            }
            let proofs = try catalog.proofs(itemID: item.id)
            #expect(Set(proofs.map(\.kind)) == [.qed, .rfc4998] && proofs.allSatisfy { $0.state == .confirmed && $0.receipt != nil })
            #expect(Set(try catalog.certificates(itemID: item.id).map(\.origin)) == ["evidence", "qed"])
            #expect(Set(try catalog.archivedFiles(itemID: item.id).map(\.role)) == [.original, .receipt, .certificate, .manifest])
            #expect(try catalog.sharedLinks(itemID: item.id).count == 1)
            #expect(server.counters.snapshot.submissionsByHash[item.sha256.hex] == 1)
        }
    }

    @Test("a pending QED report puts its job back until the next poll without spending an attempt")
    func pendingWaitsByTheClock() async throws {
        let scratch = TempDirectory("handler-sandbox")
        let server = try SandboxServer(options: SandboxOptions(stateDirectory: scratch.path, pendingSeconds: 0.5))
        try await server.withRunning { url in
            let chain = try await Chain(sandbox: url)
            let item = try chain.ingest("pending.txt", "waits for the chain\n")
            try await chain.drain(steps: 4)
            #expect(try chain.home.catalog.item(id: item.id)?.state == .submitted)
            let notarize = try chain.home.catalog.jobs(itemID: item.id).first { $0.payload == .notarize(rule: "cam", notary: "qed") }
            #expect(notarize?.state == .queued && notarize?.attempts == 0, "waiting is not an attempt: \(String(describing: notarize))")
            #expect(notarize.map { $0.nextRunAt > Date() } == true, "released until its next poll")
        }
    }
}

final class TestClock: Sendable {
    let value = Mutex(Date())
    var now: Date { value.withLock { $0 } }
}
