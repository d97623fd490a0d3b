import EvidenceCore
import EvidencePipeline
import EvidencePortal
import Foundation
import Glibc
import Hummingbird
import HummingbirdTesting
import Logging
import Testing

/// The portal's `.tar` streams the original from the store: a download costs no copy of a large
/// original in the home's `tmp/`. Measured on a home of its own tmpfs, where the free space is
/// the home's alone.
@Suite("Portal: the .tar bundle streams the original from the store", .serialized)
struct BundleStreamTests {
    /// The lowest free space seen on a file system while polling.
    final class FreeSpaceWatch: @unchecked Sendable {
        private let lock = NSLock()
        private var lowest: Int64
        private var running = true
        let path: String

        init(_ path: String) {
            self.path = path
            lowest = Self.free(path)
        }

        static func free(_ path: String) -> Int64 {
            var fs = statvfs()
            guard statvfs(path, &fs) == 0 else { return -1 }
            return Int64(fs.f_bavail) * Int64(fs.f_frsize)
        }

        func start() {
            let thread = Thread { [self] in
                while lock.withLock({ running }) {
                    let now = Self.free(path)
                    lock.withLock { lowest = min(lowest, now) }
                    usleep(1_000)
                }
            }
            thread.start()
        }

        func stop() -> Int64 { lock.withLock { running = false; return lowest } }
    }

    @Test("a 50 MiB item's .tar downloads from a home whose disk could not hold a copy: the home's free space drops by less than 1 MiB while it is built and sent, and the tar passes sha256sum -c",
          .enabled(if: getuid() == 0, "needs root to mount a tmpfs"))
    func tarStreamsTheOriginal() async throws {
        let f = try PortalFixture()
        let mnt = f.dir + "/small"
        try FileManager.default.createDirectory(atPath: mnt, withIntermediateDirectories: true)
        try #require(try run(["mount", "-t", "tmpfs", "-o", "size=80m", "tmpfs", mnt]).status == 0)
        defer { _ = try? run(["umount", "-l", mnt]) }
        let home = try EvidenceHome(path: mnt + "/home")
        var bytes = [UInt8](repeating: 0, count: 50 << 20)
        var g = SystemRandomNumberGenerator()
        for i in stride(from: 0, to: bytes.count, by: 4096) { bytes[i] = UInt8.random(in: 0...255, using: &g) }
        let source = f.dir + "/drop/interview.mp4"
        _ = FileManager.default.createFile(atPath: source, contents: Data(bytes))
        guard case .ingested(let outcome) = Ingestor(home: home, actor: "test").ingest(path: source) else {
            Issue.record("ingest failed")
            return
        }
        let item = outcome.item
        let before = FreeSpaceWatch.free(mnt)
        #expect(before < 2 * item.size, "the home's disk must not hold two copies of the original for this test to mean anything")

        var logger = Logger(label: "portal-test")
        logger.logLevel = .warning
        let portal = Portal(home: home, options: .init(host: "127.0.0.1", port: 0,
                                                       auth: try PortalAuth(token: PortalFixture.token, user: PortalFixture.user,
                                                                            password: PortalFixture.password)))
        let watch = FreeSpaceWatch(mnt)
        watch.start()
        let tar = f.dir + "/bundle.tar"
        try await portal.makeApplication(logger: logger).test(.router) { client in
            try await client.execute(uri: "/items/\(item.id)/bundle.tar", method: .get, headers: PortalFixture.basic) { r in
                #expect(r.status == .ok, "\(String(buffer: r.body).prefix(500))")
                #expect(r.headers[.contentLength] == String(r.body.readableBytes))
                _ = FileManager.default.createFile(atPath: tar, contents: Data(buffer: r.body))
            }
        }
        let lowest = watch.stop()
        #expect(before - lowest < 1 << 20, "the home's disk lost \(before - lowest) bytes while the bundle was built and sent")
        let out = f.dir + "/out"
        try FileManager.default.createDirectory(atPath: out, withIntermediateDirectories: true)
        #expect(try run(["tar", "-xf", tar, "-C", out]).status == 0)
        let folder = out + "/" + BundleDownload.folderName(for: item)
        let sums = try run(["sha256sum", "-c", "SHA256SUMS"], cwd: folder)
        #expect(sums.status == 0 && sums.out.contains("original/interview.mp4: OK"), "\(sums.out)")
        #expect(try run(["sha256sum", folder + "/original/interview.mp4"]).out.hasPrefix(item.sha256.hex))
        #expect(BundleVerifier.isBundle(folder))
        #expect(try FileManager.default.contentsOfDirectory(atPath: home.store.tmpDir).isEmpty)
    }

    @Test("a stored original that no longer hashes to the item's SHA-256 cuts the .tar transfer before its end")
    func changedOriginalCutsTheTransfer() async throws {
        let f = try PortalFixture()
        let item = try f.ingest("clip.bin", Data(repeating: 1, count: 300_000))
        let object = f.home.localStore!.objectPath(item.sha256)
        #expect(chmod(object, 0o640) == 0)
        let fd = open(object, O_WRONLY)
        #expect(fd >= 0)
        #expect(pwrite(fd, "X", 1, 1000) == 1)
        close(fd)
        try await f.app().test(.router) { client in
            do {
                try await client.execute(uri: "/items/\(item.id)/bundle.tar", method: .get, headers: PortalFixture.basic) { r in
                    let complete = r.status == .ok && r.body.readableBytes == Int(r.headers[.contentLength] ?? "") ?? -1
                    #expect(!complete, "a complete archive was sent")
                }
            } catch {
                // The transfer was cut: what the client sees of it depends on the test client.
            }
        }
    }
}
