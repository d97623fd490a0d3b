import EvidenceCatalog
import EvidenceCore
import EvidencePipeline
@testable import EvidencePortal
import EvidenceStore
import Foundation
import Logging
import Hummingbird
import HummingbirdTesting
import Testing

/// The portal's HTTP behaviour over a real home (store + SQLite catalog), through the router.
@Suite("Portal over HTTP")
struct PortalHTTPTests {
    static let hostile = #"<img src=x onerror=alert(1)>"quote'.mp4"#

    /// Two items: a hostile-named one with proofs, a certificate, an archive copy and a link,
    /// and a plain one; plus a quarantine entry.
    func fixture() throws -> (PortalFixture, Item, Item) {
        let f = try PortalFixture()
        let a = try f.ingest(Self.hostile, Data("first evidence file\n".utf8))
        let b = try f.ingest("bodycam-0042.wav", Data(repeating: 7, count: 3000))
        let c = f.home.catalog
        let pdf = try f.storeObject(Data("%PDF-1.4\n% test certificate\n%%EOF\n".utf8))
        let tsr = try f.storeObject(Data([0x30, 0x03, 0x02, 0x01, 0x00]))
        // Confirmed once both notaries are (what ItemLifecycle decides for a rule with both).
        let bothConfirmed: @Sendable (ItemState, Set<String>) -> JobTransition? = { state, confirmed in
            state < .confirmed && confirmed.isSuperset(of: ["tsa", "qed"]) ? JobTransition(state: .confirmed, event: .confirmed) : nil
        }
        try c.saveProof(Proof(itemID: a.id, notary: "tsa", kind: .rfc3161, state: .confirmed, remoteID: "0x5EED01",
                              receipt: tsr, provenAt: Date()), then: bothConfirmed)
        try c.saveProof(Proof(itemID: a.id, notary: "qed", kind: .qed, state: .confirmed, remoteID: "slug-1",
                              txHash: "0xfeedbeef", blockHeight: 42, network: "testnet",
                              link: "https://explorer.example/tx/0xfeedbeef", provenAt: Date()),
                        then: bothConfirmed)
        try c.saveCertificate(Certificate(itemID: a.id, origin: "evidence", sha256: pdf, size: 33))
        try c.saveArchivedFile(ArchivedFile(itemID: a.id, account: "vault", remotePath: "cam/a.mp4", role: .original,
                                            sha256: a.sha256, size: a.size, verifiedBy: "sha256"))
        try c.saveSharedLink(SharedLink(itemID: a.id, account: "vault", remotePath: "cam/a.mp4", url: "javascript:alert(2)",
                                        expires: nil, passwordProtected: true, fallback: nil))
        _ = try c.recordQuarantine(path: f.dir + "/drop/<b>fifo</b>", rule: "cam", reason: "not a regular file (fifo)")
        return (f, try #require(try c.item(id: a.id)), b)
    }

    @Test("without credentials every path answers 401 with a Basic challenge, security headers and no data")
    func unauthenticated() async throws {
        let (f, a, _) = try fixture()
        try await f.app().test(.router) { client in
            for path in ["/", "/status", "/items/\(a.id)", "/items/\(a.id)/bundle.zip", "/nope"] {
                try await client.execute(uri: path, method: .get) { r in
                    #expect(r.status == .unauthorized, "\(path)")
                    #expect(r.headers[.wwwAuthenticate]?.hasPrefix("Basic realm=\"evidence\"") == true)
                    #expect(r.headers[.contentSecurityPolicy] == PortalResponder.contentSecurityPolicy)
                    #expect(!r.text.contains(a.sha256.hex))
                }
            }
            try await client.execute(uri: "/", method: .get, headers: [.authorization: "Bearer wrong"]) { r in
                #expect(r.status == .unauthorized)
            }
            try await client.execute(uri: "/", method: .get, headers: [.authorization: "Bearer \(PortalFixture.token)"]) { r in
                #expect(r.status == .ok)
            }
        }
    }

    @Test("pages carry a strict CSP, nosniff and no script; hostile file names are shown as text")
    func headersAndEscaping() async throws {
        let (f, a, _) = try fixture()
        try await f.app().test(.router) { client in
            for path in ["/", "/items/\(a.id)", "/status"] {
                try await client.execute(uri: path, method: .get, headers: PortalFixture.basic) { r in
                    #expect(r.status == .ok, "\(path)")
                    #expect(r.headers[.contentType] == "text/html; charset=utf-8")
                    #expect(r.headers[.contentSecurityPolicy]?.hasPrefix("default-src 'none'; style-src 'unsafe-inline'; img-src 'self'") == true)
                    #expect(r.headers[.init("X-Content-Type-Options")!] == "nosniff")
                    #expect(!r.text.lowercased().contains("<script"))
                    #expect(!r.text.contains("<img"), "\(path)")
                    #expect(!r.text.contains("<b>fifo"))
                    // Our own markup is never escaped by mistake (a String where HTML was meant).
                    for tag in ["p", "div", "span", "a", "table", "tr", "td", "code", "ul", "li", "h1", "h2"] {
                        #expect(!r.text.contains("&lt;\(tag) ") && !r.text.contains("&lt;\(tag)&gt;"), "\(path): escaped <\(tag)>")
                    }
                }
            }
            try await client.execute(uri: "/items/\(a.id)", method: .get, headers: PortalFixture.basic) { r in
                #expect(r.text.contains("&lt;img src=x onerror=alert(1)&gt;&quot;quote&#39;.mp4"))
                #expect(!r.text.contains("href=\"javascript:"))
            }
        }
    }

    @Test("search finds items by hash prefix, file name, item number and ingest day; nothing for the rest")
    func search() async throws {
        let (f, a, b) = try fixture()
        let today = String(Timestamp.string(Date()).prefix(10))
        try await f.app().test(.router) { client in
            func ids(_ q: String) async throws -> [Int64] {
                try await client.execute(uri: "/?q=" + q, method: .get, headers: PortalFixture.basic) { r in
                    #expect(r.status == .ok)
                    let body = r.text
                    return [a.id, b.id].filter { body.contains("href=\"/items/\($0)\"") }
                }
            }
            #expect(try await ids(String(b.sha256.hex.prefix(6))) == [b.id])
            #expect(try await ids(String(a.sha256.hex.prefix(10)).uppercased()) == [a.id])
            #expect(try await ids("BODYCAM") == [b.id])
            #expect(try await ids("quote%27.mp4") == [a.id])
            #expect(try await ids("%23\(b.id)") == [b.id])
            #expect(try await ids(today) == [a.id, b.id])
            #expect(try await ids("1999-01-01") == [])
            #expect(try await ids("no+such+file") == [])
            #expect(try await ids("") == [a.id, b.id])
            try await client.execute(uri: "/?q=no+such+file", method: .get, headers: PortalFixture.basic) { r in
                #expect(r.text.contains("Nothing matches."))
                #expect(r.text.contains("value=\"no such file\""))
            }
            // Read by Hummingbird's form decoder: a bad escape or a repeated parameter is refused,
            // not guessed at (the hand-written parser took the first `q` and kept `%ZZ` raw).
            for bad in ["/?q=%ZZ", "/?q=a&q=b", "/status?older=1h&older=2h"] {
                try await client.execute(uri: bad, method: .get, headers: PortalFixture.basic) { r in
                    #expect(r.status == .badRequest, "\(bad)")
                    #expect(r.text.contains("The query could not be read"), "\(bad)")
                }
            }
        }
    }

    @Test("the item page shows state, hash, media, proofs (tx link, TSA serial), certificates, archive and custody")
    func itemPage() async throws {
        let (f, a, _) = try fixture()
        try await f.app().test(.router) { client in
            try await client.execute(uri: "/items/\(a.id)", method: .get, headers: PortalFixture.basic) { r in
                let t = r.text
                #expect(t.contains(">confirmed</span>"))
                #expect(t.contains(a.sha256.hex))
                #expect(t.contains("TSA serial <code>0x5EED01</code>"))
                #expect(t.contains(#"<a href="https://explorer.example/tx/0xfeedbeef" rel="noopener noreferrer">0xfeedbeef</a>"#))
                #expect(t.contains("testnet, block 42"))
                #expect(t.contains("href=\"/items/\(a.id)/certificates/evidence.pdf\""))
                #expect(t.contains("href=\"/items/\(a.id)/bundle.zip\"") && t.contains("href=\"/items/\(a.id)/bundle.tar\""))
                #expect(t.contains("cam/a.mp4") && t.contains("password protected"))
                for kind in ["ingested", "notary-confirmed", "certificate", "archived-file", "share-link"] {
                    #expect(t.contains("<summary>\(kind) by "), "custody event \(kind)")
                }
            }
        }
    }

    @Test("the list pages through every item with filters (case, tag, state, dates) and a 400 for a bad one; /cases; custody as sentences in local time")
    func pagingFiltersCases() async throws {
        let (f, a, b) = try fixture()
        var made = [a, b]
        for i in 0..<3 { made.append(try f.ingest("clip-\(i).bin", Data("clip \(i)\n".utf8))) }
        let items = made
        let c = f.home.catalog
        _ = try c.appendEvent(itemID: nil, kind: .caseOpened, actor: "cli:test", details: ["case": "c-1", "title": "Riverside"])
        _ = try c.appendEvent(itemID: items[1].id, kind: .caseAdded, actor: "cli:test", details: ["case": "c-1", "how": "named"])
        _ = try c.appendEvent(itemID: items[3].id, kind: .caseAdded, actor: "cli:test", details: ["case": "c-1", "how": "named"])
        _ = try c.appendEvent(itemID: items[3].id, kind: .tagged, actor: "cli:test", details: ["tag": "night"])
        var options = try f.portal().options
        options.pageSize = 2
        options.timezone = LocalTime(identifier: "Europe/Berlin")!
        var logger = Logger(label: "portal-test")
        logger.logLevel = .warning
        let app = Portal(home: f.home, options: options).makeApplication(logger: logger)
        let dir = f.dir, tmpDir = f.home.store.tmpDir
        try await app.test(.router) { client in
            func page(_ uri: String) async throws -> (HTTPResponse.Status, String) {
                try await client.execute(uri: uri, method: .get, headers: PortalFixture.basic) { r in (r.status, r.text) }
            }
            let (s1, p1) = try await page("/")
            #expect(s1 == .ok && p1.contains("Page 1 of 3") && p1.contains(#"href="/?page=2""#), "\(p1)")
            #expect(p1.contains("href=\"/items/\(items[4].id)\"") && !p1.contains("href=\"/items/\(items[0].id)\""))
            let (_, p3) = try await page("/?page=3")
            #expect(p3.contains("Page 3 of 3") && p3.contains("href=\"/items/\(items[0].id)\"") && p3.contains("rel=\"prev\""))
            let (_, byCase) = try await page("/?case=c-1")
            #expect(byCase.contains("2 items match") && byCase.contains("href=\"/items/\(items[1].id)\"") && byCase.contains("href=\"/items/\(items[3].id)\""), "\(byCase)")
            let (_, byTag) = try await page("/?tag=night&state=ingested")
            #expect(byTag.contains("1 item match") && byTag.contains("href=\"/items/\(items[3].id)\""), "\(byTag)")
            let (_, future) = try await page("/?from=2999-01-01")
            #expect(future.contains("Nothing matches."))
            for bad in ["/?state=bogus", "/?from=yesterday", "/?page=0", "/?case=..%2Fx"] {
                let (status, text) = try await page(bad)
                #expect(status == .badRequest, "\(bad): \(text)")
            }
            let (_, cases) = try await page("/cases")
            #expect(cases.contains(#"<a href="/?case=c-1">c-1</a>"#) && cases.contains("Riverside"))
            let (_, item) = try await page("/items/\(items[3].id)")
            #expect(item.contains("Added to case c-1 by test (command line).") && item.contains("Tagged “night”"), "\(item)")
            #expect(item.contains("Europe/Berlin"))

            // The case's disclosure package: a zip that Python's zipfile unpacks and sha256sum -c accepts,
            // each item's download recorded in its custody log.
            let zip = try await client.execute(uri: "/cases/c-1/disclosure.zip", method: .get, headers: PortalFixture.basic) { r in
                #expect(r.status == .ok && r.headers[.contentType] == "application/zip")
                return Data(buffer: r.body)
            }
            let out = dir + "/unzipped", file = dir + "/case.zip"
            try zip.write(to: URL(fileURLWithPath: file))
            #expect(try run(["python3", "-c", "import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])", file, out]).status == 0)
            let sums = try run(["sha256sum", "-c", "SHA256SUMS"], cwd: out + "/disclosure-c-1")
            #expect(sums.status == 0 && sums.out.contains("index.pdf: OK"), "\(sums.out)")
            for id in [items[1].id, items[3].id] {
                let accessed = try c.events(itemID: id).filter { $0.kind == "accessed" }
                #expect(accessed.contains { $0.details.contains("disclosure of case c-1 downloaded") && $0.actor.hasPrefix("portal:auditor") }, "\(accessed)")
            }
            let (missing, _) = try await page("/cases/nope/disclosure.zip")
            #expect(missing == .notFound)
            #expect(try FileManager.default.contentsOfDirectory(atPath: tmpDir).filter { $0.hasSuffix(".portal") }.isEmpty)
        }
    }

    @Test("unknown items and paths are 404 pages; other methods than GET and HEAD are 405")
    func notFoundAndMethods() async throws {
        let (f, a, _) = try fixture()
        try await f.app().test(.router) { client in
            for path in ["/items/999", "/items/abc", "/items/-1", "/items/999/bundle.zip", "/items/\(a.id)/certificates/qed.pdf",
                         "/items/\(a.id)/certificates/evidence.txt", "/etc/passwd"] {
                try await client.execute(uri: path, method: .get, headers: PortalFixture.basic) { r in
                    #expect(r.status == .notFound, "\(path)")
                    #expect(r.headers[.contentType] == "text/html; charset=utf-8", "\(path)")
                    #expect(r.text.contains("Not found"))
                }
            }
            for method in [HTTPRequest.Method.post, .put, .delete, .patch] {
                try await client.execute(uri: "/items/\(a.id)", method: method, headers: PortalFixture.basic) { r in
                    #expect(r.status == .methodNotAllowed)
                    #expect(r.headers[.allow] == "GET, HEAD")
                }
            }
            try await client.execute(uri: "/items/\(a.id)", method: .head, headers: PortalFixture.basic) { r in
                #expect(r.status == .ok)
                #expect(r.body.readableBytes == 0)
            }
        }
        #expect(try f.home.catalog.item(id: a.id)?.state == .confirmed)
    }

    @Test("HEAD of a bundle is answered from the catalog without building it (it would need the stored original)")
    func bundleHeadBuildsNothing() async throws {
        let (f, a, _) = try fixture()
        // Without its stored original a bundle cannot be built: a HEAD that built would fail.
        let object = f.home.localStore!.objectPath(a.sha256)
        chmod((object as NSString).deletingLastPathComponent, 0o700)
        #expect(unlink(object) == 0)
        try await f.app().test(.router) { client in
            try await client.execute(uri: "/items/\(a.id)/bundle.zip", method: .head, headers: PortalFixture.basic) { r in
                #expect(r.status == .ok)
                #expect(r.headers[.contentDisposition] == "attachment; filename=\"evidence-item-\(a.id)-\(a.sha256.short).zip\"")
            }
        }
    }

    @Test("a server error page names no internal path: the details go to the log under a reference")
    func errorPageHidesPaths() async throws {
        let (f, a, _) = try fixture()
        // Damage the stored certificate: answering it fails inside the portal.
        let cert = try #require(try f.home.catalog.certificates(itemID: a.id).first)
        let object = f.home.localStore!.objectPath(cert.sha256)
        chmod(object, 0o600)
        try Data("%PDF-1.4 damaged".utf8).write(to: URL(fileURLWithPath: object))
        let homePath = f.home.path
        try await f.app().test(.router) { client in
            try await client.execute(uri: "/items/\(a.id)/certificates/evidence.pdf", method: .get, headers: PortalFixture.basic) { r in
                #expect(r.status == .internalServerError)
                #expect(!r.text.contains(homePath) && !r.text.contains("objects/"), "\(r.text)")
                #expect(r.text.contains("reference"))
            }
        }
    }

    @Test("build slots: at most the limit at once; a slot is free again once its holder is gone")
    func buildSlots() {
        let slots = BuildSlots(limit: 2)
        var first: BuildSlots.Slot? = slots.take()
        let second = slots.take()
        #expect(first != nil && second != nil)
        #expect(slots.take() == nil, "a third build while two run")
        first = nil
        #expect(slots.take() != nil)
        withExtendedLifetime(second) {}
    }

    @Test("every item page, certificate and bundle a signed-in user fetches is an `accessed` custody event naming them; a refused request records nothing")
    func accessIsRecorded() async throws {
        let (f, a, _) = try fixture()
        let before = try f.home.catalog.events(itemID: a.id).count
        let token: HTTPFields = [.authorization: "Bearer \(PortalFixture.token)"]
        try await f.app().test(.router) { client in
            try await client.execute(uri: "/items/\(a.id)", method: .get) { #expect($0.status == .unauthorized) }
            try await client.execute(uri: "/items/\(a.id)", method: .get, headers: PortalFixture.basic) { #expect($0.status == .ok) }
            try await client.execute(uri: "/items/\(a.id)/certificates/evidence.pdf", method: .get, headers: token) { #expect($0.status == .ok) }
            try await client.execute(uri: "/items/\(a.id)/bundle.tar", method: .get, headers: PortalFixture.basic) { r in
                #expect(r.status == .ok)
                // The bundle's own custody log already shows this download.
                #expect(r.text.contains("bundle.tar downloaded"))
            }
            try await client.execute(uri: "/status", method: .get, headers: PortalFixture.basic) { #expect($0.status == .ok) }
        }
        let events = try f.home.catalog.events(itemID: a.id).dropFirst(before)
        #expect(events.map(\.kind) == ["accessed", "accessed", "accessed"], "\(events.map(\.kind))")
        let details = events.map { (try? JSONDecoder().decode([String: String].self, from: Data($0.details.utf8)))?["what"] ?? "" }
        #expect(details == ["item page", "certificate evidence downloaded", "bundle.tar downloaded"])
        #expect(events.map(\.actor).map { $0.components(separatedBy: "@").first ?? "" } == ["portal:auditor", "portal:token", "portal:auditor"])
        #expect(try f.home.catalog.verifyChain().ok)
    }

    @Test("the certificate downloads as an attachment PDF with a safe name, byte for byte")
    func certificate() async throws {
        let (f, a, _) = try fixture()
        try await f.app().test(.router) { client in
            try await client.execute(uri: "/items/\(a.id)/certificates/evidence.pdf", method: .get, headers: PortalFixture.basic) { r in
                #expect(r.status == .ok)
                #expect(r.headers[.contentType] == "application/pdf")
                #expect(r.headers[.contentDisposition] == "attachment; filename=\"evidence-item-\(a.id)-\(a.sha256.short)-evidence.pdf\"")
                #expect(r.text == "%PDF-1.4\n% test certificate\n%%EOF\n")
            }
        }
    }

    @Test("the bundle downloads as .zip and .tar; each unpacks and passes sha256sum -c; no work files remain")
    func bundles() async throws {
        let (f, a, _) = try fixture()
        let out = f.dir + "/out"
        try FileManager.default.createDirectory(atPath: out, withIntermediateDirectories: true)
        try await f.app().test(.router) { client in
            for format in ["zip", "tar"] {
                try await client.execute(uri: "/items/\(a.id)/bundle.\(format)", method: .get, headers: PortalFixture.basic) { r in
                    #expect(r.status == .ok)
                    #expect(r.headers[.contentType] == (format == "zip" ? "application/zip" : "application/x-tar"))
                    #expect(r.headers[.contentDisposition] == "attachment; filename=\"evidence-item-\(a.id)-\(a.sha256.short).\(format)\"")
                    #expect(r.headers[.contentLength] == String(r.body.readableBytes))
                    let file = out + "/b.\(format)"
                    _ = FileManager.default.createFile(atPath: file, contents: Data(buffer: r.body))
                    let dest = out + "/" + format
                    try FileManager.default.createDirectory(atPath: dest, withIntermediateDirectories: true)
                    let unpack = format == "zip" ? try run(["unzip", "-q", file, "-d", dest]) : try run(["tar", "-xf", file, "-C", dest])
                    #expect(unpack.status == 0, "\(unpack.out)")
                    let folder = dest + "/evidence-item-\(a.id)-\(a.sha256.short)"
                    let sums = try run(["sha256sum", "-c", "SHA256SUMS"], cwd: folder)
                    #expect(sums.status == 0, "\(sums.out)")
                    #expect(sums.out.contains("original/\(BundleNames.safe(Self.hostile)): OK"), "\(sums.out)")
                    #expect(sums.out.contains("certificates/evidence.pdf: OK") && sums.out.contains("proofs/tsa.tsr: OK"))
                    #expect(BundleVerifier.isBundle(folder))
                }
            }
        }
        let left = try FileManager.default.contentsOfDirectory(atPath: f.home.store.tmpDir)
        #expect(left.isEmpty, "\(left)")
    }

    @Test("the status page counts states and jobs, lists failed and stuck items with reasons, and the quarantine")
    func status() async throws {
        let (f, a, b) = try fixture()
        // A QED report the notary failed, saved as NotarizeHandler does (failed, as ItemLifecycle decides).
        try f.home.catalog.saveProof(Proof(itemID: b.id, notary: "qed", kind: .qed, state: .failed, remoteID: "slug-2",
                                           error: "Transaction reverted")) { state, _ in
            state == .failed ? nil : JobTransition(state: .failed, event: .failed, reason: "notary said: Transaction reverted")
        }
        try await f.app().test(.router) { client in
            try await client.execute(uri: "/status?older=0s", method: .get, headers: PortalFixture.basic) { r in
                let t = r.text
                #expect(r.status == .ok)
                #expect(t.contains("Needs attention."))
                #expect(t.contains("<div class=\"state-confirmed\"><b>1</b>"))
                #expect(t.contains("<div class=\"state-failed\"><b>1</b>"))
                #expect(t.contains("<div class=\"state-quarantined\"><b>1</b>"))
                #expect(t.contains("Transaction reverted"))
                #expect(t.contains("not a regular file (fifo)") && t.contains("&lt;b&gt;fifo&lt;/b&gt;"))
                #expect(t.contains("href=\"/items/\(a.id)\""), "a confirmed item waiting for its next step is stuck after 0s")
            }
            try await client.execute(uri: "/status?older=soon", method: .get, headers: PortalFixture.basic) { r in
                #expect(r.status == .badRequest)
            }
        }
    }

    @Test("the status page shows each node of a shared catalog: the items it took in and the jobs it runs now")
    func statusNodes() async throws {
        let (f, a, _) = try fixture()
        let c = f.home.catalog
        _ = try c.enqueue(JobSpec(.verify(rule: "cam")), itemID: a.id, dedupeKey: "nodes-test")
        _ = try #require(try c.claimJob(kinds: [.verify], owner: "run@station-9:4242/abc", lease: 60, now: Date()))
        let takenIn = try c.summary().takenInByNode
        try await f.app().test(.router) { client in
            try await client.execute(uri: "/status", method: .get, headers: PortalFixture.basic) { r in
                let t = r.text
                let table = t.range(of: "id=\"nodes\"").map { String(t[$0.lowerBound...].prefix(2000)) } ?? ""
                #expect(table.contains("station-9</code></td><td>0</td><td>1</td>"), "\(table)")
                for (node, n) in takenIn {
                    #expect(table.contains("\(node)</code></td><td>\(n)</td><td>0</td>"), "\(table)")
                }
                #expect(!takenIn.isEmpty)
            }
        }
    }
}
