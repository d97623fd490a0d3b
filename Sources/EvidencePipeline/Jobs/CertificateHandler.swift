import EvidenceCatalog
import EvidenceConfig
import EvidenceCore
import EvidenceNotary
import EvidenceStore
import Foundation
import Logging

/// Once every notary confirmed: fetch each QED report's PDF certificate into the store
/// (checked to be a PDF), render our own evidence certificate, record both, and move the item
/// on (done, or on to the archive). Idempotent: certificates already recorded are not fetched again.
public struct CertificateHandler: JobHandler {
    public let kind = JobKind.certificate
    let home: EvidenceHome
    let rules: LiveRules
    let notaries: Notaries
    let metrics: PipelineMetrics
    let timezone: LocalTime
    /// The `evidence` binary whose confined probe child decodes poster frames; nil: none made.
    let posterExecutable: String?
    let logger: Logger

    public init(home: EvidenceHome, rules: LiveRules, notaries: Notaries, metrics: PipelineMetrics = .disabled,
                timezone: LocalTime = .utc, posterExecutable: String? = nil, logger: Logger = Logger(label: "evidence")) {
        self.home = home; self.rules = rules; self.notaries = notaries; self.metrics = metrics; self.timezone = timezone
        self.posterExecutable = posterExecutable; self.logger = logger
    }

    public func run(_ job: QueuedJob) async throws(JobError) -> JobOutcome {
        guard let itemID = job.itemID else { throw JobError("certificate job \(job.id) has no item", retryable: false) }
        guard let ruleName = job.payload.rule, let rule = rules[ruleName] else {
            throw JobError("rule \"\(job.payload.rule ?? "")\" is no longer configured", retryable: true)
        }
        let home = self.home
        let (found, proofs, have) = try await blockingJobWork {
            (try home.catalog.item(id: itemID), try home.catalog.proofs(itemID: itemID), try home.catalog.certificates(itemID: itemID))
        }
        guard let item = found else { throw JobError("item \(itemID) is gone", retryable: false) }

        // The notaries' certificates fetched and stored; recorded with ours, below.
        var made: [Certificate] = []
        do throws(JobError) {
            for proof in proofs where proof.kind == .qed && proof.state == .confirmed && !have.contains(where: { $0.origin == proof.notary }) {
                guard case .qed(let qed)? = notaries.entries[proof.notary]?.client, let slug = proof.remoteID else {
                    throw JobError("notary \"\(proof.notary)\" is not configured: cannot fetch its certificate", retryable: true)
                }
                do { made.append(try await NotaryCertificate.fetchAndStore(proof, slug: slug, with: qed, home: home, metrics: metrics).0) } catch let e as NotaryError {
                    throw JobError(e, notary: proof.notary)
                } catch {
                    throw JobError("\(error)", retryable: true)
                }
            }

            if !have.contains(where: { $0.origin == "evidence" }) {
                let timezone = self.timezone, executable = self.posterExecutable, logger = self.logger
                made.append(try await blockingJobWork {
                    let labels = try ItemLabels.resolve(home: home, item: item, rule: ruleName, ruleLabels: rule.labels)
                    var poster = PosterFrames.recorded(home: home, events: try home.catalog.events(itemID: item.id))
                    if poster == nil, let executable, PosterFrames.wanted(item) {
                        let name = try home.catalog.sources(itemID: item.id).first?.name ?? item.sha256.hex
                        switch PosterFrames.make(home: home, item: item, name: name, executable: executable) {
                        case .success(let made): poster = made
                        case .failure(let why):
                            // The certificate is made without one: a picture is a courtesy, the digest is the evidence.
                            logger.warning("no poster frame", metadata: ["item": "\(item.id)", "reason": "\(why)"])
                        }
                    }
                    return try EvidenceCertificateMaker.make(home: home, item: item, labels: labels, timezone: timezone, poster: poster)
                })
            }
        } catch {
            // What was fetched is recorded before the attempt ends: a retry does not ask the
            // notary again, and a job that gives up leaves no notary's certificate unrecorded.
            let fetched = made
            if !fetched.isEmpty { _ = try? await blockingJobWork { for c in fetched { try home.catalog.saveCertificate(c) } } }
            throw error
        }
        // The certificates are recorded with the job's completion, in its transaction (their
        // PDFs are stored already; a crash before the completion fetches or makes them again on
        // the next run: a notary's certificate is a read, never a second notarization).
        guard var done = ItemLifecycle(rule: rule).transition(from: item.state, on: .certified(count: proofs.filter { $0.kind == .qed }.count + 1)) else {
            // No transition to carry it (the item is past this stage): saved on its own.
            let certificates = made
            try await blockingJobWork { for certificate in certificates { try home.catalog.saveCertificate(certificate) } }
            return .done(nil)
        }
        done.certificates = made
        return .done(done)
    }
}
