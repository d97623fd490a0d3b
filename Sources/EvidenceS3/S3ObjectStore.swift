import EvidenceCore
import EvidenceStore
import Foundation
import Glibc
import Synchronization

/// Retention written on every object stored, with S3 Object Lock.
public struct S3ObjectLock: Sendable, Equatable {
    public enum Mode: String, Sendable, CaseIterable {
        case governance, compliance
        var header: String { rawValue.uppercased() }
    }
    public enum Retain: Sendable, Equatable {
        /// Calendar years (UTC).
        case years(Int)
        case seconds(Double)
    }
    public var mode: Mode
    public var retain: Retain

    public init(mode: Mode, retain: Retain) {
        self.mode = mode
        self.retain = retain
    }

    /// When retention written now ends.
    public func retainUntil(from now: Date = Date()) -> Date {
        switch retain {
        case .seconds(let s): return now.addingTimeInterval(s)
        case .years(let y):
            var calendar = Calendar(identifier: .gregorian)
            calendar.timeZone = TimeZone(identifier: "UTC")!
            return calendar.date(byAdding: .year, value: y, to: now) ?? now.addingTimeInterval(Double(y) * 365.25 * 86_400)
        }
    }
}

/// How an `S3ObjectStore` is set up: the bucket, the retention, and the transfer sizes.
public struct S3StoreSettings: Sendable, Equatable {
    public var endpoint: S3Endpoint
    public var objectLock: S3ObjectLock?
    /// Objects up to this size go in one PUT; larger ones in a multipart upload.
    public var singlePutLimit: Int64 = 64 << 20
    /// The size of every part but the last (S3's minimum is 5 MiB).
    public var partSize: Int64 = 32 << 20
    /// Reads are ranged GETs of this many bytes.
    public var rangeSize: Int = 8 << 20
    /// Keys asked for per listing page (S3's most, and default, is 1,000).
    public var listPageSize: Int = 1000

    public init(endpoint: S3Endpoint, objectLock: S3ObjectLock? = nil) {
        self.endpoint = endpoint
        self.objectLock = objectLock
    }
}

/// The content-addressed store in an S3-compatible bucket (AWS S3, MinIO, Ceph RGW; moto in the
/// tests): objects at `sha256/ab/cd/<hex>` (the local store's former layout; a bucket has no folders to make).
///
/// - Ingest reads the source once under the local store's rules (`SourceSpool`), hashing it into
///   a spool in the home's `tmp/` (the key needs the digest before the upload starts), then asks
///   `HEAD` (an object of the right size is not sent again) and uploads: one `PUT` up to
///   `singlePutLimit`, else a multipart upload whose parts are streamed from the spool. Every
///   request carries `x-amz-checksum-sha256` of its bytes (the whole object, or the part), so
///   the server recomputes and refuses what it did not receive intact; with Object Lock, every
///   object is written with its retention (`x-amz-object-lock-mode`,
///   `x-amz-object-lock-retain-until-date`). The ingest returns only after the server's 200 for
///   the complete object.
/// - Reads are ranged GETs, hashed as they arrive; `openObject` writes them to an unlinked temp
///   file in `tmp/` and refuses the object, naming its key, when the bytes do not hash to the key:
///   whoever overwrote a key in the bucket gets a refusal, never their bytes passed on.
/// - The store's identity is `evidence/store-id` in the bucket, written once (`If-None-Match: *`),
///   so a catalog shared by several nodes refuses a node configured with another bucket.
public final class S3ObjectStore: ContentStore, Sendable {
    public let settings: S3StoreSettings
    public let home: String
    public let tmpDir: String
    let client: S3Client
    let tmpFolder: BeneathRoot
    /// Spools of this process's recent ingests, for `withLocalCopy` right after (the media probe):
    /// the bytes just hashed, without downloading them again. At most `keptLimit`.
    private let kept = Mutex<[(SHA256Digest, SourceSpool)]>([])
    private static let keptLimit = 4

    public static let storeIDKey = "evidence/store-id"

    /// Opens the store for the node whose home is `home` (its `tmp/` holds spools and downloads);
    /// makes no request.
    public init(home: String, settings: S3StoreSettings) throws(StoreError) {
        self.settings = settings
        self.home = home
        self.tmpDir = home + "/tmp"
        self.client = S3Client(endpoint: settings.endpoint)
        for dir in [home, tmpDir] where mkdir(dir, 0o750) != 0 && errno != EEXIST {
            throw StoreError.from(errno: errno, path: dir, operation: "mkdir")
        }
        do { tmpFolder = try BeneathRoot(path: tmpDir + "/-", root: home, sameFileSystem: true) } catch {
            throw .unsafePath(path: tmpDir)
        }
        cleanStaleTemps()
    }

    public var storeDescription: String { "s3://\(settings.endpoint.bucket) at \(settings.endpoint.url)" }
    public var scratchDirectory: String { "/proc/self/fd/\(tmpFolder.directory)" }

    public static func key(_ d: SHA256Digest) -> String {
        let h = d.hex
        return "sha256/\(h.prefix(2))/\(h.dropFirst(2).prefix(2))/\(h)"
    }

    public func location(of d: SHA256Digest) -> String { client.location(Self.key(d)) }

    // MARK: Writing

    public func ingest(path: String, followSymlinks: Bool, beneath root: String?,
                       progress: ((Int64) -> Void)?) throws(StoreError) -> ObjectStore.IngestResult {
        let spool = try SourceSpool.read(path: path, followSymlinks: followSymlinks, beneath: root,
                                         scratch: tmpFolder.directory, scratchPath: tmpDir, storeName: storeDescription,
                                         progress: progress)
        let isNew: Bool
        do { isNew = try upload(spool) } catch { spool.discard(); throw error }
        keep(spool)
        return .stored(spool.digest, size: spool.size, newObject: isNew, source: spool.source)
    }

    @discardableResult
    public func put(_ data: Data) throws(StoreError) -> (digest: SHA256Digest, newObject: Bool) {
        let digest = SHA256Hasher.hash(data)
        let key = Self.key(digest)
        if let found = try existing(key) {
            guard found.size == Int64(data.count) else { throw sizeMismatch(key, stored: found.size, expected: Int64(data.count)) }
            try ensureRetention(key, found)
            return (digest, false)
        }
        try putObject(key, digest: digest, body: .data(data), size: Int64(data.count))
        return (digest, true)
    }

    /// Uploads a spool unless the bucket has it; true when it was sent.
    func upload(_ spool: SourceSpool) throws(StoreError) -> Bool {
        let key = Self.key(spool.digest)
        if let found = try existing(key) {
            guard found.size == spool.size else { throw sizeMismatch(key, stored: found.size, expected: spool.size) }
            try ensureRetention(key, found)
            return false
        }
        let fd = try spool.openForReading()
        defer { close(fd) }
        if spool.size <= settings.singlePutLimit {
            try putObject(key, digest: spool.digest, body: .file(fd: fd, offset: 0, length: spool.size), size: spool.size)
        } else {
            try multipartUpload(key, fd: fd, size: spool.size)
        }
        return true
    }

    private func sizeMismatch(_ key: String, stored: Int64, expected: Int64) -> StoreError {
        .objectCorrupt(path: client.location(key),
                       detail: "size \(stored) but content of this hash has \(expected) bytes; run `evidence fsck`")
    }

    /// The retention headers for a new object, when the store has Object Lock.
    private func lockHeaders(until: Date? = nil) -> [(String, String)] {
        guard let lock = settings.objectLock else { return [] }
        return [("x-amz-object-lock-mode", lock.mode.header),
                ("x-amz-object-lock-retain-until-date", Self.isoDate(until ?? lock.retainUntil()))]
    }

    /// Writes the object's retention (`PUT ?retention`) for the current version of `key`.
    private func putRetention(_ key: String, until: Date) throws(StoreError) {
        guard let lock = settings.objectLock else { return }
        let xml = Data(("<Retention xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Mode>\(lock.mode.header)</Mode>"
                        + "<RetainUntilDate>\(Self.isoDate(until))</RetainUntilDate></Retention>").utf8)
        let r = try client.send("PUT", key: key, query: "retention=", headers: [("Content-Type", "application/xml"), ("Content-MD5", Self.md5(xml))],
                                body: .data(xml))
        guard r.isSuccess else { throw .remote(path: client.location(key), detail: "retention not set: \(r.errorText)") }
    }

    static func md5(_ data: Data) -> String {
        let hasher = EVPHasher(.md5)
        data.withUnsafeBytes { hasher.update($0) }
        return Data(hasher.finalize()).base64EncodedString()
    }

    static func isoDate(_ date: Date) -> String {
        let f = DateFormatter()
        f.locale = Locale(identifier: "en_US_POSIX")
        f.timeZone = TimeZone(identifier: "UTC")
        f.dateFormat = "yyyy-MM-dd'T'HH:mm:ss'Z'"
        return f.string(from: date)
    }

    static func base64(_ d: SHA256Digest) -> String { Data(Hex.decode(d.hex) ?? []).base64EncodedString() }

    private func putObject(_ key: String, digest: SHA256Digest, body: S3Client.Body, size: Int64) throws(StoreError) {
        let checksum = Self.base64(digest)
        let r = try client.send("PUT", key: key, headers: [
            ("Content-Type", "application/octet-stream"),
            ("x-amz-content-sha256", "UNSIGNED-PAYLOAD"),
            ("x-amz-sdk-checksum-algorithm", "SHA256"),
            ("x-amz-checksum-sha256", checksum),
        ] + lockHeaders(), body: body)
        guard r.isSuccess else { throw .remote(path: client.location(key), detail: "upload refused: \(r.errorText)") }
        if let echoed = r.headers["x-amz-checksum-sha256"], echoed != checksum {
            throw .remote(path: client.location(key), detail: "the server stored checksum \(echoed), not \(checksum) of the bytes sent")
        }
    }

    /// A multipart upload: each part hashed from the spool, then streamed from it with its
    /// `x-amz-checksum-sha256`; completed with every part's checksum, aborted on any failure.
    private func multipartUpload(_ key: String, fd: Int32, size: Int64) throws(StoreError) {
        let where_ = client.location(key)
        let until = settings.objectLock?.retainUntil() ?? Date()
        let created = try client.send("POST", key: key, query: "uploads=", headers: [
            ("Content-Type", "application/octet-stream"),
            ("x-amz-checksum-algorithm", "SHA256"),
        ] + lockHeaders(until: until))
        guard created.isSuccess else {
            throw .remote(path: where_, detail: "multipart upload not started: \(created.errorText)")
        }
        let uploadID = try client.field(created, "UploadId", key: key, what: "multipart upload not started")
        guard !uploadID.isEmpty else { throw .remote(path: where_, detail: "multipart upload not started: an empty <UploadId>") }
        let idQuery = "uploadId=" + s3QueryEncode(uploadID)
        var done = false
        defer {
            if !done { _ = try? client.send("DELETE", key: key, query: idQuery) }
        }
        var parts: [(number: Int, etag: String, checksum: String)] = []
        var offset: Int64 = 0
        var number = 1
        while offset < size {
            let length = min(settings.partSize, size - offset)
            let checksum = try Self.base64(hashRange(fd: fd, offset: offset, length: length))
            let r = try client.send("PUT", key: key, query: "partNumber=\(number)&" + idQuery, headers: [
                ("x-amz-content-sha256", "UNSIGNED-PAYLOAD"),
                ("x-amz-sdk-checksum-algorithm", "SHA256"),
                ("x-amz-checksum-sha256", checksum),
            ], body: .file(fd: fd, offset: offset, length: length))
            guard r.isSuccess, let etag = r.headers["etag"] else {
                throw .remote(path: where_, detail: "part \(number) refused: \(r.errorText)")
            }
            parts.append((number, etag, checksum))
            offset += length
            number += 1
        }
        var xml = "<CompleteMultipartUpload xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
        for p in parts {
            xml += "<Part><ChecksumSHA256>\(p.checksum)</ChecksumSHA256><ETag>\(S3XML.escape(p.etag))</ETag><PartNumber>\(p.number)</PartNumber></Part>"
        }
        xml += "</CompleteMultipartUpload>"
        let r = try client.send("POST", key: key, query: idQuery, headers: [("Content-Type", "application/xml")],
                                body: .data(Data(xml.utf8)))
        // S3 may answer 200 and still report an error in the body of a completion.
        guard r.isSuccess, try client.xml(r, key: key, what: "multipart upload not completed").first("Code") == nil else {
            throw .remote(path: where_, detail: "multipart upload not completed: \(r.errorText)")
        }
        done = true
        // The retention again, on the completed object: S3 takes it from the upload's creation,
        // but not every S3-compatible server does (moto 5.2.1 drops it), and an object must never
        // be acknowledged without it. (Should this fail, the next ingest of the content finds the
        // object without a retention and sets it: `ensureRetention`.)
        try putRetention(key, until: until)
    }

    private func hashRange(fd: Int32, offset: Int64, length: Int64) throws(StoreError) -> SHA256Digest {
        let hasher = SHA256Hasher()
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 20, alignment: 16)
        defer { buffer.deallocate() }
        var done: Int64 = 0
        while done < length {
            let n = pread(fd, buffer.baseAddress, Int(min(Int64(buffer.count), length - done)), off_t(offset + done))
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { throw .ioError(path: tmpDir, operation: "read spool", errno: n < 0 ? errno : EIO) }
            hasher.update(UnsafeRawBufferPointer(rebasing: buffer[0..<n]))
            done += Int64(n)
        }
        return hasher.finalize()
    }

    // MARK: Reading

    /// The object's size and whether it has a retention, by `HEAD`; nil when there is none (any
    /// other failure throws).
    func existing(_ key: String) throws(StoreError) -> (size: Int64, retained: Bool)? {
        let r = try client.send("HEAD", key: key)
        if r.status == 404 { return nil }
        guard r.isSuccess, let size = r.headers["content-length"].flatMap({ Int64($0) }) else {
            throw .remote(path: client.location(key), detail: "HEAD: \(r.errorText)")
        }
        return (size, r.headers["x-amz-object-lock-mode"] != nil && r.headers["x-amz-object-lock-retain-until-date"] != nil)
    }

    func remoteSize(_ key: String) throws(StoreError) -> Int64? { try existing(key)?.size }

    /// Content already in the bucket is acknowledged only with a retention when the store has
    /// Object Lock: an object written before `object_lock` was set (or by a completion whose
    /// retention did not follow) gets one now.
    private func ensureRetention(_ key: String, _ found: (size: Int64, retained: Bool)) throws(StoreError) {
        guard let lock = settings.objectLock, !found.retained else { return }
        try putRetention(key, until: lock.retainUntil())
    }

    public func objectSize(_ d: SHA256Digest) throws(StoreError) -> Int64? { try remoteSize(Self.key(d)) }

    /// Streams the object in ranged GETs to `sink`, hashing; refuses (naming the key) bytes that
    /// do not hash to the key, after the last range.
    /// `toDisk`: the bytes go to a file in `tmp/`, whose file system must hold them (the local
    /// store's free-space rule).
    func fetch(_ d: SHA256Digest, toDisk: Bool = false, sink: (Data) throws(StoreError) -> Void) throws(StoreError) -> Int64 {
        let key = Self.key(d)
        guard let size = try remoteSize(key) else { throw .notFound(path: client.location(key)) }
        if toDisk {
            try FreeSpace.check(in: tmpFolder.directory, for: size, path: client.location(key), storeName: tmpDir)
        }
        let hasher = SHA256Hasher()
        var offset: Int64 = 0
        while offset < size {
            let end = min(size, offset + Int64(settings.rangeSize)) - 1
            let r = try client.send("GET", key: key, headers: [("Range", "bytes=\(offset)-\(end)")], maxBody: settings.rangeSize + 1)
            guard r.status == 206 || (r.status == 200 && offset == 0 && Int64(r.body.count) == size) else {
                throw .remote(path: client.location(key), detail: "GET bytes \(offset)-\(end): \(r.errorText)")
            }
            guard Int64(r.body.count) == end - offset + 1 || r.status == 200 else {
                throw .objectCorrupt(path: client.location(key), detail: "range \(offset)-\(end) returned \(r.body.count) bytes; the object changed while read")
            }
            hasher.update(r.body)
            try sink(r.body)
            offset += Int64(r.body.count)
        }
        let got = hasher.finalize()
        guard got == d else {
            throw .objectCorrupt(path: client.location(key), detail: "content hashes to \(got.hex), not its key: the object in the bucket was replaced; refused")
        }
        return size
    }

    public func read(_ d: SHA256Digest) throws(StoreError) -> Data {
        var data = Data()
        _ = try fetch(d) { chunk throws(StoreError) in data.append(chunk) }
        return data
    }

    public func hashObject(_ d: SHA256Digest) throws(StoreError) -> FileHasher.Result {
        let key = Self.key(d)
        guard let size = try remoteSize(key) else { throw .notFound(path: client.location(key)) }
        let hasher = SHA256Hasher()
        var offset: Int64 = 0
        while offset < size {
            let end = min(size, offset + Int64(settings.rangeSize)) - 1
            let r = try client.send("GET", key: key, headers: [("Range", "bytes=\(offset)-\(end)")], maxBody: settings.rangeSize + 1)
            guard r.isSuccess, !r.body.isEmpty else {
                throw .remote(path: client.location(key), detail: "GET bytes \(offset)-\(end): \(r.errorText)")
            }
            hasher.update(r.body)
            offset += Int64(r.body.count)
        }
        return .hashed(hasher.finalize(), size: offset)
    }

    /// Downloads into an unlinked temp file in `tmp/`, verified (see `fetch`), positioned at 0.
    public func openObject(_ d: SHA256Digest) throws(StoreError) -> (fd: Int32, stat: SourceStat) {
        let (fd, name) = try makeTemp()
        unlinkat(tmpFolder.directory, name, 0)
        var ok = false
        defer { if !ok { close(fd) } }
        _ = try fetch(d, toDisk: true) { chunk throws(StoreError) in try Self.write(fd, chunk, path: tmpDir) }
        guard lseek(fd, 0, SEEK_SET) == 0 else { throw StoreError.from(errno: errno, path: tmpDir, operation: "seek") }
        let st: SourceStat
        switch SourceStat.fstat(fd, path: tmpDir) {
        case .success(let s): st = s
        case .failure(let e): throw e
        }
        ok = true
        return (fd, st)
    }

    public func copyObject(_ d: SHA256Digest, to target: String) throws(StoreError) -> (digest: SHA256Digest, size: Int64) {
        let (fd, _) = try openObject(d)
        defer { close(fd) }
        return try ObjectExport.copy(fd: fd, label: location(of: d), storeName: storeDescription, to: target)
    }

    public func withLocalCopy<T>(of d: SHA256Digest, _ body: (String) -> T) throws(StoreError) -> T {
        if let spool = takeKept(d) {
            defer { spool.discard() }
            return body(spool.path)
        }
        let (fd, name) = try makeTemp()
        defer { close(fd); unlinkat(tmpFolder.directory, name, 0) }
        _ = try fetch(d, toDisk: true) { chunk throws(StoreError) in try Self.write(fd, chunk, path: tmpDir) }
        return body(tmpDir + "/" + name)
    }

    // MARK: Identity, legal hold, bucket

    /// The bucket's store identity (`evidence/store-id`), made once: a new one is written with
    /// `If-None-Match: *`, so of two nodes starting on a new bucket together one wins and the
    /// other reads its id.
    public func storeID() throws(StoreError) -> String {
        func get() throws(StoreError) -> String? {
            let r = try client.send("GET", key: Self.storeIDKey)
            if r.status == 404 { return nil }
            guard r.isSuccess else { throw .remote(path: client.location(Self.storeIDKey), detail: "GET: \(r.errorText)") }
            let id = String(decoding: r.body, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            return id.isEmpty ? nil : id
        }
        if let id = try get() { return id }
        let id = UUID().uuidString.lowercased()
        let data = Data((id + "\n").utf8)
        let r = try client.send("PUT", key: Self.storeIDKey, headers: [
            ("If-None-Match", "*"),
            ("Content-Type", "text/plain"),
            ("x-amz-sdk-checksum-algorithm", "SHA256"),
            ("x-amz-checksum-sha256", Self.base64(SHA256Hasher.hash(data))),
        ], body: .data(data))
        if r.status == 412 || r.status == 409, let theirs = try get() { return theirs }
        guard r.isSuccess else { throw .remote(path: client.location(Self.storeIDKey), detail: "writing the store identity: \(r.errorText)") }
        return id
    }

    /// Sets or clears the object's legal hold (`PUT ?legal-hold`).
    public func setLegalHold(_ d: SHA256Digest, on: Bool) throws(StoreError) {
        let key = Self.key(d)
        let xml = Data("<LegalHold xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Status>\(on ? "ON" : "OFF")</Status></LegalHold>".utf8)
        let md5 = Self.md5(xml)
        let r = try client.send("PUT", key: key, query: "legal-hold=", headers: [("Content-Type", "application/xml"), ("Content-MD5", md5)],
                                body: .data(xml))
        guard r.isSuccess else {
            if r.status == 404 { throw .notFound(path: client.location(key)) }
            throw .remote(path: client.location(key), detail: "legal hold not set: \(r.errorText)")
        }
    }

    /// The object's legal hold: true (on), false (off or never set).
    public func legalHold(_ d: SHA256Digest) throws(StoreError) -> Bool {
        let key = Self.key(d)
        let r = try client.send("GET", key: key, query: "legal-hold=")
        if r.status == 404, (try? S3XML(parsing: r.body))?.first("Code") == "NoSuchObjectLockConfiguration" { return false }
        guard r.isSuccess else {
            if r.status == 404 { throw .notFound(path: client.location(key)) }
            throw .remote(path: client.location(key), detail: "legal hold not read: \(r.errorText)")
        }
        // No <Status> is a hold never set (moto answers `<LegalHold/>`; AWS the 404 above).
        return try client.xml(r, key: key, what: "legal hold not read").first("Status") == "ON"
    }

    public struct BucketState: Sendable, Equatable {
        public var versioning: String?
        public var objectLockEnabled: Bool
        /// The bucket's default retention, when it has one (`GOVERNANCE 30 days`).
        public var defaultRetention: String?
    }

    /// Versioning and Object Lock of the bucket, for `doctor` (throws when the bucket is not reachable).
    public func bucketState() throws(StoreError) -> BucketState {
        let v = try client.send("GET", key: nil, query: "versioning=")
        guard v.isSuccess else { throw .remote(path: client.location(nil), detail: "bucket not reachable: \(v.errorText)") }
        let versioning = try client.xml(v, key: nil, what: "versioning not read").first("Status")
        let lock = try client.send("GET", key: nil, query: "object-lock=")
        // No Object Lock configuration is an error answer (404), not a malformed one.
        let x = lock.isSuccess ? try client.xml(lock, key: nil, what: "Object Lock configuration not read") : nil
        let enabled = x?.first("ObjectLockEnabled") == "Enabled"
        let retention = x?.first("Mode").map { mode in
            mode + (x?.first("Days").map { " \($0) days" } ?? x?.first("Years").map { " \($0) years" } ?? "")
        }
        return BucketState(versioning: versioning, objectLockEnabled: enabled, defaultRetention: retention)
    }

    // MARK: Internals

    private func keep(_ spool: SourceSpool) {
        let evicted = kept.withLock { kept in
            kept.append((spool.digest, spool))
            return kept.count > Self.keptLimit ? kept.removeFirst().1 : nil
        }
        evicted?.discard()
    }

    private func takeKept(_ d: SHA256Digest) -> SourceSpool? {
        kept.withLock { kept in
            guard let i = kept.firstIndex(where: { $0.0 == d }) else { return nil }
            return kept.remove(at: i).1
        }
    }

    private func makeTemp() throws(StoreError) -> (Int32, String) {
        guard let made = TempWriter.create(in: tmpFolder.directory, access: O_RDWR) else {
            throw StoreError.from(errno: errno, path: tmpDir, operation: "create temp file")
        }
        return made
    }

    static func write(_ fd: Int32, _ data: Data, path: String) throws(StoreError) {
        let failure: Int32? = data.withUnsafeBytes { raw in
            var off = 0
            while off < raw.count {
                let n = Glibc.write(fd, raw.baseAddress! + off, raw.count - off)
                if n < 0 { if errno == EINTR { continue }; return errno }
                off += n
            }
            return nil
        }
        if let failure {
            if failure == ENOSPC || failure == EDQUOT { throw .diskFull(path: path, store: path) }
            throw .ioError(path: path, operation: "write", errno: failure)
        }
    }

    /// Removes temp files of writers that no longer run (`<pid>@<host>.<random>.tmp`, judged by
    /// `TempWriter`), as the local store does.
    private func cleanStaleTemps() {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: tmpDir) else { return }
        for name in names where !name.contains("/") {
            if let tag = name.split(separator: ".").first,
               TempWriter.mayBeAlive(tag, name: name, in: tmpFolder.directory) { continue }
            unlinkat(tmpFolder.directory, name, 0)
        }
    }
}
