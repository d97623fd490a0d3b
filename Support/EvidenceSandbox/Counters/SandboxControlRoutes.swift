import Hummingbird

/// `/_sandbox/…`: the test harness's window into the sandbox (no authentication).
/// Counters live in memory: they start at zero with each sandbox process, while `reports`
/// is the number of stored (persisted) QED reports.
///
/// - `GET /_sandbox/counters` →
///   `{"submissions_by_hash":{hex:n},"requests":n,"faults":{"5xx":n,"429":n,"dropped":n},"reports":n,
///   "uploads_by_path":{"provider:/path":n}}`
/// - `POST /_sandbox/expire-tokens` → every provider access token issued so far answers 401.
/// - `POST /_sandbox/corrupt-next-upload?provider=dropbox|box|sharefile|owncloud` → that
///   provider flips one byte of the next file it stores.
/// - `POST /_sandbox/advance-clock?seconds=N` → the provider emulations' clock jumps N seconds
///   ahead (authorization codes and access tokens issued before may expire).
/// - `POST /_sandbox/quirk?quirk=QUIRK&count=N|always` → arms one of the providers' rarer
///   answers (`ProviderControl.Quirk`: `dropbox-409-too-many-writes`, `box-parts-mismatch`,
///   `box-small-part-pages`, `box-part-answer-lost`, `box-download-202`, `free-plan`, `sharefile-chunk-error-text`, `sharefile-chunk-error-json`, `sharefile-upload-expired`, `sharefile-client-user`, `sharefile-empty-hash`, `owncloud-enforced-expiry`, `owncloud-assembled-412`, `owncloud-slow-assembly`, `owncloud-assembly-423`, `owncloud-no-uploads`, `owncloud-link-drops-password`,
///   `sharefile-small-pages`, `sharefile-eu-tenant`) for the next N times it applies; count 0 disarms.
/// - `POST /_sandbox/misbehave?path=PREFIX&mode=MODE&count=N` → the next N requests (default 1)
///   whose path starts with PREFIX are answered 200 with MODE instead of reaching the emulation:
///   `garbage` (not JSON), `html` (a login page), `truncated` (the connection closes before
///   `Content-Length` bytes), `oversized` (a 65 MiB JSON body, streamed), `slow` (headers, then
///   one byte every 2 s), `wrong-type` (a PNG), `wrong-json` (JSON of a shape no endpoint answers) or
///   `locked` (423 Locked with a Sabre error body, the one mode that is not a 200). Counters show `"misbehaved":{mode:n}` and
///   `"misbehave_pending":{prefix:n}`.
/// - `GET /_sandbox/dropbox/exchanges` → the Dropbox calls answered since the start or the last
///   reset (at most the newest 2,000 within 64 MiB), JSON lines: route, argument and answer as the wire had
///   them (`DropboxExchangeLog`), for `scripts/oracles/dropbox_schema.py`.
/// - `POST /_sandbox/reset` → zeroes counters and rate-limit windows, answers the fresh
///   counters; `?reports=true` also deletes every QED report (and starts `reports.json` afresh).
struct SandboxControlRoutes: Sendable {
    let counters: SandboxCounters
    let store: QEDReportStore
    let injector: FaultInjector
    let providers: ProviderControl
    let misbehaviour: Misbehaviour

    func add(to router: Router<SandboxRequestContext>) {
        router.get("_sandbox/counters") { _, _ in await self.countersJSON() }
        router.get("_sandbox/dropbox/exchanges") { _, _ in
            Response.bytes(Array(providers.dropboxExchanges.jsonLines().utf8), contentType: "application/x-ndjson")
        }
        router.post("_sandbox/expire-tokens") { _, _ in
            providers.expireTokens()
            return Response.json(.object([("expired", .bool(true))]))
        }
        router.post("_sandbox/corrupt-next-upload") { request, _ in
            let name = request.uri.queryParameters.get("provider") ?? ""
            guard ["dropbox", "box", "sharefile", "owncloud"].contains(name) else {
                return Response.json(.object([("detail", .string("provider must be dropbox, box, sharefile or owncloud"))]), status: .badRequest)
            }
            providers.corruptNextUpload(provider: name)
            return Response.json(.object([("provider", .string(name))]))
        }
        router.post("_sandbox/advance-clock") { request, _ in
            guard let seconds = request.uri.queryParameters.get("seconds").flatMap(Double.init), seconds > 0 else {
                return Response.json(.object([("detail", .string("seconds must be a positive number"))]), status: .badRequest)
            }
            providers.advanceClock(by: seconds)
            return Response.json(.object([("offset_seconds", .double(providers.clockOffset))]))
        }
        router.post("_sandbox/quirk") { request, _ in
            let query = request.uri.queryParameters
            let names = ProviderControl.Quirk.allCases.map(\.rawValue).joined(separator: ", ")
            guard let quirk = query.get("quirk").flatMap(ProviderControl.Quirk.init(rawValue:)) else {
                return Response.json(.object([("detail", .string("quirk must be one of \(names)"))]), status: .badRequest)
            }
            let text = query.get("count") ?? "1"
            let count: Int?
            if text == "always" { count = nil } else {
                guard let n = Int(text), n >= 0 else {
                    return Response.json(.object([("detail", .string("count must be a whole number, 0 or more, or always"))]), status: .badRequest)
                }
                count = n
            }
            providers.arm(quirk, count: count)
            return Response.json(.object([("quirk", .string(quirk.rawValue)), ("count", .string(text))]))
        }
        router.post("_sandbox/misbehave") { request, _ in
            let query = request.uri.queryParameters
            let modes = Misbehaviour.Mode.allCases.map(\.rawValue).joined(separator: ", ")
            guard let prefix = query.get("path"), prefix.hasPrefix("/") else {
                return Response.json(.object([("detail", .string("path must be a path prefix starting with /"))]), status: .badRequest)
            }
            guard let mode = query.get("mode").flatMap(Misbehaviour.Mode.init(rawValue:)) else {
                return Response.json(.object([("detail", .string("mode must be one of \(modes)"))]), status: .badRequest)
            }
            guard let count = Int(query.get("count") ?? "1"), count >= 0 else {
                return Response.json(.object([("detail", .string("count must be a whole number, 0 or more"))]), status: .badRequest)
            }
            misbehaviour.arm(prefix: prefix, mode: mode, count: count)
            return Response.json(.object([("path", .string(prefix)), ("mode", .string(mode.rawValue)), ("count", .int(Int64(count)))]))
        }
        router.post("_sandbox/reset") { request, context in
            let dropReports = ["true", "1", "yes"].contains(request.uri.queryParameters.get("reports")?.lowercased() ?? "")
            if dropReports { try await store.removeAll() }
            counters.reset()
            injector.reset()
            misbehaviour.reset()
            providers.reset()
            context.logger.info("sandbox reset", metadata: ["reports": "\(dropReports ? "deleted" : "kept")"])
            return await self.countersJSON()
        }
    }

    func countersJSON() async -> Response {
        let s = counters.snapshot
        let reports = await store.count
        return .json(.object([
            ("submissions_by_hash", .object(s.submissionsByHash.sorted { $0.key < $1.key }.map { ($0.key, .int(Int64($0.value))) })),
            ("requests", .int(Int64(s.requests))),
            ("faults", .object([
                ("5xx", .int(Int64(s.faults5xx))),
                ("429", .int(Int64(s.faults429))),
                ("dropped", .int(Int64(s.dropped))),
                ("spikes", .int(Int64(s.spikes))),
            ])),
            ("reports", .int(Int64(reports))),
            ("timestamps", .int(Int64(s.timestampsByImprint.values.reduce(0, +)))),
            ("timestamps_by_imprint", .object(s.timestampsByImprint.sorted { $0.key < $1.key }.map { ($0.key, .int(Int64($0.value))) })),
            ("uploads_by_path", .object(s.uploadsByPath.sorted { $0.key < $1.key }.map { ($0.key, .int(Int64($0.value))) })),
            ("misbehaved", .object(misbehaviour.servedCounts.sorted { $0.key < $1.key }.map { ($0.key, .int(Int64($0.value))) })),
            ("misbehave_pending", .object(misbehaviour.pending.sorted { $0.key < $1.key }.map { ($0.key, .int(Int64($0.value))) })),
        ]))
    }
}
