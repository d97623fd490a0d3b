import EvidenceCore
import EvidenceS3
import EvidenceStore
import EvidenceTesting
import Foundation
import Glibc
import Synchronization
import Testing

/// The S3 store against a real S3 server (moto), with boto3 as the independent witness.
/// Each test runs its blocking store calls on a thread of its own (`offPool`), so they hold
/// none of the cooperative pool's threads. One at a time: moto's `If-None-Match: *` is a check
/// then a write, not one step, and with this suite's tests side by side on the one server six
/// nodes opening a bucket together once got two store ids (real S3 makes the write atomic).
@Suite struct S3StoreTests {
    let server: S3Server
    let dir: TempDirectory

    init() async throws {
        server = try await offPool { try #require(S3Server.shared, "moto_server: \(S3Server.unavailable)") }
        dir = TempDirectory("s3")
    }

    func store(bucket: String, lock: S3ObjectLock? = nil, small: Bool = false, listPageSize: Int = 1000) throws -> S3ObjectStore {
        var settings = S3StoreSettings(endpoint: S3Endpoint(url: server.endpoint, bucket: bucket, region: server.region,
                                                            accessKey: server.accessKey, secretKey: server.secretKey),
                                       objectLock: lock)
        if small {
            settings.singlePutLimit = 5 << 20
            settings.partSize = 5 << 20
            settings.rangeSize = 1 << 20
        }
        settings.listPageSize = listPageSize
        return try S3ObjectStore(home: dir.path + "/home", settings: settings)
    }

    func write(_ name: String, _ data: Data) throws -> String {
        let path = dir.path + "/" + name
        try data.write(to: URL(fileURLWithPath: path))
        return path
    }

    /// `count` random bytes (12 MiB by `UInt8.random` took seconds in a debug build).
    static func random(_ count: Int) -> Data {
        var g = SystemRandomNumberGenerator()
        var data = Data(count: (count + 7) / 8 * 8)
        data.withUnsafeMutableBytes { raw in
            for i in 0..<raw.count / 8 { raw.storeBytes(of: g.next(), toByteOffset: i * 8, as: UInt64.self) }
        }
        return data.prefix(count)
    }

    @Test func ingestStoresTheBytesUnderTheirDigestAndASecondIngestSendsNothing() async throws { try await offPool {
        let bucket = try server.makeBucket(objectLock: false)
        let s = try store(bucket: bucket)
        let data = Self.random(300_000)
        let path = try write("a.bin", data)
        let first = try s.ingest(path: path)
        #expect(first.digest == SHA256Hasher.hash(data))
        #expect(first.size == 300_000)
        #expect(first.newObject)
        let second = try s.ingest(path: path)
        #expect(!second.newObject)
        #expect(try s.read(first.digest) == data)
        #expect(try s.objectSize(first.digest) == 300_000)
        let listed = try server.boto3("print(s3.get_object(Bucket=args[0], Key=args[1])['Body'].read() == open(args[2], 'rb').read())",
                                      [bucket, S3ObjectStore.key(first.digest), path])
        #expect(listed.trimmingCharacters(in: .whitespacesAndNewlines) == "True")
    } }

    @Test func openObjectGivesAVerifiedLocalCopyReadInRanges() async throws { try await offPool {
        let bucket = try server.makeBucket(objectLock: false)
        let s = try store(bucket: bucket, small: true)
        let data = Self.random(3 << 20 + 17)
        let r = try s.ingest(path: try write("b.bin", data))
        let (fd, st) = try s.openObject(r.digest)
        defer { close(fd) }
        #expect(st.size == Int64(data.count))
        let copied = try FileHasher.hash(fd: fd, path: "copy")
        #expect(copied.digest == r.digest)
        #expect(try s.hashObject(r.digest).digest == r.digest)
        let target = dir.path + "/exported.bin"
        let exported = try s.copyObject(r.digest, to: target)
        #expect(exported.digest == r.digest)
        #expect(try Data(contentsOf: URL(fileURLWithPath: target)) == data)
    } }

    @Test func aFileAboveThePartSizeGoesInAMultipartUploadWithAChecksumPerPart() async throws { try await offPool {
        let bucket = try server.makeBucket(objectLock: false)
        let s = try store(bucket: bucket, small: true)
        let data = Self.random(12 << 20 + 5)
        let r = try s.ingest(path: try write("big.bin", data))
        #expect(r.newObject)
        // The ETag of a multipart object ends in -<parts>; its checksum is the checksum of the parts' checksums.
        let out = try server.boto3("""
            h = s3.head_object(Bucket=args[0], Key=args[1], ChecksumMode='ENABLED')
            print(h['ETag'].strip('"').split('-')[-1], h['ContentLength'])
            """, [bucket, S3ObjectStore.key(r.digest)])
        #expect(out.trimmingCharacters(in: .whitespacesAndNewlines) == "3 \(data.count)")
        // The object's checksum is S3's composite of the parts' SHA-256 checksums we sent, as
        // boto3 computes it from the file itself.
        let composite = try server.boto3("""
            import hashlib, base64
            data = open(args[2], 'rb').read()
            parts = b''.join(hashlib.sha256(data[i:i + (5 << 20)]).digest() for i in range(0, len(data), 5 << 20))
            want = base64.b64encode(hashlib.sha256(parts).digest()).decode()
            got = s3.get_object_attributes(Bucket=args[0], Key=args[1], ObjectAttributes=['Checksum'])['Checksum']['ChecksumSHA256']
            print(got.split('-')[0] == want)
            """, [bucket, S3ObjectStore.key(r.digest), dir.path + "/big.bin"])
        #expect(composite.trimmingCharacters(in: .whitespacesAndNewlines) == "True")
        #expect(try s.hashObject(r.digest).digest == SHA256Hasher.hash(data))
        #expect(s.check(rehash: true).problems.isEmpty)
    } }

    @Test func theServerHoldsTheSHA256ChecksumWeSentAndTheRetentionConfigured() async throws { try await offPool {
        let bucket = try server.makeBucket(objectLock: true)
        let s = try store(bucket: bucket, lock: S3ObjectLock(mode: .governance, retain: .years(7)))
        let data = Data("locked evidence".utf8)
        let r = try s.ingest(path: try write("c.txt", data))
        let out = try server.boto3("""
            h = s3.head_object(Bucket=args[0], Key=args[1], ChecksumMode='ENABLED')
            print(h.get('ChecksumSHA256'), h.get('ObjectLockMode'), h['ObjectLockRetainUntilDate'].year)
            """, [bucket, S3ObjectStore.key(r.digest)])
        let year = Calendar(identifier: .gregorian).component(.year, from: Date()) + 7
        #expect(out.trimmingCharacters(in: .whitespacesAndNewlines)
                == "\(Data(Hex.decode(r.digest.hex)!).base64EncodedString()) GOVERNANCE \(year)")
    } }

    @Test func aMultipartObjectCarriesTheRetentionToo() async throws { try await offPool {
        let bucket = try server.makeBucket(objectLock: true)
        let s = try store(bucket: bucket, lock: S3ObjectLock(mode: .compliance, retain: .years(2)), small: true)
        let r = try s.ingest(path: try write("big-locked.bin", Self.random(6 << 20)))
        let out = try server.boto3("""
            h = s3.head_object(Bucket=args[0], Key=args[1])
            print(h.get('ObjectLockMode'), h['ObjectLockRetainUntilDate'].year if 'ObjectLockRetainUntilDate' in h else None)
            """, [bucket, S3ObjectStore.key(r.digest)])
        let year = Calendar(identifier: .gregorian).component(.year, from: Date()) + 2
        #expect(out.trimmingCharacters(in: .whitespacesAndNewlines) == "COMPLIANCE \(year)")
    } }

    @Test func contentAlreadyInTheBucketWithoutRetentionGetsItWhenTheStoreHasObjectLock() async throws { try await offPool {
        let bucket = try server.makeBucket(objectLock: true)
        let data = Data("written before object_lock was configured".utf8)
        let path = try write("early.txt", data)
        _ = try store(bucket: bucket).ingest(path: path)
        let locked = try store(bucket: bucket, lock: S3ObjectLock(mode: .governance, retain: .seconds(86_400)))
        #expect(try !locked.ingest(path: path).newObject)
        let out = try server.boto3("print(s3.head_object(Bucket=args[0], Key=args[1]).get('ObjectLockMode'))",
                                   [bucket, S3ObjectStore.key(SHA256Hasher.hash(data))])
        #expect(out.trimmingCharacters(in: .whitespacesAndNewlines) == "GOVERNANCE")
    } }

    @Test func anUploadTheServerRefusesIsNeverReportedStored() async throws { try await offPool {
        let bucket = try server.makeBucket(objectLock: false)
        // Retention asked of a bucket without Object Lock: the server refuses the PUT.
        let s = try store(bucket: bucket, lock: S3ObjectLock(mode: .compliance, retain: .seconds(60)))
        let data = Self.random(1_000)
        let key = S3ObjectStore.key(SHA256Hasher.hash(data))
        #expect {
            _ = try s.ingest(path: try write("refused.bin", data))
        } throws: { error in
            guard case StoreError.remote(let path, _) = error else { return false }
            return path == "s3://\(bucket)/\(key)"
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path + "/home/tmp").isEmpty, "the spool is gone")
        let listed = try server.boto3("print(s3.list_objects_v2(Bucket=args[0]).get('KeyCount'))", [bucket])
        #expect(listed.trimmingCharacters(in: .whitespacesAndNewlines) == "0")
    } }

    @Test func deletingALockedVersionIsRefusedByTheServer() async throws { try await offPool {
        let bucket = try server.makeBucket(objectLock: true)
        let s = try store(bucket: bucket, lock: S3ObjectLock(mode: .compliance, retain: .seconds(86_400)))
        let r = try s.put(Data("receipt".utf8))
        let out = try server.boto3("""
            v = s3.head_object(Bucket=args[0], Key=args[1])['VersionId']
            try:
                s3.delete_object(Bucket=args[0], Key=args[1], VersionId=v)
                print('deleted')
            except Exception as e:
                print('refused', e.response['Error']['Code'])
            """, [bucket, S3ObjectStore.key(r.digest)])
        #expect(out.hasPrefix("refused"))
        #expect(try s.read(r.digest) == Data("receipt".utf8))
    } }

    @Test func legalHoldIsSetAndClearedPerObject() async throws { try await offPool {
        let bucket = try server.makeBucket(objectLock: true)
        let s = try store(bucket: bucket, lock: S3ObjectLock(mode: .governance, retain: .seconds(3600)))
        let r = try s.put(Data("hold me".utf8))
        #expect(try s.legalHold(r.digest) == false)
        try s.setLegalHold(r.digest, on: true)
        let script = "print(s3.get_object_legal_hold(Bucket=args[0], Key=args[1])['LegalHold']['Status'])"
        #expect(try server.boto3(script, [bucket, S3ObjectStore.key(r.digest)]).hasPrefix("ON"))
        #expect(try s.legalHold(r.digest))
        try s.setLegalHold(r.digest, on: false)
        #expect(try server.boto3(script, [bucket, S3ObjectStore.key(r.digest)]).hasPrefix("OFF"))
    } }

    @Test func anObjectOverwrittenInTheBucketIsRefusedNamingItsKey() async throws { try await offPool {
        let bucket = try server.makeBucket(objectLock: false)
        let s = try store(bucket: bucket, small: true)
        let r = try s.ingest(path: try write("d.bin", Self.random(2 << 20)))
        let key = S3ObjectStore.key(r.digest)
        try server.boto3("s3.put_object(Bucket=args[0], Key=args[1], Body=b'x' * (2 << 20))", [bucket, key])
        #expect {
            _ = try s.read(r.digest)
        } throws: { error in
            guard case StoreError.objectCorrupt(let path, _) = error else { return false }
            return path == "s3://\(bucket)/\(key)"
        }
        #expect(throws: StoreError.self) { _ = try s.openObject(r.digest) }
        #expect(try s.hashObject(r.digest).digest != r.digest)
        let report = s.check(rehash: true)
        #expect(report.problems.map(\.kind) == [.hashMismatch])
        #expect(report.problems.first?.path == "s3://\(bucket)/\(key)")
    } }

    @Test func aStrayKeyBelowTheObjectsIsReportedByCheck() async throws { try await offPool {
        let bucket = try server.makeBucket(objectLock: false)
        let s = try store(bucket: bucket)
        _ = try s.put(Data("fine".utf8))
        try server.boto3("s3.put_object(Bucket=args[0], Key='sha256/ab/cd/not-a-digest', Body=b'?')", [bucket])
        let report = s.check(rehash: false)
        #expect(report.objects == 1)
        #expect(report.problems.map(\.kind) == [.strayFile])
        #expect(report.problems.first?.path == "s3://\(bucket)/sha256/ab/cd/not-a-digest")
    } }

    /// Pages of 2 keys, as S3's of 1,000: 7 keys take 4 pages, the last one short. (It put
    /// 1,003 keys with the default page size: 24 s of the S3 pass, for the same code path.)
    @Test func checkFollowsContinuationTokensAcrossPages() async throws { try await offPool {
        let bucket = try server.makeBucket(objectLock: false)
        let s = try store(bucket: bucket, listPageSize: 2)
        try server.boto3("""
            import hashlib
            for i in range(7):
                b = str(i).encode(); h = hashlib.sha256(b).hexdigest()
                s3.put_object(Bucket=args[0], Key='sha256/%s/%s/%s' % (h[:2], h[2:4], h), Body=b)
            """, [bucket])
        let report = s.check(rehash: false)
        #expect(report.objects == 7)
        #expect(report.problems.isEmpty)
    } }

    @Test func theSourceRulesAreTheLocalStores() async throws { try await offPool {
        let bucket = try server.makeBucket(objectLock: false)
        let s = try store(bucket: bucket)
        let target = try write("target.txt", Data("t".utf8))
        let link = dir.path + "/link.txt"
        symlink(target, link)
        #expect(throws: StoreError.symlink(path: link)) { _ = try s.ingest(path: link) }
        #expect(throws: StoreError.isDirectory(path: dir.path)) { _ = try s.ingest(path: dir.path) }
        #expect(try s.ingest(path: link, followSymlinks: true).digest == SHA256Hasher.hash(Data("t".utf8)))
        // Nothing left behind in tmp/ by refusals; the spool of the ingest is used by withLocalCopy.
        let digest = SHA256Hasher.hash(Data("t".utf8))
        #expect(try s.withLocalCopy(of: digest) { try? Data(contentsOf: URL(fileURLWithPath: $0)) } == Data("t".utf8))
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path + "/home/tmp").isEmpty)
    } }

    @Test func theStoreIdentityIsWrittenOnceInTheBucket() async throws { try await offPool {
        let bucket = try server.makeBucket(objectLock: true)
        let a = try store(bucket: bucket, lock: S3ObjectLock(mode: .governance, retain: .seconds(60)))
        let b = try store(bucket: bucket)
        let id = try a.storeID()
        #expect(try b.storeID() == id)
        let other = try store(bucket: try server.makeBucket(objectLock: false))
        #expect(try other.storeID() != id)
    } }

    @Test func nodesOpeningANewBucketTogetherAgreeOnOneStoreIdentity() async throws { try await offPool {
        let bucket = try server.makeBucket(objectLock: false)
        let stores = try (0..<6).map { _ in try store(bucket: bucket) }
        let ids = Mutex<[String]>([])
        DispatchQueue.concurrentPerform(iterations: stores.count) { i in
            if let id = try? stores[i].storeID() { ids.withLock { $0.append(id) } }
        }
        let all = ids.withLock { $0 }
        #expect(all.count == stores.count && Set(all).count == 1, "\(all)")
        let stored = try server.boto3("print(s3.get_object(Bucket=args[0], Key='evidence/store-id')['Body'].read().decode().strip())", [bucket])
        #expect(stored.trimmingCharacters(in: .whitespacesAndNewlines) == all.first)
    } }

    @Test func printingTheSettingsNeverShowsTheKeys() async throws { try await offPool {
        let settings = S3StoreSettings(endpoint: S3Endpoint(url: "https://s3.example", bucket: "b-1", region: "eu-west-1",
                                                            accessKey: "AKIAPRINTED", secretKey: "printed-secret"))
        for text in ["\(settings)", String(reflecting: settings), "\(settings.endpoint)", String(reflecting: [settings])] {
            #expect(!text.contains("printed-secret") && !text.contains("AKIAPRINTED"), "\(text)")
        }
    } }

    @Test func aFailureNamesTheBucketButNeverTheKeys() async throws { try await offPool {
        var settings = S3StoreSettings(endpoint: S3Endpoint(url: "http://127.0.0.1:1", bucket: "nowhere", region: "us-east-1",
                                                            accessKey: "AKIDSECRETACCESS", secretKey: "very-secret-key"))
        settings.rangeSize = 1 << 20
        let s = try S3ObjectStore(home: dir.path + "/home", settings: settings)
        do {
            _ = try s.put(Data("x".utf8))
            Issue.record("no error")
        } catch {
            #expect("\(error)".contains("s3://nowhere"))
            #expect(!"\(error)".contains("very-secret-key"))
            #expect(!"\(error)".contains("AKIDSECRETACCESS"))
        }
    } }

    @Test func aBucketOutOfReachIsNeverTakenForAMissingObject() async throws { try await offPool {
        // objectSize said nil ("missing") for any failure: fsck reported objects missing while
        // the server was down, and the archive plan left out a proof receipt it could not HEAD.
        let s = try store(bucket: try server.makeBucket(objectLock: false))
        let stored = try s.put(Data("receipt".utf8)).digest
        #expect(try s.objectSize(stored) == 7)
        #expect(try s.objectSize(SHA256Hasher.hash(Data("never stored".utf8))) == nil)
        var settings = S3StoreSettings(endpoint: S3Endpoint(url: "http://127.0.0.1:1", bucket: "nowhere", region: "us-east-1",
                                                            accessKey: "AKIDSECRETACCESS", secretKey: "very-secret-key"))
        settings.rangeSize = 1 << 20
        let down = try S3ObjectStore(home: dir.path + "/home-down", settings: settings)
        #expect(throws: StoreError.self) { _ = try down.objectSize(stored) }
        #expect(!down.contains(stored))
    } }
}

/// Against a server that authenticates every request and verifies its SigV4 signature: what
/// libcurl signs (headers, payload hash, query) is what an S3 service checks.
@Suite struct S3SignatureTests {
    @Test func everyRequestOfTheStoreIsSignedAsTheServerVerifies() async throws { try await offPool {
        let server = try #require(S3Server.verifying, "moto_server: \(S3Server.unavailable)")
        let dir = TempDirectory("s3-sig")
        let bucket = try server.makeBucket(objectLock: true)
        var settings = S3StoreSettings(endpoint: S3Endpoint(url: server.endpoint, bucket: bucket, region: server.region,
                                                            accessKey: server.accessKey, secretKey: server.secretKey),
                                       objectLock: S3ObjectLock(mode: .governance, retain: .seconds(3600)))
        settings.singlePutLimit = 5 << 20
        settings.partSize = 5 << 20
        settings.rangeSize = 1 << 20
        let s = try S3ObjectStore(home: dir.path + "/home", settings: settings)
        let id = try s.storeID()
        #expect(try s.storeID() == id)
        let small = try s.put(Data("signed".utf8))
        #expect(try s.read(small.digest) == Data("signed".utf8))
        let big = dir.write("big.bin", S3StoreTests.random(11 << 20))
        let r = try s.ingest(path: big)
        #expect(try s.hashObject(r.digest).digest == r.digest)
        try s.setLegalHold(r.digest, on: true)
        #expect(try s.legalHold(r.digest))
        try s.setLegalHold(r.digest, on: false)
        #expect(try s.bucketState().objectLockEnabled)
        let report = s.check(rehash: true)
        #expect(report.objects == 2 && report.problems.isEmpty, "\(report.problems)")
    } }

    @Test func aWrongSecretKeyIsRefusedByTheServerAndNeverQuoted() async throws { try await offPool {
        let server = try #require(S3Server.verifying, "moto_server: \(S3Server.unavailable)")
        let dir = TempDirectory("s3-sig")
        let bucket = try server.makeBucket(objectLock: false)
        let s = try S3ObjectStore(home: dir.path + "/home", settings: S3StoreSettings(endpoint: S3Endpoint(
            url: server.endpoint, bucket: bucket, region: server.region, accessKey: server.accessKey, secretKey: "not-the-secret-key")))
        do {
            _ = try s.put(Data("x".utf8))
            Issue.record("a request signed with the wrong key was accepted")
        } catch {
            #expect("\(error)".contains("403"), "\(error)")
            #expect(!"\(error)".contains("not-the-secret-key"))
        }
    } }
}

/// HTTPS with a private CA: trusted only through `tls_ca_file`; verification is never off.
@Suite struct S3TLSTests {
    @Test func anHTTPSEndpointIsTrustedThroughTheConfiguredCAAndOnlySo() async throws { try await offPool {
        let server = try #require(S3Server.tls, "moto_server: \(S3Server.unavailable)")
        let dir = TempDirectory("s3-tls")
        let bucket = try server.makeBucket(objectLock: false)
        func store(ca: String?) throws -> S3ObjectStore {
            try S3ObjectStore(home: dir.path + "/home", settings: S3StoreSettings(endpoint: S3Endpoint(
                url: server.endpoint, bucket: bucket, region: server.region, accessKey: server.accessKey, secretKey: server.secretKey,
                caFile: ca)))
        }
        #expect(server.endpoint.hasPrefix("https://"))
        let trusted = try store(ca: server.caFile)
        let r = try trusted.put(Data("over TLS".utf8))
        #expect(try trusted.read(r.digest) == Data("over TLS".utf8))
        do {
            _ = try store(ca: nil).put(Data("refused".utf8))
            Issue.record("a certificate of an unknown CA was accepted")
        } catch {
            #expect("\(error)".contains("s3://\(bucket)") && "\(error)".contains("tls_ca_file"), "\(error)")
        }
    } }
}
