import EvidenceCore
import EvidenceStore
import Foundation

extension S3ObjectStore {
    /// One key of the bucket below `sha256/`, as listed.
    public struct ListedObject: Sendable, Equatable {
        public var key: String
        public var size: Int64
    }

    /// Every key starting with `prefix` (ListObjectsV2, following continuation tokens). The
    /// default has no `/`: libcurl 7.88 signs the query as written, and servers disagree on how
    /// an encoded `/` in it is canonicalized (moto refuses `%2F`); `sha256` lists the same keys,
    /// and any other key starting with it is reported as stray.
    public func list(prefix: String = "sha256") throws(StoreError) -> [ListedObject] {
        var out: [ListedObject] = []
        var token: String?
        repeat {
            var query = "list-type=2&max-keys=\(settings.listPageSize)&prefix=" + s3QueryEncode(prefix)
            if let token { query = "continuation-token=" + s3QueryEncode(token) + "&" + query }
            let r = try client.send("GET", key: nil, query: query)
            guard r.isSuccess else { throw .remote(path: client.location(prefix), detail: "listing refused: \(r.errorText)") }
            let x = try client.xml(r, key: prefix, what: "listing not read")
            do throws(S3XML.Malformed) {
                for entry in x.blocks("Contents") {
                    let key = try entry.required("Key"), size = try entry.required("Size")
                    guard let bytes = Int64(size) else { throw S3XML.Malformed(description: "<Size> of \(key) is not a number: \(size.prefix(40))") }
                    out.append(ListedObject(key: key, size: bytes))
                }
                token = x.first("IsTruncated") == "true" ? try x.required("NextContinuationToken") : nil
            } catch {
                throw .remote(path: client.location(prefix), detail: "listing not read: \(error)")
            }
        } while token != nil
        return out
    }

    /// Lists `sha256/` and checks every key: a store object's name at its fan-out place
    /// (`strayFile`, `misplaced`), and with `rehash` that its bytes hash to the key
    /// (`hashMismatch`: the object was replaced in the bucket). Problems name `s3://bucket/key`.
    public func check(rehash: Bool, progress: ((Int, Int) -> Void)?) -> ObjectStore.CheckReport {
        var report = ObjectStore.CheckReport.empty
        let listed: [ListedObject]
        do { listed = try list() } catch {
            report.problems.append(.problem(.unreadable, at: client.location("sha256/"), error.description))
            return report
        }
        for (i, object) in listed.enumerated() {
            defer { progress?(i + 1, listed.count) }
            let where_ = client.location(object.key)
            let name = String(object.key.split(separator: "/", omittingEmptySubsequences: false).last ?? "")
            guard let digest = SHA256Digest(hex: name), name == digest.hex else {
                report.problems.append(.problem(.strayFile, at: where_, "not a store object name"))
                continue
            }
            if Self.key(digest) != object.key {
                report.problems.append(.problem(.misplaced, at: where_, "expected at \(location(of: digest))"))
                continue
            }
            report.objects += 1
            report.bytes += max(0, object.size)
            report.digests.insert(digest)
            guard rehash else { continue }
            do {
                let r = try hashObject(digest)
                if r.digest != digest {
                    report.problems.append(.problem(.hashMismatch, at: where_, "content hashes to \(r.digest.hex), not its key"))
                }
            } catch {
                report.problems.append(.problem(.unreadable, at: where_, error.description))
            }
        }
        return report
    }
}
