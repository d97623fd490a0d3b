import EvidenceProcess
import EvidenceSandbox
import EvidenceTesting
import Foundation
import Glibc
import Testing

/// The bad-input matrix, end to end through the `evidence` binary: every odd file, name, disk,
/// lock and server answer gets a clear error naming the file (or field) and is quarantined,
/// refused or retried — never a crash, a hang or a silent skip.
@Suite("Bad-input matrix: evidence ingest and evidence run, real processes", .ownThread)
struct BadInputMatrixCLITests {
    // MARK: Helpers

    func show(_ h: RunHarness, _ item: String, config: Bool = false) -> [String: Any] {
        let args = (config ? ["--config", h.configPath!] : []) + ["show", item, "--json"]
        return (h.cli.run(args).json as? [String: Any]) ?? [:]
    }

    func state(_ h: RunHarness, _ item: String) -> String? {
        (show(h, item)["item"] as? [String: Any])?["state"] as? String
    }

    func quarantine(_ cli: CLI) -> [[String: Any]] {
        ((cli.run(["status", "--json"]).json as? [String: Any])?["quarantined"] as? [[String: Any]]) ?? []
    }

    /// How the CLI prints a path (the scratch folder's spelling has a `//`).
    func norm(_ path: String) -> String { (path as NSString).standardizingPath }

    func sha256(_ path: String) -> String { String(CLI.exec(["sha256sum", path]).stdout.prefix(64)) }

    func tmpEntries(_ home: String) -> [String] {
        (try? FileManager.default.contentsOfDirectory(atPath: home + "/tmp")) ?? []
    }

    /// A process kept running for the test (a writer, a lock holder, a TLS front).
    final class Helper {
        let process: ChildProcess
        init(_ argv: [String]) throws {
            process = try ChildProcess(argv[0], Array(argv.dropFirst()), stdin: .pipe, stdout: .null, stderr: .null)
        }
        func send(_ text: String) { process.send(text) }
        func stop() {
            // SIGKILL: a child that ignores SIGTERM (socat) must not outlive the test.
            process.signal(SIGKILL)
            process.closeStdin()
            process.wait()
        }
        deinit { stop() }
    }

    /// `sqlite3 CATALOG` holding `BEGIN EXCLUSIVE` until `release()`; returns once it holds it.
    final class CatalogLock {
        let helper: Helper
        init(_ catalog: String) throws {
            // -bail and a busy timeout: a BEGIN that met the service's own write (a running
            // `evidence run` writes at start) waits for it, and one that still fails stops sqlite3
            // before the marker, instead of going on without the lock (the test then saw the
            // dropped file recorded "while locked").
            helper = try Helper(["sqlite3", "-bail", catalog])
            let marker = catalog + ".locked-marker"
            unlink(marker)
            helper.send(".timeout 20000\nBEGIN EXCLUSIVE;\n.output \(marker)\nSELECT 'locked';\n.output stdout\n")
            #expect(waitUntil(timeout: 30) { FileManager.default.fileExists(atPath: marker) }, "sqlite3 did not get the catalog's lock")
            unlink(marker)
        }
        func release() {
            helper.send("ROLLBACK;\n.quit\n")
            helper.stop()
        }
    }

    // MARK: 1. Devices

    @Test("ingest /dev/zero: refused at once as a character device, exit 1, nothing stored")
    func deviceByIngest() throws {
        let s = Scratch()
        let cli = CLI(home: s.home)
        let start = Date()
        let r = cli.run(["ingest", "/dev/zero"], timeout: 20)
        #expect(Date().timeIntervalSince(start) < 10, "a device must not be read forever")
        #expect(r.status == 1)
        #expect(r.stderr.contains("/dev/zero: not a regular file (character device)"), "\(r.stderr)")
        #expect(tmpEntries(s.home).isEmpty)
        let q = quarantine(cli)
        #expect(q.count == 1 && (q.first?["reason"] as? String)?.contains("character device") == true, "\(q)")
    }

    @Test("a character device made in the watched folder: quarantined by evidence run with its reason, service keeps going",
          .enabled(if: getuid() == 0, "needs root for mknod"))
    func deviceUnderRun() throws {
        let h = RunHarness()
        try h.start()
        #expect(mknod(h.drop + "/camera-dev", S_IFCHR | 0o600, dev_t((1 << 8) | 5)) == 0)   // 1:5, /dev/zero's numbers
        h.write("after.txt", Data("after".utf8))
        #expect(waitUntil(timeout: 15) { h.items() == 1 && quarantine(h.cli).count == 1 }, "\(h.log.suffix(2000))")
        let q = quarantine(h.cli).first
        #expect((q?["path"] as? String)?.hasSuffix("/camera-dev") == true)
        #expect((q?["reason"] as? String)?.contains("not a regular file (character device)") == true, "\(q ?? [:])")
        #expect(h.process?.isRunning == true)
        #expect(h.stop() == 0)
    }

    // MARK: 2. Hard links

    @Test("two hard links to one inode in the watched folder: one object, one item, both names as sources")
    func hardLink() throws {
        let h = RunHarness()
        try h.start()
        let a = h.write("first.bin", randomBytes(20_000))
        #expect(link(a, h.drop + "/second.bin") == 0)
        #expect(waitUntil(timeout: 15) { h.sources() == 2 }, "\(h.log.suffix(2000))")
        #expect(h.items() == 1)
        let sources = (show(h, "1")["sources"] as? [[String: Any]] ?? []).compactMap { $0["name"] as? String }.sorted()
        #expect(sources == ["first.bin", "second.bin"])
        let objects = CLI.exec(["find", h.home + "/objects/sha256", "-type", "f"]).stdout.split(separator: "\n")
        #expect(objects.count == 1, "\(objects)")
        #expect(h.stop() == 0)
    }

    // MARK: 3. Growing and vanishing files

    @Test("ingest of a file another process keeps appending to: named, 'changed while being read', exit 1, nothing stored")
    func growingByIngest() throws {
        let s = Scratch()
        let f = s.path + "/growing.bin"
        #expect(CLI.exec(["dd", "if=/dev/urandom", "of=\(f)", "bs=1M", "count=8", "status=none"]).status == 0)
        let writer = try Helper(["sh", "-c", "while :; do head -c 65536 /dev/urandom >> '\(f)'; done"])
        defer { writer.stop() }
        // The ingest must meet the file growing: it starts once the writer's first append is in.
        #expect(waitUntil(timeout: 30) {
            var st = stat()
            return stat(f, &st) == 0 && st.st_size > 8 << 20
        })
        let cli = CLI(home: s.home)
        let r = cli.run(["ingest", "--retries", "1", f], timeout: 30)
        #expect(r.status == 1)
        // Which change is seen first depends on where the append is when the read ends: the
        // size, or (an append under way, size not yet moved) the modification time.
        #expect(r.stderr.contains("\(norm(f)): changed while being read (size") || r.stderr.contains("\(norm(f)): changed while being read (modified"),
                "\(r.stderr)")
        #expect(r.stderr.contains("gave up after 1 re-read"), "\(r.stderr)")
        writer.stop()
        #expect((cli.run(["status", "--json"]).json as? [String: Any])?["items"] as? Int == 0)
        #expect(CLI.exec(["find", s.home + "/objects/sha256", "-type", "f"]).stdout.isEmpty)
        #expect(tmpEntries(s.home).isEmpty)
    }

    @Test("ingest of a file removed while it is read: named, 'vanished while being read', exit 1, nothing stored")
    func vanishingByIngest() throws {
        let s = Scratch()
        let f = s.path + "/vanishing.bin"
        #expect(CLI.exec(["dd", "if=/dev/urandom", "of=\(f)", "bs=1M", "count=64", "status=none"]).status == 0)
        let home = s.home
        // Unlink the source the moment the store's temp file appears, i.e. while it is copied.
        let removed = DispatchSemaphore(value: 0)
        nonisolated(unsafe) var unlinkedDuringCopy = false
        Thread.detachNewThread {
            let deadline = Date().addingTimeInterval(20)
            while Date() < deadline {
                if let names = try? FileManager.default.contentsOfDirectory(atPath: home + "/tmp"), !names.isEmpty {
                    unlinkedDuringCopy = unlink(f) == 0
                    break
                }
                usleep(500)
            }
            removed.signal()
        }
        let r = CLI(home: home).run(["ingest", f], timeout: 30)
        removed.wait()
        #expect(unlinkedDuringCopy, "the source was removed while the temp file existed")
        #expect(r.status == 1)
        #expect(r.stderr.contains("\(norm(f)): vanished while being read; not stored"), "\(r.stderr)")
        #expect(CLI.exec(["find", home + "/objects/sha256", "-type", "f"]).stdout.isEmpty)
        #expect(tmpEntries(home).isEmpty)
    }

    @Test("under evidence run a file that grows for a while is ingested once, complete, after it stops growing")
    func growingUnderRun() throws {
        // A settle window well above the writer's 50 ms pauses, even on a loaded machine.
        let h = RunHarness(settle: "1s")
        h.verbose = true
        try h.start()
        let f = h.drop + "/recording.bin"
        // Appends 64 KiB every 50 ms for about 2 s, as a slow capture device would.
        let writer = try Helper(["sh", "-c", "for i in $(seq 40); do head -c 65536 /dev/urandom >> '\(f)'; sleep 0.05; done"])
        writer.process.wait()
        let finalHash = sha256(f)
        #expect(waitUntil(timeout: 30) { h.items() == 1 }, "\(h.log.suffix(2000))")
        // Done with the file once its complete version was reported and every report of it was
        // handled: a second, partial item would be recorded by then.
        #expect(waitUntil(timeout: 60) { h.done(with: [f], size: 40 * 65536) }, "\(h.log.suffix(3000))")
        let st = h.status()
        #expect(st["items"] as? Int == 1 && st["sources"] as? Int == 1, "\(st)")
        let item = show(h, "1")["item"] as? [String: Any]
        #expect(item?["sha256"] as? String == finalHash)
        #expect(item?["size"] as? Int == 40 * 65536)
        #expect(h.stop() == 0)
    }

    // MARK: 4. Names under evidence run

    @Test("under evidence run: a non-UTF-8 name is quarantined with its bytes shown; a 255-byte name is stored as it is")
    func namesUnderRun() throws {
        let h = RunHarness()
        try h.start()
        let long = String(repeating: "n", count: 251) + ".bin"
        h.write(long, Data("a 255-byte name".utf8))
        let badName = Array((h.drop + "/bad-").utf8CString.dropLast()) + [CChar(bitPattern: 0xff), CChar(bitPattern: 0xfe), 0]
        let fd = open(badName, O_CREAT | O_WRONLY, 0o644)
        #expect(fd >= 0)
        _ = write(fd, "x", 1)
        close(fd)
        #expect(waitUntil(timeout: 15) { h.items() == 1 && quarantine(h.cli).count == 1 }, "\(h.log.suffix(2000))")
        let q = quarantine(h.cli).first
        #expect((q?["reason"] as? String)?.contains("file name is not valid UTF-8 (bytes: 6261642dfffe)") == true, "\(q ?? [:])")
        let sources = show(h, "1")["sources"] as? [[String: Any]] ?? []
        #expect(sources.first?["name"] as? String == long)
        #expect(h.process?.isRunning == true)
        #expect(h.stop() == 0)
    }

    // MARK: 5. Huge sparse file

    @Test("a sparse file twice the home's free space: refused before copying, needed vs free bytes named, exit 1")
    func hugeSparse() throws {
        let s = Scratch()
        let cli = CLI(home: s.home)
        #expect(cli.run(["status"]).status == 0)   // creates the home
        var fs = statvfs()
        #expect(statvfs(s.home, &fs) == 0)
        let size = 2 * Int64(fs.f_bavail) * Int64(fs.f_frsize)
        let f = s.path + "/sparse.img"
        #expect(CLI.exec(["truncate", "-s", String(size), f]).status == 0)
        let start = Date()
        let r = cli.run(["ingest", f], timeout: 30)
        #expect(Date().timeIntervalSince(start) < 10, "refused without reading")
        #expect(r.status == 1)
        #expect(r.stderr.contains("\(norm(f)): no space left on device for it in the store at \(norm(s.home)): needs \(size) bytes"), "\(r.stderr)")
        #expect(r.stderr.contains(" free; nothing was copied"))
        #expect(tmpEntries(s.home).isEmpty)
    }

    // MARK: 6. Corrupt media

    @Test("a truncated MP4 under evidence run with the sandbox notaries: notarized, done, the probe error shown by show")
    func corruptMedia() async throws {
        try await NotarizationCLITests().withSandbox { sandbox in
            let h = try NotarizationCLITests().harness(sandbox)
            try h.start()
            h.write("broken.mp4", FileManager.default.contents(atPath: CLI.samples + "/truncated.mp4")!)
            #expect(waitUntil(timeout: 30) { state(h, "1") == "done" }, "\(h.log.suffix(2000))")
            let s = show(h, "1")
            let media = (s["item"] as? [String: Any])?["media"] as? [String: Any]
            #expect((media?["probeError"] as? String)?.isEmpty == false, "\(media ?? [:])")
            #expect((s["proofs"] as? [[String: Any]])?.allSatisfy { $0["state"] as? String == "confirmed" } == true)
            let text = h.cli.run(["show", "1"]).stdout
            #expect(text.contains("media     unreadable media (\(media?["probeError"] as? String ?? "?"))"), "\(text)")
            #expect(h.stop() == 0)
        }
    }

    // MARK: 9. Locked catalog

    @Test("ingest while another process holds the catalog's write lock: names the catalog, 'locked by another process', exit 1; works once released")
    func lockedCatalogIngest() throws {
        let s = Scratch()
        let cli = CLI(home: s.home)
        #expect(cli.run(["ingest", s.file("first.txt", "first")]).status == 0)
        let second = s.file("second.txt", "second")
        let lock = try CatalogLock(s.home + "/catalog.sqlite")
        let r = cli.run(["ingest", second], timeout: 60)
        lock.release()
        #expect(r.status == 1)
        #expect(r.stderr.contains("\(norm(s.home))/catalog.sqlite: catalog is locked by another process"), "\(r.stderr)")
        #expect((cli.run(["status", "--json"]).json as? [String: Any])?["items"] as? Int == 1)
        let objects = CLI.exec(["find", s.home + "/objects/sha256", "-type", "f"]).stdout
        #expect(objects.split(separator: "\n").count == 1, "\(objects)")
        #expect(tmpEntries(s.home).isEmpty)
        #expect(cli.run(["log", "verify"]).status == 0)
        let again = cli.run(["ingest", second])
        #expect(again.status == 0, "\(again.stderr)")
    }

    @Test("evidence run with the catalog locked by another process: no crash, the dropped file waits and is ingested once released")
    func lockedCatalogRun() throws {
        let h = RunHarness()
        try h.start()
        let lock = try CatalogLock(h.home + "/catalog.sqlite")
        let f = h.write("during-lock.txt", Data("dropped while locked".utf8))
        // The service meets the lock when it records the file: past the catalog's busy timeout
        // (15 s) it logs the refusal, to try again later, and keeps running.
        #expect(waitUntil(timeout: 90) {
            h.log.split(separator: "\n").contains { $0.contains("during-lock.txt") && $0.contains("catalog is locked by another process") }
        }, "\(h.log.suffix(3000))")
        #expect(h.process?.isRunning == true)
        lock.release()
        #expect(waitUntil(timeout: 40) { h.items() == 1 }, "\(h.log.suffix(3000))")
        #expect(FileManager.default.fileExists(atPath: f))
        #expect(h.process?.isRunning == true)
        #expect(h.cli.run(["log", "verify"]).status == 0)
        #expect(h.stop() == 0)
    }

    // MARK: 10. Disk full under evidence run

    @Test("disk full in the store under evidence run: the file stays, the error is logged, no temp left; ingested after space is freed and SIGUSR1",
          .enabled(if: getuid() == 0, "needs root to mount a small tmpfs"))
    func diskFullUnderRun() throws {
        let h = RunHarness()
        let mnt = h.scratch.path + "/small"
        try FileManager.default.createDirectory(atPath: mnt, withIntermediateDirectories: true)
        #expect(CLI.exec(["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", mnt]).status == 0)
        defer { _ = CLI.exec(["umount", "-l", mnt]) }
        // The harness's home is a symlink into the small tmpfs.
        try FileManager.default.createDirectory(atPath: mnt + "/home", withIntermediateDirectories: true)
        #expect(symlink(mnt + "/home", h.home) == 0)
        let filler = mnt + "/filler"
        #expect(CLI.exec(["dd", "if=/dev/zero", "of=\(filler)", "bs=1M", "count=4", "status=none"]).status == 0)
        try h.start()
        let big = h.drop + "/big.bin"
        #expect(CLI.exec(["dd", "if=/dev/urandom", "of=\(big)", "bs=1M", "count=5", "status=none"]).status == 0)
        #expect(waitUntil(timeout: 15) { h.log.contains("big.bin: no space left on device") }, "\(h.log.suffix(2000))")
        #expect(FileManager.default.fileExists(atPath: big))
        #expect(tmpEntries(mnt + "/home").isEmpty)
        #expect(h.items() == 0)
        unlink(filler)
        kill(h.process!.pid, SIGUSR1)
        #expect(waitUntil(timeout: 30) { h.items() == 1 }, "\(h.log.suffix(2000))")
        #expect((show(h, "1")["item"] as? [String: Any])?["sha256"] as? String == sha256(big))
        #expect(tmpEntries(mnt + "/home").isEmpty)
        #expect(h.stop() == 0)
    }

    // MARK: 11. Awkward names to a provider

    @Test("awkward names archived to a sandbox provider: every remote path stays under the root, sanitized, uploaded once")
    func awkwardNamesToProvider() async throws {
        try await ProviderCLITests().withSandbox { sandbox in
            let h = try NotarizationCLITests().harness(sandbox, notaries: ["tsa"], ruleExtra: """
                archive = "vault"
                remote_path = "evidence/{rule}/{name}"
                """)
            try ProviderCLITests.Provider.dropbox.add(to: h, as: "vault", url: sandbox.baseURL.absoluteString)
            try h.start()
            let names = ["-leading-dash.bin", "a\\..\\b.bin", "x..foo", "new\nline.bin", "bell\u{7}tab\t.bin",
                         "invoice\u{202E}fdp.exe", "c1\u{85}\u{2066}iso.bin"]
            for (i, name) in names.enumerated() { h.write(name, randomBytes(1_000 + i)) }
            h.write("..foo", Data("a dotfile: a temp name, never taken".utf8))
            #expect(ProviderCLITests().waitDone(h, names.count, timeout: 60), "\(h.cli.run(["status"]).stdout)\(h.log.suffix(3000))")
            let uploads = ProviderCLITests().uploads(sandbox)
            let originals = uploads.keys.filter { !$0.hasSuffix(".json") && !$0.hasSuffix(".tsr") && !$0.hasSuffix(".ers") && !$0.hasSuffix(".pdf") }
            #expect(originals.count == names.count, "\(uploads.keys.sorted())")
            for key in uploads.keys {
                #expect(key.hasPrefix("dropbox:/evidence/cam/"), "\(key)")
                let rest = key.dropFirst("dropbox:/evidence/cam/".count)
                #expect(!rest.contains("/") && !rest.contains("\\") && rest != "..", "\(key)")
                #expect(!rest.unicodeScalars.contains { $0.properties.generalCategory == .control || $0.properties.generalCategory == .format },
                        "\(key.debugDescription)")
            }
            #expect(uploads.values.allSatisfy { $0 == 1 }, "\(uploads)")
            #expect(h.status()["items"] as? Int == names.count, "the dotfile is a temp name: not taken")
            #expect(h.stop() == 0)
        }
    }

    // MARK: 7. Misbehaving servers

    func misbehave(_ sandbox: SandboxProcess, _ prefix: String, _ mode: String, count: Int) {
        let r = CLI.exec(["curl", "-sf", "-X", "POST", "\(sandbox.baseURL.absoluteString)/_sandbox/misbehave?path=\(prefix)&mode=\(mode)&count=\(count)"])
        #expect(r.status == 0, "\(r.stderr)")
    }

    /// The item's jobs' last errors (while a job waits for its retry).
    func lastErrors(_ h: RunHarness, _ item: String) -> [String] {
        (show(h, item)["jobs"] as? [[String: Any]] ?? []).compactMap { $0["lastError"] as? String }
    }

    func peakMemory(_ pid: Int32) -> Int {
        let status = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
        let line = status.split(separator: "\n").first { $0.hasPrefix("VmHWM:") } ?? ""
        return (Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0) * 1024
    }

    @Test("QED answering garbage, HTML, a PNG or 65 MiB: the item waits with the error named in its job, completes once QED behaves; memory stays flat")
    func misbehavingQED() async throws {
        try await NotarizationCLITests().withSandbox { sandbox in
            let h = try NotarizationCLITests().harness(sandbox, notaries: ["qed"])
            try h.start()
            let cases: [(mode: String, named: String)] = [
                ("garbage", "the answer is not JSON (HTTP 200, content type application/json"),
                ("html", "the answer is not JSON (HTTP 200, content type text/html"),
                ("wrong-type", "the answer is not JSON (HTTP 200, content type image/png"),
                // "truncated" costs the HTTP retry loop's five attempts per job attempt here; it is
                // covered by QEDMisbehaviourTests and, end to end, by the provider test below.
                ("oversized", "response too large"),
            ]
            for (i, c) in cases.enumerated() {
                let id = String(i + 1)
                let before = peakMemory(h.process!.pid)
                misbehave(sandbox, "/v1/reports/", c.mode, count: 1000)
                h.write("\(c.mode).bin", randomBytes(3_000 + i))
                #expect(waitUntil(timeout: 30) { lastErrors(h, id).contains { $0.contains(c.named) } },
                        "\(c.mode): \(lastErrors(h, id)) \(h.log.suffix(1500))")
                #expect(lastErrors(h, id).allSatisfy { $0.hasPrefix("qed: ") }, "\(lastErrors(h, id))")
                if c.mode == "oversized" {
                    let grown = peakMemory(h.process!.pid) - before
                    #expect(grown < 16 << 20, "peak memory grew by \(grown) bytes for a 65 MiB answer")
                }
                misbehave(sandbox, "/v1/reports/", c.mode, count: 0)
                #expect(waitUntil(timeout: 30) { state(h, id) == "done" }, "\(c.mode): \(show(h, id)) \(h.log.suffix(1500))")
            }
            #expect(h.process?.isRunning == true)
            #expect(h.stop() == 0)
        }
    }

    @Test("a provider answering HTML, garbage or a cut body: the archive job waits with the error named, then archives once the provider behaves")
    func misbehavingProvider() async throws {
        try await ProviderCLITests().withSandbox { sandbox in
            let h = try NotarizationCLITests().harness(sandbox, notaries: ["tsa"], ruleExtra: "archive = \"vault\"\nremote_path = \"evidence/{name}\"")
            try ProviderCLITests.Provider.dropbox.add(to: h, as: "vault", url: sandbox.baseURL.absoluteString)
            try h.start()
            // The token endpoint first (nothing cached yet), then the API with a token in hand.
            let cases = [("/dropbox/api/oauth2/", "html", "token endpoint"), ("/dropbox/api/2/", "garbage", "an answer that cannot be read (application/json"),
                         ("/dropbox/content/", "truncated", "transfer closed with")]
            for (i, (prefix, mode, named)) in cases.enumerated() {
                let id = String(i + 1)
                misbehave(sandbox, prefix, mode, count: 1000)
                // The API case's file is large enough (1 MiB) to be looked at before it is sent: a
                // small one goes straight to the content host, and its answer carries the digest.
                h.write("p\(i).bin", randomBytes(mode == "garbage" ? (1 << 20) + i : 2_000 + i))
                #expect(waitUntil(timeout: 30) { lastErrors(h, id).contains { $0.hasPrefix("vault: ") && $0.contains(named) } },
                        "\(mode): \(lastErrors(h, id)) \(h.log.suffix(1500))")
                let errors = lastErrors(h, id)
                misbehave(sandbox, prefix, mode, count: 0)
                #expect(ProviderCLITests().waitDone(h, i + 1, timeout: 40), "\(mode): \(errors) \(show(h, id)["jobs"] ?? "")")
            }
            #expect(ProviderCLITests().uploads(sandbox).values.allSatisfy { $0 == 1 })
            #expect(h.stop() == 0)
        }
    }

    // MARK: 8. TLS

    /// A free TCP port on loopback (bound and released at once).
    func freePort() -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        addr.sin_port = 0
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, len) } }
        _ = withUnsafeMutablePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &len) } }
        return Int(UInt16(bigEndian: addr.sin_port))
    }

    /// A test CA and two server certificates it signed: one for 127.0.0.1, one for another host.
    func makeCertificates(in dir: String) {
        func ssl(_ args: [String]) {
            let r = CLI.exec(["openssl"] + args, cwd: dir)
            #expect(r.status == 0, "openssl \(args.first ?? ""): \(r.stderr)")
        }
        let ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
        ssl(["req", "-x509"] + ec + ["-keyout", "ca.key", "-out", "ca.pem", "-days", "2", "-subj", "/CN=evidence test CA"])
        for (name, san) in [("right", "IP:127.0.0.1"), ("wrong", "DNS:wrong.example")] {
            try? "subjectAltName=\(san)\n".write(toFile: dir + "/\(name).ext", atomically: true, encoding: .utf8)
            ssl(["req"] + ec + ["-keyout", "\(name).key", "-out", "\(name).csr", "-subj", "/CN=\(name)"])
            ssl(["x509", "-req", "-in", "\(name).csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial", "-days", "2",
                 "-extfile", "\(name).ext", "-out", "\(name).pem"])
            let bundle = (try? String(contentsOfFile: dir + "/\(name).pem", encoding: .utf8)) ?? ""
            let key = (try? String(contentsOfFile: dir + "/\(name).key", encoding: .utf8)) ?? ""
            try? (bundle + key).write(toFile: dir + "/\(name)-bundle.pem", atomically: true, encoding: .utf8)
        }
    }

    /// socat terminating TLS with `cert` in front of the sandbox; returns once it accepts.
    func tlsFront(cert: String, to sandbox: SandboxProcess) throws -> (Helper, Int) {
        let port = freePort()
        let front = try Helper(["socat", "OPENSSL-LISTEN:\(port),bind=127.0.0.1,reuseaddr,fork,cert=\(cert),verify=0",
                                "TCP:127.0.0.1:\(sandbox.port)"])
        #expect(waitUntil(timeout: 10) { CLI.exec(["bash", "-c", "exec 3<>/dev/tcp/127.0.0.1/\(port)"]).status == 0 })
        return (front, port)
    }

    @Test("TLS: an untrusted certificate is refused naming the problem and tls_ca_file; the CA in tls_ca_file makes it work; another host's certificate is refused even so")
    func untrustedTLS() async throws {
        try await ProviderCLITests().withSandbox { sandbox in
            let h = RunHarness()
            let certs = h.scratch.path + "/certs"
            try FileManager.default.createDirectory(atPath: certs, withIntermediateDirectories: true)
            makeCertificates(in: certs)
            let (right, rightPort) = try tlsFront(cert: certs + "/right-bundle.pem", to: sandbox)
            let (wrong, wrongPort) = try tlsFront(cert: certs + "/wrong-bundle.pem", to: sandbox)
            defer { right.stop(); wrong.stop() }
            let secrets = h.scratch.path + "/secrets"
            try FileManager.default.createDirectory(atPath: secrets, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            let account = { (port: Int) in ProviderCLITests.Provider.owncloud.account("https://127.0.0.1:\(port)", secrets: secrets) }
            h.configPath = h.scratch.path + "/evidence.toml"
            try """
                [archives.untrusted]
                \(account(rightPort))

                [archives.trusted]
                \(account(rightPort))
                tls_ca_file = "\(certs)/ca.pem"

                [archives.otherhost]
                \(account(wrongPort))
                tls_ca_file = "\(certs)/ca.pem"
                """.write(toFile: h.configPath!, atomically: true, encoding: .utf8)
            func check(_ name: String) -> CLI.Result { h.cli.run(["--config", h.configPath!, "accounts", "check", name]) }
            let untrusted = check("untrusted")
            #expect(untrusted.status == 1)
            let u = untrusted.stdout + untrusted.stderr
            #expect(u.contains("TLS verification failed") && u.contains("certificate"), "\(u)")
            #expect(u.contains("set tls_ca_file in [archives.untrusted]"), "\(u)")
            let trusted = check("trusted")
            #expect(trusted.status == 0, "\(trusted.stdout)\(trusted.stderr)")
            let other = check("otherhost")
            #expect(other.status == 1)
            let o = other.stdout + other.stderr
            #expect(o.contains("TLS verification failed") && o.contains("another host name") && o.contains("[archives.otherhost]"), "\(o)")
            #expect(!u.contains("sandbox-app-password") && !o.contains("sandbox-app-password"))
        }
    }
}
