import ArgumentParser
import EvidenceArchive
import EvidenceConfig
import EvidenceCore
import EvidenceNotary
import EvidencePipeline
import EvidenceS3
import EvidenceStore
import Foundation
import Logging

struct DoctorCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "doctor",
        abstract: "Check the whole set-up and say what to fix: config, rules, store, catalog, disk, inotify, clock, accounts, notaries.",
        discussion: Help.reflow("""
        One line per check, ✓ (fine), ! (works, but look at it) or ✗ (broken), and for ! and ✗
        the fix. Checks, in order:

          config      evidence.toml loads (every field valid, secrets readable)
          rules       the watch rules load (a missing folder: ! folders)
          anchors     the config, each TSA's ca_file, the rules and the folders
                      above them are not writable by this user (✗, or ! with
                      anchor_permissions = "warn"; ! when run as root)
          home        the home folder exists; its tmp folder is writable; no part
                      of it (home, objects, catalog, custody.head, tokens) is
                      writable by every user
          catalog     the database's own integrity check passes (SQLite
                      quick_check, PostgreSQL page checksums); items and jobs
          custody     the hash-chained custody log verifies
          store       object names, fan-out paths and read-only modes (no
                      re-hash: see fsck)
          queue       failed jobs and items waiting longer than a day
          credentials an account or notary paused: its credentials were refused
          disk        free space where the home is (✗ below --min-free, ! < 10 %)
          inotify     fs.inotify.max_user_watches against the folders watched
          clock       the system clock against each RFC 3161 TSA's signed time
                      (✗ beyond 60 s)
          notary N    each notary answers with our credentials (QED: a report
                      lookup; RFC 3161: a real time-stamp, verified)
          account N   each archive account signs in, writes, hash-checks and
                      deletes a probe
          anchor copies  with [custody] anchor_archive: the newest anchor is in
                      that account's evidence-anchors/ with the same size (! when
                      not copied yet)

        --offline skips the network checks (clock, notaries, accounts).

          evidence doctor
          evidence doctor --json | jq '.[] | select(.status != "ok")'

        Exit codes: 0 nothing broken (✓ or !) · 1 at least one ✗.
        """)
    )

    @OptionGroup var global: GlobalOptions

    @Option(help: ArgumentHelp("Rules folder (default: the config's `rules`, or ./watch-rules).", valueName: "dir"))
    var rules: String?

    @Flag(help: "Skip the checks that talk to notaries and providers.")
    var offline = false

    @Option(help: ArgumentHelp("Free space below which `disk` fails (bytes, or with K/M/G/T).", valueName: "size"))
    var minFree: ByteSize = ByteSize(argument: "1G")!

    struct Check: Encodable {
        enum Status: String, Encodable { case ok, warn, fail }
        var check: String
        var status: Status
        var detail: String
        var fix: String?
        var milliseconds: Int?
    }

    func run() async throws {
        StderrLogHandler.bootstrap(level: global.verbose ? .debug : .critical, format: .text)
        var checks: [Check] = []
        func add(_ c: Check) {
            checks.append(c)
            guard !global.json else { return }
            let mark = c.status == .ok ? "✓" : c.status == .warn ? "!" : "✗"
            Output.line("\(mark) \(c.check): \(c.detail)" + (c.milliseconds.map { " (\($0) ms)" } ?? ""))
            if let fix = c.fix, c.status != .ok { Output.line("    fix: \(fix)") }
        }
        defer { if global.json { Output.json(checks) } }

        // config: everything else depends on it.
        let config: EvidenceConfig
        do {
            config = try global.loadConfig()
            let where_ = config.file ?? "no evidence.toml: embedded defaults (ingest only)"
            add(Check(check: "config", status: config.file == nil ? .warn : .ok,
                      detail: "\(where_): \(config.notaries.count) notar\(config.notaries.count == 1 ? "y" : "ies"), \(config.archives.count) archive account(s)",
                      fix: config.file == nil ? "evidence init writes a commented evidence.toml" : nil))
        } catch {
            add(Check(check: "config", status: .fail, detail: "\(error)", fix: "edit the file at the field named; `evidence rules check` lists every problem"))
            throw ExitCode(1)
        }
        let home = try global.homePath(config)

        // rules
        var rules: [WatchRule] = []
        do {
            var missing: [String] = []
            rules = try RuleSet.load(explicit: self.rules, config: config, home: home) { missing.append($0) }
            add(Check(check: "rules", status: .ok,
                      detail: "\(rules.count) rule(s): " + rules.map { "\($0.name) → \($0.path)" }.joined(separator: ", ")))
            for m in missing {
                add(Check(check: "folders", status: .warn, detail: m,
                          fix: "mount or create the folder; `evidence run` watches it once it appears"))
            }
        } catch {
            add(Check(check: "rules", status: .fail, detail: "\(error)".replacingOccurrences(of: "\n", with: "; "),
                      fix: "create the folders or fix the rule files named; `evidence rules check` explains each field"))
        }

        // anchors: the files the service is checked against must not be its own to rewrite.
        add(AnchorGuard.doctorCheck(config: config, rulesDirectory: RuleSet.directory(explicit: self.rules, config: config)))

        // home, catalog, custody, store, queue
        let location: EvidenceHome.CatalogLocation
        do { location = try global.catalogLocation(config) } catch {
            add(Check(check: "catalog", status: .fail, detail: "\(error)", fix: "set [catalog] password_env or password_file to a readable secret"))
            location = .sqlite
        }
        var storeLocation = EvidenceHome.StoreLocation.local
        do { storeLocation = try global.storeLocation(config) } catch {
            add(Check(check: "store", status: .fail, detail: "\(error)", fix: "set [store] access_key_* and secret_key_* to readable secrets"))
        }
        checkHome(home, catalog: location, store: storeLocation, anchorTrust: LogCommand.anchorTrust(config),
                  anchorEvery: config.custody?.anchorEvery, add: add)

        // disk
        add(diskCheck(home))

        // inotify
        add(inotifyCheck(rules))

        guard !offline else {
            add(Check(check: "network", status: .warn, detail: "clock, notary and account checks skipped (--offline)",
                      fix: "run evidence doctor without --offline"))
            if checks.contains(where: { $0.status == .fail }) { throw ExitCode(1) }
            return
        }

        // notaries (and the clock against each TSA's signed time)
        var tsaSkews: [(String, Double)] = []
        do {
            let notaries = try Notaries.build(config: config, logger: Logger(label: "evidence"))
            for (name, entry) in notaries.entries.sorted(by: { $0.key < $1.key }) {
                let started = Date()
                var c = Check(check: "notary \(name)", status: .ok, detail: "")
                do throws(NotaryError) {
                    switch entry.client {
                    case .qed(let client):
                        let probe = SHA256Hasher.hash(Data("evidence doctor probe".utf8))
                        let found = try await client.reports(hash: probe)
                        c.detail = "QED at \(entry.config.baseURL ?? "api.qed.digital") accepted the API key (report lookup answered, \(found.count) for the probe hash)"
                    case .rfc3161(let client):
                        let asked = Date()
                        let (token, url) = try await client.timestamp(SHA256Hasher.hash(Data("evidence doctor probe \(asked)".utf8)))
                        let answered = Date()
                        let local = asked.addingTimeInterval(answered.timeIntervalSince(asked) / 2)
                        tsaSkews.append((name, local.timeIntervalSince(token.genTime)))
                        c.detail = "time-stamp from \(url), serial \(token.serial), signature and chain verified against \(client.trust.summary)"
                    case .opentimestamps(let client):
                        let probe = SHA256Hasher.hash(Data("evidence doctor probe \(Date())".utf8))
                        let (_, answered) = try await client.submit(Hex.decode(probe.hex) ?? [])
                        let tip = try await client.tipHeight()
                        let header = try await client.header(height: tip)
                        c.detail = "\(answered.count) of \(client.calendars.count) calendars answered (\(client.minimum) needed); "
                            + "headers_url serves block \(tip) (\(header.hashHex), time \(Timestamp.string(header.time)))"
                    }
                } catch {
                    c.status = .fail
                    c.detail = error.message
                    c.fix = error.message.contains("401") || error.message.contains("403") || error.message.lowercased().contains("key")
                        ? "check api_key_env/api_key_file of [notaries.\(name)]" : "check the URL and the network path to it (proxy, firewall, DNS)"
                }
                c.milliseconds = Int(Date().timeIntervalSince(started) * 1000)
                add(c)
            }
        } catch {
            add(Check(check: "notaries", status: .fail, detail: "\(error)", fix: "fix the field named in evidence.toml"))
        }

        // clock
        if tsaSkews.isEmpty {
            add(Check(check: "clock", status: .warn, detail: "system time \(Timestamp.string(Date())); no RFC 3161 TSA answered to compare it with",
                      fix: "keep the clock synchronized (systemd-timesyncd or chrony); configure an RFC 3161 notary"))
        } else {
            let (name, skew) = tsaSkews.max { abs($0.1) < abs($1.1) }!
            let text = String(format: "%+.1f s", skew)
            add(Check(check: "clock", status: abs(skew) > 60 ? .fail : .ok,
                      detail: "system clock is \(text) from \(name)'s signed time",
                      fix: "synchronize the clock (timedatectl set-ntp true, or chrony): custody times and report dates come from it"))
        }

        // accounts (the providers built here serve the anchor-copies check too)
        var providers: [String: any ArchiveProvider] = [:]
        for name in config.archives.keys.sorted() {
            let started = Date()
            var c = Check(check: "account \(name)", status: .ok, detail: "")
            do {
                let archives = try Archives.build(config: config, used: [name], home: home, logger: Logger(label: "evidence"))
                guard let p = archives.providers[name] else { throw CLIError.config("account \(name) was not built") }
                providers[name] = p
                let who = try await p.whoami()
                try await AccountsCheck.probe(p)
                c.detail = "\(config.archives[name]!.kind.rawValue): \(who); write, hash and delete work"
            } catch let e as ArchiveError {
                c.status = .fail
                c.detail = e.message
                c.fix = e.message.contains("accounts login") || e.message.contains("refresh token")
                    ? "evidence accounts login \(name)" : "check [archives.\(name)] and its secrets; `evidence accounts check \(name) -v` shows each request"
            } catch {
                c.status = .fail
                c.detail = "\(error)"
                c.fix = "fix the field named in evidence.toml"
            }
            c.milliseconds = Int(Date().timeIntervalSince(started) * 1000)
            add(c)
        }

        // anchor copies
        if let account = config.custody?.anchorArchive {
            add(await anchorCopiesCheck(home: home, account: account, provider: providers[account]))
        }

        if checks.contains(where: { $0.status == .fail }) { throw ExitCode(1) }
    }

    /// The S3 store's bucket: reachable, and versioned with Object Lock when `object_lock` asks for it.
    static func bucketCheck(_ s3: S3ObjectStore) -> Check {
        let bucket = "s3://\(s3.settings.endpoint.bucket)"
        let state: S3ObjectStore.BucketState
        do { state = try s3.bucketState() } catch {
            return Check(check: "bucket", status: .fail, detail: error.description,
                         fix: "check [store] endpoint, bucket, region and the keys' permissions (s3:GetBucketVersioning, s3:GetBucketObjectLockConfiguration)")
        }
        let versioning = state.versioning ?? "never enabled"
        if let lock = s3.settings.objectLock {
            guard state.objectLockEnabled, state.versioning == "Enabled" else {
                return Check(check: "bucket", status: .fail,
                             detail: "\(bucket): object_lock = \"\(lock.mode.rawValue)\" is configured but the bucket has "
                                 + (state.objectLockEnabled ? "versioning \(versioning)" : "no Object Lock"),
                             fix: "Object Lock can only be enabled when a bucket is made: create a bucket with Object Lock and point [store] bucket at it")
            }
            return Check(check: "bucket", status: .ok,
                         detail: "\(bucket) reachable; versioning Enabled, Object Lock on (\(lock.mode.rawValue) retention written per object"
                             + (state.defaultRetention.map { "; bucket default \($0)" } ?? "") + ")")
        }
        if state.versioning != "Enabled" {
            return Check(check: "bucket", status: .warn,
                         detail: "\(bucket) reachable; versioning \(versioning): an overwritten key keeps no earlier version (reads refuse it, but the original is gone)",
                         fix: "enable versioning on the bucket, or use a bucket with Object Lock and set [store] object_lock and retain")
        }
        return Check(check: "bucket", status: .ok, detail: "\(bucket) reachable; versioning Enabled" + (state.objectLockEnabled ? ", Object Lock available" : ""))
    }

    /// Whether the newest custody anchor has its copy in the `anchor_archive` account.
    /// `provider`: the account as the accounts check built it; nil when that failed.
    private func anchorCopiesCheck(home: String, account: String, provider: (any ArchiveProvider)?) async -> Check {
        // Only an anchor the log reaches (custody.head is never ahead of the log): a file named
        // beyond it is not the newest anchor.
        let headSeq = (try? String(contentsOfFile: home + "/custody.head", encoding: .utf8))
            .flatMap { Int64($0.split(separator: " ").first ?? "") } ?? Int64.max
        guard let newest = ChainAnchors.list(directory: home + "/anchors").last(where: { $0.seq <= headSeq }) else {
            return Check(check: "anchor copies", status: .warn, detail: "no anchor yet to copy to \(account)",
                         fix: "evidence log anchor (or let evidence run anchor the log)")
        }
        let remote = "\(CustodyConfig.archiveFolder)/\(newest.name)"
        guard let p = provider else {
            return Check(check: "anchor copies", status: .fail, detail: "account \(account) could not be set up",
                         fix: "see the check of account \(account) above")
        }
        do {
            let size = (try? FileManager.default.attributesOfItem(atPath: newest.file))?[.size] as? Int64
            guard let found = try await p.stat(remote) else {
                return Check(check: "anchor copies", status: .warn, detail: "anchor #\(newest.seq) is not at \(account):\(remote) yet",
                             fix: "evidence log anchor copies it now (evidence run copies each new anchor as a job)")
            }
            if let size, found.size >= 0, found.size != size {
                return Check(check: "anchor copies", status: .fail,
                             detail: "\(account):\(remote) is \(found.size) bytes, the anchor \(size)",
                             fix: "keep that file for inspection; evidence log verify --anchors on a fetched copy names what differs")
            }
            return Check(check: "anchor copies", status: .ok, detail: "the newest anchor (#\(newest.seq)) is at \(account):\(remote)")
        } catch {
            return Check(check: "anchor copies", status: .fail, detail: error.message, fix: "see the check of account \(account) above")
        }
    }

    private func checkHome(_ home: String, catalog location: EvidenceHome.CatalogLocation, store: EvidenceHome.StoreLocation,
                           anchorTrust: TSATrust?, anchorEvery: Double?, add: (Check) -> Void) {
        let marker = location == .sqlite ? "/catalog.sqlite" : store == .local ? "/objects" : "/tmp"
        guard FileManager.default.fileExists(atPath: home + marker) else {
            add(Check(check: "home", status: .warn, detail: "\(home) has no catalog yet",
                      fix: "evidence run (or evidence ingest FILE) creates it"))
            return
        }
        let h: EvidenceHome
        do { h = try EvidenceHome(path: home, mustExist: true, catalog: location, store: store) } catch {
            add(Check(check: "home", status: .fail, detail: error.description, fix: "check the folder's owner and permissions"))
            return
        }
        let probe = h.store.tmpDir + "/\(getpid()).doctor.tmp"
        // Whoever can write here can swap the catalog, the custody anchor or store objects.
        let open = [h.path, h.path + "/objects", (h.store as? ObjectStore)?.objectsDir ?? h.store.tmpDir, h.catalogPath, h.path + "/custody.head", h.path + "/tokens"]
            .compactMap { path -> (String, Int)? in
                var st = stat()
                guard stat(path, &st) == 0, st.st_mode & 0o002 != 0 else { return nil }
                return (path, Int(st.st_mode & 0o7777))
            }
        if FileManager.default.createFile(atPath: probe, contents: Data("x".utf8)) {
            unlink(probe)
            var st = stat()
            let readable = stat(h.path, &st) == 0 && st.st_mode & 0o007 != 0
            if open.isEmpty && readable {
                // Group bits are the operator's choice (0750 with an auditors' group); others get nothing.
                add(Check(check: "home", status: .warn,
                          detail: "\(h.path) (mode \(String(format: "%04o", Int(st.st_mode & 0o7777)))) is open to every local user: "
                              + "they can read the evidence and the catalog",
                          fix: "chmod o-rwx \(h.path)"))
            } else if open.isEmpty {
                add(Check(check: "home", status: .ok, detail: "\(h.path) (tmp writable)"))
            } else {
                add(Check(check: "home", status: .fail,
                          detail: open.map { "\($0.0) (mode \(String(format: "%04o", $0.1)))" }.joined(separator: ", ")
                              + " writable by every user: anyone on this machine could replace the catalog or stored evidence",
                          fix: "chmod o-w " + open.map(\.0).joined(separator: " ")))
            }
        } else {
            add(Check(check: "home", status: .fail, detail: "cannot write in \(h.store.tmpDir): \(String(cString: strerror(errno)))",
                      fix: "give the service user write access to \(h.path) (systemd: ReadWritePaths=)"))
        }
        do {
            let problems = try h.catalog.integrityProblems()
            let s = try h.catalog.summary()
            let jobs = try h.catalog.jobCounts()
            add(Check(check: "catalog", status: problems.isEmpty ? .ok : .fail,
                      detail: problems.isEmpty ? "\(s.items) items, \(s.events) custody events, \(jobs.values.reduce(0, +)) jobs; integrity check ok (\(h.catalog.location))"
                                               : "\(h.catalog.location): " + problems.prefix(5).joined(separator: "; "),
                      fix: "stop evidence run, restore catalog.sqlite from a backup, then run evidence fsck"))
            let (chain, anchors) = try h.verifyCustody(trust: anchorTrust, anchorEvery: anchorEvery)
            add(Check(check: "custody", status: chain.ok ? .ok : .fail,
                      detail: chain.ok ? "\(chain.events) events chain to head \(chain.headHash.prefix(16))…; "
                                         + LogCommand.anchorSummary(anchors, events: chain.events).text
                                       : chain.problems.prefix(3).map(\.description).joined(separator: "; "),
                      fix: "the custody log was altered outside evidence: keep this catalog as evidence of that, and restore from a backup"))
            if let s3 = h.s3Store { add(Self.bucketCheck(s3)) }
            let report = h.store.check(rehash: false)
            add(Check(check: "store", status: report.problems.isEmpty ? .ok : .fail,
                      detail: report.problems.isEmpty ? "\(report.objects) objects, \(Output.bytes(report.bytes)); names and modes fine (evidence fsck re-hashes)"
                                                      : report.problems.prefix(3).map(\.description).joined(separator: "; "),
                      fix: "evidence fsck lists every problem"))
            let failed = jobs["failed"] ?? 0
            let stale = try h.catalog.pendingItems(olderThan: Date().addingTimeInterval(-86_400)).count
            add(Check(check: "queue", status: failed + stale == 0 ? .ok : .warn,
                      detail: failed + stale == 0 ? "no failed jobs, nothing waiting longer than a day"
                                                  : "\(failed) failed job(s), \(stale) item(s) waiting longer than a day",
                      fix: "evidence status shows why; evidence retry re-queues failed jobs once the cause is fixed"))
            for p in try Pauses.all(in: h.catalog).values.sorted(by: { $0.scope < $1.scope }) {
                add(Check(check: "credentials", status: .fail,
                          detail: "\(p.kind.rawValue) \(p.name) paused since \(Output.date(p.since)), its work waiting: \(p.reason)", fix: p.fix))
            }
        } catch {
            add(Check(check: "catalog", status: .fail, detail: error.description,
                      fix: error.description.contains("locked") ? "another process holds the catalog: wait, or find it with fuser \(home)/catalog.sqlite"
                                                                : "stop evidence run, restore catalog.sqlite from a backup, then run evidence fsck"))
        }
    }

    private func diskCheck(_ home: String) -> Check {
        var path = home
        while !FileManager.default.fileExists(atPath: path), path != "/", !path.isEmpty { path = (path as NSString).deletingLastPathComponent }
        var st = statvfs()
        guard statvfs(path.isEmpty ? "." : path, &st) == 0 else {
            return Check(check: "disk", status: .fail, detail: "statvfs \(path): \(String(cString: strerror(errno)))", fix: nil)
        }
        let free = Int64(st.f_bavail) * Int64(st.f_frsize)
        let total = Int64(st.f_blocks) * Int64(st.f_frsize)
        let pct = total > 0 ? Double(free) * 100 / Double(total) : 0
        let minimum = minFree.bytes
        let detail = "\(Output.bytes(free)) free of \(Output.bytes(total)) (\(String(format: "%.0f", pct)) %) at \(path)"
        if free < minimum {
            return Check(check: "disk", status: .fail, detail: detail + ", below \(Output.bytes(minimum))",
                         fix: "free space or move the home to a larger volume: ingest stops with ENOSPC and files wait in the drop folder")
        }
        if pct < 10 {
            return Check(check: "disk", status: .warn, detail: detail, fix: "plan more space: the store keeps every original")
        }
        return Check(check: "disk", status: .ok, detail: detail)
    }

    /// Folders the rules make inotify watch (each rule's folder, plus its subfolders when
    /// recursive), against the per-user limit shared with every other program of that user.
    private func inotifyCheck(_ rules: [WatchRule]) -> Check {
        let limitText = (try? String(contentsOfFile: "/proc/sys/fs/inotify/max_user_watches", encoding: .utf8))?
            .trimmingCharacters(in: .whitespacesAndNewlines)
        guard let limit = limitText.flatMap(Int.init) else {
            return Check(check: "inotify", status: .warn, detail: "cannot read /proc/sys/fs/inotify/max_user_watches",
                         fix: "evidence run falls back to polling where inotify is unavailable")
        }
        var folders = 0
        for r in rules {
            folders += 1
            guard r.recursive, let walker = FileManager.default.enumerator(atPath: r.path) else { continue }
            while let entry = walker.nextObject() as? String, folders <= limit {
                if (walker.fileAttributes?[.type] as? FileAttributeType) == .typeDirectory { folders += 1 }
                _ = entry
            }
        }
        let detail = "\(folders) folder(s) watched, fs.inotify.max_user_watches = \(limit)"
        let suggested = max(524_288, folders * 4)
        let fix = "echo fs.inotify.max_user_watches=\(suggested) | sudo tee /etc/sysctl.d/60-evidence.conf && sudo sysctl --system"
        if folders > limit { return Check(check: "inotify", status: .fail, detail: detail + ": new folders would go unwatched", fix: fix) }
        if folders * 5 > limit * 4 { return Check(check: "inotify", status: .warn, detail: detail + " (above 80 %, and other programs share it)", fix: fix) }
        return Check(check: "inotify", status: .ok, detail: detail)
    }
}
