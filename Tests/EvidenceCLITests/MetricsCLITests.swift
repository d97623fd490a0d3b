import EvidenceSandbox
import Foundation
import Glibc
import Testing
import EvidenceTesting

/// `evidence run` serving `/metrics`, `/healthz` and `/readyz` while it notarizes (QED + a real
/// `openssl ts` TSA) and archives to the sandbox's ownCloud; the scrape is compared with
/// `evidence status --json`, `evidence show --json`, the sandbox's own counters, and checked
/// by Prometheus' `promtool`.
@Suite("Metrics: evidence run with [metrics], real processes", .ownThread)
struct MetricsCLITests {
    /// The provider suite's sandbox and harness (rules with two notaries, an archive and a share).
    let providers = ProviderCLITests()
    let notarization = NotarizationCLITests()

    /// The URL `evidence run` printed once its metrics server listened.
    func metricsURL(_ h: RunHarness) -> String? {
        var url: String?
        waitUntil(timeout: 20) {
            url = h.log.split(separator: "\n").first { $0.hasPrefix("metrics on http://") }.map { String($0.dropFirst("metrics on ".count)) }
            return url != nil
        }
        return url
    }

    /// The sample's value in a Prometheus text scrape (`name{labels}` exactly as exported).
    func value(_ scrape: String, _ series: String) -> Double? {
        scrape.split(separator: "\n").first { $0.hasPrefix(series + " ") }.flatMap { Double($0.dropFirst(series.count + 1)) }
    }

    func curl(_ url: String) -> CLI.Result {
        CLI.exec(["curl", "-sS", "--max-time", "30", "-w", "\n%{http_code}", url])
    }

    /// Listening TCP sockets of process `pid` (from `ss`).
    func listeningSockets(_ pid: Int32) -> [String] {
        CLI.exec(["ss", "-Hltnp"]).stdout.split(separator: "\n").map(String.init).filter { $0.contains("pid=\(pid),") }
    }

    @Test("a scrape after three files went through matches status, show and the sandbox; promtool accepts it; healthz and readyz answer 200")
    func scrapeMatchesTheCatalog() async throws {
        try await providers.withSandbox { sandbox in
            let h = try providers.harness(.owncloud, sandbox)
            let config = try String(contentsOfFile: h.configPath!, encoding: .utf8) + "\n[metrics]\nlisten = \"127.0.0.1:0\"\n"
            try config.write(toFile: h.configPath!, atomically: true, encoding: .utf8)
            try h.start()
            let url = try #require(metricsURL(h), "no metrics URL printed: \(h.log)")
            #expect(url.hasPrefix("http://127.0.0.1:") && url.hasSuffix("/metrics"))
            let hostPort = url.dropFirst("http://".count).prefix { $0 != "/" }
            // The log line is written before the printed one; its handler may still be flushing.
            #expect(await waitUntil(timeout: 10) { h.log.split(separator: "\n").contains { $0.contains("serving metrics") && $0.contains(hostPort) } },
                    "the URL is logged too: \(h.log)")

            let sizes = [10_000, 25_000, 40_000]
            for (i, n) in sizes.enumerated() { h.write("clip-\(i).bin", randomBytes(n)) }
            #expect(providers.waitDone(h, sizes.count, timeout: 90), "log: \(h.log)")

            let r = curl(url)
            #expect(r.status == 0 && r.stdout.hasSuffix("\n200"), "\(r.stdout.suffix(200)) \(r.stderr)")
            let scrape = String(r.stdout.dropLast(4))

            // Items per state: exactly what `evidence status --json` says (0 where it lists none;
            // quarantined as its list of quarantined files).
            let status = h.status()
            let states = try #require(status["states"] as? [String: Int])
            let quarantined = (status["quarantined"] as? [Any])?.count ?? -1
            for state in ["ingested", "submitted", "confirmed", "certified", "archived", "done", "failed"] {
                #expect(value(scrape, #"evidence_items{state="\#(state)"}"#) == Double(states[state] ?? 0), "\(state)")
            }
            #expect(value(scrape, #"evidence_items{state="quarantined"}"#) == Double(quarantined))
            #expect(value(scrape, #"evidence_items{state="done"}"#) == Double(sizes.count))
            #expect(value(scrape, "evidence_oldest_pending_age_seconds") == 0)
            #expect(value(scrape, "evidence_ingested_files_total") == Double(sizes.count))
            #expect(value(scrape, "evidence_quarantined_total") == 0)
            // Catalog writes, several to a transaction at most (group commit), never fewer.
            let writes = value(scrape, "evidence_catalog_writes_total") ?? 0
            let transactions = value(scrape, "evidence_catalog_transactions_total") ?? 0
            #expect(transactions > 0 && writes >= transactions, "writes \(writes), transactions \(transactions)")

            // Notaries: one QED submission per item, as the sandbox counted them; one TSA stamp per item.
            let submitted = (notarization.counters(sandbox)["submissions_by_hash"] as? [String: Int])?.values.reduce(0, +)
            #expect(submitted == sizes.count)
            #expect(value(scrape, #"evidence_notary_request_duration_seconds_count{notary="qed",operation="submit"}"#) == Double(sizes.count))
            #expect((value(scrape, #"evidence_notary_request_duration_seconds_count{notary="qed",operation="poll"}"#) ?? 0) > 0)
            // One TSA request per batch window (RFC 4998), as the sandbox counted the tokens it issued.
            let tokens = notarization.counters(sandbox)["timestamps"] as? Int ?? -1
            #expect((1...sizes.count).contains(tokens))
            #expect(value(scrape, #"evidence_notary_request_duration_seconds_count{notary="tsa",operation="timestamp"}"#) == Double(tokens))
            #expect((value(scrape, #"evidence_notary_request_duration_seconds_sum{notary="qed",operation="submit"}"#) ?? 0) > 0)

            // Uploads: every archived file (originals, receipts, certificates, manifests) went up
            // once, so the bytes are exactly the sum of their sizes as `show` lists them.
            var archivedBytes = 0, archivedFiles = 0
            for id in 1...sizes.count {
                let archived = providers.show(h, String(id))["archived"] as? [[String: Any]] ?? []
                #expect(archived.allSatisfy { !(($0["verifiedBy"] as? String) ?? "").contains("already there") })
                archivedBytes += archived.compactMap { $0["size"] as? Int }.reduce(0, +)
                archivedFiles += archived.count
            }
            #expect(archivedFiles == sizes.count * 6, "original, 2 receipts, 2 certificates, manifest per item: \(archivedFiles)")
            #expect(archivedBytes > sizes.reduce(0, +))
            #expect(value(scrape, #"evidence_uploaded_bytes_total{account="vault"}"#) == Double(archivedBytes))
            #expect(value(scrape, #"evidence_provider_request_duration_seconds_count{account="vault",operation="upload"}"#) == Double(archivedFiles))
            #expect(value(scrape, #"evidence_provider_request_duration_seconds_count{account="vault",operation="share"}"#) == Double(sizes.count))
            #expect(value(scrape, #"evidence_job_failures_total{kind="archive"}"#) == 0)
            #expect(value(scrape, #"evidence_jobs_queued{kind="archive"}"#) == 0)
            #expect(!scrape.contains("clip-"), "no file name in any label")

            // Prometheus' own parser and lint.
            let file = h.scratch.path + "/scrape.txt"
            try scrape.write(toFile: file, atomically: true, encoding: .utf8)
            let promtool = CLI.exec(["sh", "-c", "promtool check metrics < '\(file)'"])
            #expect(promtool.status == 0, "promtool: \(promtool.stdout)\(promtool.stderr)")

            let base = String(url.dropLast("/metrics".count))
            #expect(curl(base + "/healthz").stdout == "ok\n\n200")
            #expect(curl(base + "/readyz").stdout == "ready\n\n200")

            let pid = try #require(h.process?.pid)
            #expect(listeningSockets(pid).count == 1)
            #expect(h.stop() == 0, "stops gracefully with the metrics server: \(h.log.suffix(2000))")
            #expect(curl(base + "/healthz").status != 0, "the port is closed after the stop")
        }
    }

    @Test("without [metrics] or --metrics, evidence run opens no port")
    func noPortByDefault() throws {
        let h = RunHarness()
        try h.start()
        let pid = try #require(h.process?.pid)
        #expect(listeningSockets(pid).isEmpty, "\(listeningSockets(pid))")
        #expect(!h.log.contains("metrics on "))
        #expect(h.stop() == 0)
    }

    @Test("--metrics: a non-loopback address is refused (exit 2) naming the option and what to set; a malformed one too")
    func metricsOption() {
        let s = Scratch()
        let config = s.file("evidence.toml", "home = \"home\"\n")
        let r = CLI.exec([CLI.binary, "--config", config, "run", "--metrics", "0.0.0.0:9464"])
        #expect(r.status == 2, "\(r.stderr)")
        #expect(r.stderr.contains("--metrics 0.0.0.0:9464: 0.0.0.0 is not a loopback address"), "\(r.stderr)")
        #expect(r.stderr.contains("set `allow_remote = true` in [metrics] of /") && r.stderr.contains("/evidence.toml to allow that"))
        let bad = CLI.exec([CLI.binary, "--config", config, "run", "--metrics", "9464"])
        // Parsed by ArgumentParser into a ListenAddress: it names the option and the value, and
        // shows the option's help with the form expected.
        #expect(bad.status == 2 && bad.stderr.contains("'9464' is invalid for '--metrics <addr>'")
                && bad.stderr.contains("HOST:PORT"), "\(bad.stderr)")
        let remote = s.file("remote.toml", "[metrics]\nlisten = \"0.0.0.0:9464\"\n")
        let c = CLI.exec([CLI.binary, "--config", remote, "run"])
        #expect(c.status == 2 && c.stderr.contains("remote.toml:2: field `metrics.listen`: 0.0.0.0 is not a loopback address"), "\(c.stderr)")
    }
}
