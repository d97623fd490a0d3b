import EvidenceCore
import EvidenceStore
import Foundation
import Testing
import EvidenceTesting

@Suite("Streaming SHA-256")
struct SHA256Tests {
    @Test("FIPS 180-2 vectors: empty, abc, 448-bit, one million a")
    func vectors() {
        #expect(SHA256Hasher.hash(Data()).hex == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        #expect(SHA256Hasher.hash(Data("abc".utf8)).hex == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(SHA256Hasher.hash(Data("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq".utf8)).hex
                == "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1")
        let h = SHA256Hasher()
        let chunk = Data(repeating: UInt8(ascii: "a"), count: 1000)
        for _ in 0..<1000 { h.update(chunk) }
        #expect(h.finalize().hex == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
    }

    @Test("file hashing matches sha256sum at sizes around the buffer size",
          arguments: [0, 1, FileHasher.bufferSize - 1, FileHasher.bufferSize, FileHasher.bufferSize + 1,
                      2 * FileHasher.bufferSize + 17])
    func aroundBuffer(size: Int) throws {
        let dir = TempDir()
        let path = dir.file("f.bin", randomData(size))
        let r = try FileHasher.hash(path: path)
        #expect(r.size == Int64(size))
        #expect(r.digest.hex == sha256sum(path))
    }

    /// The read buffer is the file's (or range's) size rounded up to a page, up to 1 MiB: sizes
    /// at the page and buffer edges, whole files and ranges, checked against `openssl dgst`.
    @Test("SHA-1 and MD5 digests of files and ranges match openssl at page and buffer edges",
          arguments: [0, 1, 4095, 4096, 4097, 102_400, FileHasher.bufferSize - 1, FileHasher.bufferSize,
                      FileHasher.bufferSize + 4097])
    func otherDigestsAroundPages(size: Int) throws {
        let dir = TempDir()
        let data = randomData(size)
        let path = dir.file("f.bin", data)
        #expect(try FileHasher.hexDigest(path: path, algorithm: .sha1) == openssl("sha1", path))
        // A range from an odd offset to 3 bytes before the end, as a chunked upload's part.
        let offset = min(size, 4095), length = max(0, size - offset - 3)
        let part = dir.file("part.bin", data.subdata(in: offset..<(offset + length)))
        #expect(Hex.encode(try FileHasher.digest(path: path, algorithm: .md5, offset: Int64(offset), length: Int64(length)))
                == openssl("md5", part))
    }

    @Test("ingest stores files of every size around the inline buffer byte for byte",
          arguments: [0, 1, 4095, 4096, 4097, 102_400, (256 << 10) - 1, 256 << 10, (256 << 10) + 1])
    func ingestAroundInlineBuffer(size: Int) throws {
        let dir = TempDir()
        let store = try ObjectStore(home: dir.path + "/home")
        let data = randomData(size)
        let src = dir.file("f.bin", data)
        let r = try store.ingest(path: src)
        #expect(r.size == Int64(size))
        #expect(r.digest.hex == sha256sum(src))
        #expect(FileManager.default.contents(atPath: store.objectPath(r.digest)) == data)
    }

    @Test("random files of random sizes match sha256sum")
    func randomFiles() throws {
        let dir = TempDir()
        for i in 0..<8 {
            let path = dir.file("r\(i)", randomData(Int.random(in: 0...(3 << 20))))
            #expect(try FileHasher.hash(path: path).digest.hex == sha256sum(path))
        }
    }

    @Test("a FIFO is refused at once, without blocking on it")
    func fifoRefused() throws {
        let dir = TempDir()
        let fifo = dir.path + "/pipe"
        #expect(mkfifo(fifo, 0o600) == 0)
        let start = Date()
        #expect(throws: StoreError.notRegularFile(path: fifo, kind: "FIFO")) { try FileHasher.hash(path: fifo) }
        #expect(Date().timeIntervalSince(start) < 2)
    }

    @Test("a missing file names the path")
    func missing() {
        #expect(throws: StoreError.notFound(path: "/nonexistent/x")) { try FileHasher.hash(path: "/nonexistent/x") }
    }
}

/// `openssl dgst -ALGORITHM` of a file: the hex digest.
private func openssl(_ algorithm: String, _ path: String) -> String {
    let out = run(["openssl", "dgst", "-\(algorithm)", "-r", path]).out
    return String(out.prefix { $0 != " " })
}
