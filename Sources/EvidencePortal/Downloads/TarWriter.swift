import Foundation

/// Writes a POSIX tar archive (ustar, with pax `path` records for names longer than ustar
/// allows or not ASCII), readable by GNU tar, bsdtar and Python's `tarfile`. Files are
/// streamed in chunks: memory does not grow with the original's size.
struct TarWriter {
    private let out: Output
    private let mtime: Int

    /// Where the archive's bytes go: a file, or the parts of a stream (`BundleStream`).
    struct Output {
        let write: (Data) throws -> Void
        func write(contentsOf data: Data) throws { try write(data) }
    }

    init(writingTo out: FileHandle, mtime: Date = Date()) {
        self.init(output: Output(write: { try out.write(contentsOf: $0) }), mtime: mtime)
    }

    init(output: Output, mtime: Date = Date()) {
        self.out = output
        self.mtime = Int(mtime.timeIntervalSince1970)
    }

    /// The header of a file of `size` bytes whose content the caller writes itself, followed by `endFile(size:)`.
    func beginFile(_ name: String, size: Int) throws {
        try writeHeader(name: name, size: size, mode: 0o644, type: "0")
    }

    /// The padding after a file's content.
    func endFile(size: Int) throws { try pad(size) }

    func addDirectory(_ name: String) throws {
        try writeHeader(name: name.hasSuffix("/") ? name : name + "/", size: 0, mode: 0o755, type: "5")
    }

    /// Adds the file at `path` under `name`.
    func addFile(_ name: String, from path: String) throws {
        guard let input = FileHandle(forReadingAtPath: path) else { throw CocoaError(.fileReadNoSuchFile, userInfo: [NSFilePathErrorKey: path]) }
        defer { try? input.close() }
        let size = Int(try input.seekToEnd())
        try input.seek(toOffset: 0)
        try writeHeader(name: name, size: size, mode: 0o644, type: "0")
        var written = 0
        while written < size {
            guard let chunk = try input.read(upToCount: min(1 << 20, size - written)), !chunk.isEmpty else {
                throw CocoaError(.fileReadUnknown, userInfo: [NSFilePathErrorKey: path])  // shrank while archived
            }
            try out.write(contentsOf: chunk)
            written += chunk.count
        }
        try pad(size)
    }

    /// The two zero blocks that end an archive.
    func finish() throws {
        try out.write(contentsOf: Data(count: 1024))
    }

    private func pad(_ size: Int) throws {
        let rest = size % 512
        if rest != 0 { try out.write(contentsOf: Data(count: 512 - rest)) }
    }

    /// ustar's size field holds 11 octal digits: 8 GiB − 1.
    static let ustarMaxSize = 0o77777777777

    private func writeHeader(name: String, size: Int, mode: Int, type: Character) throws {
        let ascii = String(name.unicodeScalars.map { $0.value >= 0x20 && $0.value < 0x7F ? Character($0) : "_" })
        var records: [(String, String)] = []
        if name.utf8.count > 100 || ascii != name { records.append(("path", name)) }
        if size > Self.ustarMaxSize { records.append(("size", String(size))) }
        if !records.isEmpty {
            let data = Data(records.map { Self.paxRecord($0.0, $0.1) }.joined().utf8)
            try out.write(contentsOf: Self.header(name: Array(("PaxHeaders/" + ascii).utf8.suffix(100)), size: data.count,
                                                  mode: 0o644, type: "x", mtime: mtime))
            try out.write(contentsOf: data)
            try pad(data.count)
        }
        // Readers that ignore pax records still get a recognisable ASCII name.
        try out.write(contentsOf: Self.header(name: Array(ascii.utf8.suffix(100)), size: min(size, Self.ustarMaxSize),
                                              mode: mode, type: type, mtime: mtime))
    }

    /// `"<len> key=value\n"`, where `<len>` counts the whole record including itself.
    static func paxRecord(_ key: String, _ value: String) -> String {
        let body = " \(key)=\(value)\n"
        var len = body.utf8.count + 1
        while String(len).utf8.count + body.utf8.count != len { len = String(len).utf8.count + body.utf8.count }
        return String(len) + body
    }

    static func header(name: [UInt8], size: Int, mode: Int, type: Character, mtime: Int) -> Data {
        var h = [UInt8](repeating: 0, count: 512)
        func put(_ bytes: [UInt8], at offset: Int, max: Int) {
            for (i, b) in bytes.prefix(max).enumerated() { h[offset + i] = b }
        }
        func octal(_ v: Int, at offset: Int, width: Int) {
            let s = String(v, radix: 8)
            put(Array((String(repeating: "0", count: max(0, width - 1 - s.count)) + s).utf8), at: offset, max: width - 1)
        }
        put(name, at: 0, max: 100)
        octal(mode, at: 100, width: 8)
        octal(0, at: 108, width: 8)          // uid
        octal(0, at: 116, width: 8)          // gid
        octal(size, at: 124, width: 12)
        octal(mtime, at: 136, width: 12)
        put(Array(repeating: UInt8(ascii: " "), count: 8), at: 148, max: 8)
        h[156] = type.asciiValue!
        put(Array("ustar".utf8) + [0], at: 257, max: 6)
        put(Array("00".utf8), at: 263, max: 2)
        put(Array("evidence".utf8), at: 265, max: 32)   // uname
        put(Array("evidence".utf8), at: 297, max: 32)   // gname
        let sum = h.reduce(0) { $0 + Int($1) }
        let s = String(sum, radix: 8)
        put(Array((String(repeating: "0", count: max(0, 6 - s.count)) + s).utf8) + [0, UInt8(ascii: " ")], at: 148, max: 8)
        return Data(h)
    }
}
