import EvidenceArchive
import EvidenceCatalog
import EvidenceConfig
import EvidenceCore
import EvidenceStore
import Foundation

/// Creates (or reuses) the share link of the archived original per the rule's `[share]`, and
/// records it; settings the provider refused are recorded with the link.
public struct ShareHandler: JobHandler {
    public let kind = JobKind.share
    let home: EvidenceHome
    let rules: LiveRules
    let archives: Archives

    public init(home: EvidenceHome, rules: LiveRules, archives: Archives) {
        self.home = home; self.rules = rules; self.archives = archives
    }

    public func pauseScope(of job: QueuedJob) -> String? {
        job.payload.rule.flatMap { rules[$0]?.archive }.map { CredentialPause.scope(.account, $0) }
    }

    public func run(_ job: QueuedJob) async throws(JobError) -> JobOutcome {
        guard let itemID = job.itemID, let rule = job.payload.rule.flatMap({ rules[$0] }), let accountName = rule.archive,
              let settings = rule.share else {
            throw JobError("share job \(job.id): its rule has no archive or share settings", retryable: true)
        }
        guard let provider = archives.providers[accountName] else {
            throw JobError("archive account \"\(accountName)\" is not configured", retryable: true)
        }
        let home = self.home
        let (archived, item, links) = try await blockingJobWork {
            (try home.catalog.archivedFiles(itemID: itemID), try home.catalog.item(id: itemID), try home.catalog.sharedLinks(itemID: itemID))
        }
        let state = item?.state
        // A superseded item (an earlier version of a path that changed since) gets no link of its own.
        if let by = item?.supersededBy, !links.contains(where: { $0.account == accountName }) {
            return .done(ItemLifecycle(rule: rule).transition(from: state ?? .archived, on: .skippedSuperseded(stage: .share, by: by)))
        }
        guard let original = archived.first(where: { $0.role == .original && $0.account == accountName }) else {
            throw JobError("item #\(itemID) has no archived original at \(accountName) yet", retryable: true)
        }
        var password: String?
        if let source = settings.password {
            do { password = try ConfigLoader.readSecret(source, field: "share.password", configFile: rule.file) } catch {
                throw JobError(error.description, retryable: false)
            }
        }
        let access = ShareRequest.Access(rawValue: settings.access.rawValue) ?? .open
        let request = ShareRequest(access: access, expires: settings.expiresIn.map { Date().addingTimeInterval($0) }, password: password)
        let link: ShareLink
        do { link = try await provider.share(original.remotePath, request) } catch {
            throw JobError(error, account: accountName)
        }
        let record = SharedLink(itemID: itemID, account: accountName, remotePath: original.remotePath, url: link.url,
                                expires: link.expires, passwordProtected: link.passwordProtected, fallback: link.fallback)
        try await blockingJobWork { try home.catalog.saveSharedLink(record) }
        return .done(ItemLifecycle(rule: rule).transition(from: state ?? .archived, on: .shared(details: ["link_id": SharedLink.id(of: link.url)])))
    }
}
