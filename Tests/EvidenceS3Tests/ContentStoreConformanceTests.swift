import EvidenceCore
import EvidenceS3
import EvidenceStore
import Foundation
import Glibc
import Testing
import EvidenceTesting

/// What the pipeline, the CLI and the portal may rely on of any `ContentStore`, checked against
/// each kind: the local object store and the S3 store on `moto_server`. A new store kind is
/// added to `StoreKind` and passes the same suite (as the archive providers' conformance suite).
@Suite("ContentStore conformance: local and S3")
struct ContentStoreConformanceTests {
    enum StoreKind: String, CaseIterable, CustomStringConvertible {
        case local, s3
        var description: String { rawValue }
    }

    /// A fresh store of `kind` in its own folder (and bucket).
    func make(_ kind: StoreKind, _ dir: TempDirectory) throws -> any ContentStore {
        switch kind {
        case .local:
            return try ObjectStore(home: dir.path + "/home")
        case .s3:
            let server = try #require(S3Server.shared, "moto_server: \(S3Server.unavailable)")
            let bucket = try server.makeBucket(objectLock: false)
            let endpoint = S3Endpoint(url: server.endpoint, bucket: bucket, region: server.region,
                                      accessKey: server.accessKey, secretKey: server.secretKey)
            return try S3ObjectStore(home: dir.path + "/home", settings: S3StoreSettings(endpoint: endpoint))
        }
    }

    func file(_ dir: TempDirectory, _ name: String, _ data: Data) -> String { dir.write(name, data) }

    @Test("ingest stores the bytes under their SHA-256; the same content again is no new object; read, size, hash and open agree",
          arguments: StoreKind.allCases)
    func ingestAndRead(_ kind: StoreKind) async throws { try await offPool {
        let dir = TempDirectory("conformance")
        let store = try make(kind, dir)
        for (name, data) in [("empty", Data()), ("one", Data([0x41])), ("some", S3StoreTests.random(300_000))] {
            let path = file(dir, name, data)
            let first = try store.ingest(path: path)
            #expect(first.digest == SHA256Hasher.hash(data), "\(kind) \(name)")
            #expect(first.size == Int64(data.count))
            #expect(first.newObject)
            let again = try store.ingest(path: file(dir, name + "-copy", data))
            #expect(again.digest == first.digest && !again.newObject, "\(kind) \(name): stored once")
            #expect(try store.read(first.digest) == data)
            #expect(try store.objectSize(first.digest) == Int64(data.count))
            #expect(store.contains(first.digest))
            let hashed = try store.hashObject(first.digest)
            #expect(hashed.digest == first.digest && hashed.size == Int64(data.count))
            let (fd, stat) = try store.openObject(first.digest)
            defer { close(fd) }
            #expect(stat.size == Int64(data.count))
            var back = Data(count: data.count)
            let got = back.withUnsafeMutableBytes { pread(fd, $0.baseAddress, data.count, 0) }
            #expect(got == data.count && back == data, "\(kind) \(name): the opened object holds the bytes")
            #expect(store.location(of: first.digest).contains(first.digest.hex))
        }
    } }

    @Test("put stores data as ingest does; copyObject and withLocalCopy hand out the same bytes", arguments: StoreKind.allCases)
    func putCopyAndLocalCopy(_ kind: StoreKind) async throws { try await offPool {
        let dir = TempDirectory("conformance")
        let store = try make(kind, dir)
        let data = Data("a receipt\n".utf8)
        let (digest, new) = try store.put(data)
        #expect(digest == SHA256Hasher.hash(data) && new)
        #expect(try store.put(data).newObject == false)
        let target = dir.path + "/exported"
        let copied = try store.copyObject(digest, to: target)
        #expect(copied.digest == digest && copied.size == Int64(data.count))
        #expect(FileManager.default.contents(atPath: target) == data)
        let local = try store.withLocalCopy(of: digest) { FileManager.default.contents(atPath: $0) }
        #expect(local == data)
    } }

    @Test("an object that is not there: no size, not contained, and reading it is an error naming it", arguments: StoreKind.allCases)
    func missingObject(_ kind: StoreKind) async throws { try await offPool {
        let dir = TempDirectory("conformance")
        let store = try make(kind, dir)
        let absent = SHA256Hasher.hash(Data("never stored".utf8))
        #expect(try store.objectSize(absent) == nil)
        #expect(!store.contains(absent))
        do {
            _ = try store.read(absent)
            Issue.record("\(kind): reading a missing object succeeded")
        } catch {
            #expect("\(error)".contains(absent.hex), "\(kind): \(error)")
        }
        #expect(throws: StoreError.self) { _ = try store.openObject(absent) }
    } }

    @Test("sources it must refuse: a missing file, a folder, a FIFO, a link unless followed; nothing is stored", arguments: StoreKind.allCases)
    func refusedSources(_ kind: StoreKind) async throws { try await offPool {
        let dir = TempDirectory("conformance")
        let store = try make(kind, dir)
        let missing = dir.path + "/missing"
        #expect(throws: StoreError.notFound(path: missing)) { _ = try store.ingest(path: missing) }
        let folder = dir.path + "/folder"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        #expect(throws: StoreError.self) { _ = try store.ingest(path: folder) }
        let fifo = dir.path + "/fifo"
        #expect(mkfifo(fifo, 0o600) == 0)
        #expect(throws: StoreError.self) { _ = try store.ingest(path: fifo) }
        let target = file(dir, "target", Data("linked".utf8))
        let link = dir.path + "/link"
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: target)
        #expect(throws: StoreError.symlink(path: link)) { _ = try store.ingest(path: link) }
        #expect(store.check(rehash: true).objects == 0, "\(kind): nothing stored by a refusal")
        let followed = try store.ingest(path: link, followSymlinks: true)
        #expect(try store.read(followed.digest) == Data("linked".utf8))
    } }

    @Test("check counts every object and finds no problem in a store only the store wrote", arguments: StoreKind.allCases)
    func checkOfACleanStore(_ kind: StoreKind) async throws { try await offPool {
        let dir = TempDirectory("conformance")
        let store = try make(kind, dir)
        for i in 0..<5 { _ = try store.put(Data("object \(i)".utf8)) }
        let report = store.check(rehash: true)
        #expect(report.objects == 5, "\(kind)")
        #expect(report.problems.isEmpty, "\(kind): \(report.problems)")
    } }
}
