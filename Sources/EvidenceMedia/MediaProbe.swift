import CAVFormat
import EvidenceCore
import Foundation

/// Reads container and stream facts with libavformat (headers only; no decoding).
///
/// Contract: returns `nil` for files that are not media (documents, archives, text),
/// a `MediaInfo` with `probeError` set for files that claim to be media (by extension or
/// by what libavformat recognised) but cannot be read, and a full `MediaInfo` otherwise.
/// Never throws; libavformat's own logging is silenced.
public enum MediaProbe {
    /// Extensions whose files are expected to be media: a failure to read one is a probe
    /// error worth recording, not "not media".
    public static let mediaExtensions: Set<String> = [
        "mp4", "m4v", "mov", "qt", "mkv", "webm", "avi", "mts", "m2ts", "ts", "3gp", "3g2", "mpg", "mpeg",
        "wmv", "flv", "mxf", "dv", "wav", "mp3", "m4a", "aac", "flac", "ogg", "oga", "opus", "wma", "amr",
        "aif", "aiff", "caf", "jpg", "jpeg", "png", "tif", "tiff", "heic", "heif", "webp", "bmp", "gif", "dng",
    ]

    /// The demuxers a probe may use: capture devices' containers and still images. Not among
    /// them: playlists and concat lists (`hls`, `concat`, `ffconcat`), which open other files.
    static let allowedDemuxers = [
        "mov", "mp4", "m4a", "3gp", "3g2", "mj2", "matroska", "webm", "avi", "mpegts", "mpeg", "mpegps", "asf", "flv",
        "mxf", "dv", "wav", "w64", "mp3", "aac", "flac", "ogg", "amr", "aiff", "caf", "image2", "jpeg_pipe", "png_pipe",
        "tiff_pipe", "webp_pipe", "bmp_pipe", "gif", "gif_pipe", "tty", "data",
    ].joined(separator: ",")

    /// Demuxers that accept almost anything and say nothing about media.
    static let fallbackFormats: Set<String> = ["tty", "data", "txt"]

    /// libavformat, loaded on first use (not linked: see Sources/C/CAVFormat/shim.h), logging silenced;
    /// or why it could not be loaded.
    static let library: Result<evidence_av_api, LoadError> = {
        var api = evidence_av_api()
        var error = [CChar](repeating: 0, count: 512)
        guard evidence_av_load(&api, &error, error.count) == 1 else {
            return .failure(LoadError(message: String(decoding: error.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)))
        }
        api.log_set_level!(evidence_av_log_quiet())
        return .success(api)
    }()

    struct LoadError: Error { var message: String }

    /// Loads libavformat now (the probe child does, before it limits its own address space and
    /// descriptors). Nil when loaded, else why not.
    @discardableResult
    public static func load() -> String? {
        switch library {
        case .success: return nil
        case .failure(let e): return "libavformat could not be loaded: \(e.message)"
        }
    }

    /// Whether `probe` would look inside at all, as far as can be told without libavformat: a
    /// media extension, or first bytes that `MediaPrefilter` cannot rule out. Cheap and pure
    /// Swift, so the process that holds the credentials can skip a probe child for documents and
    /// data without ever parsing hostile bytes itself.
    public static func mightBeMedia(path: String, name: String? = nil) -> Bool {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return expectsMedia(name ?? path) }
        defer { close(fd) }
        return MediaPrefilter.verdict(descriptor: fd, name: name ?? path) == .ask
    }

    /// A media extension: a failure to read the file is a probe error, not "not media".
    public static func expectsMedia(_ name: String) -> Bool {
        mediaExtensions.contains((name as NSString).pathExtension.lowercased())
    }

    /// Probes the file at `path` (opened here, read through a descriptor as `probe(descriptor:)`).
    /// - Parameter name: the file's original name, when `path` has none (store objects are
    ///   named by hash): its extension tells whether a failure means corrupt media.
    public static func probe(path: String, name: String? = nil) -> MediaInfo? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            let reason = String(cString: strerror(errno))
            return expectsMedia(name ?? path) ? MediaInfo(probeError: "cannot open \(path): \(reason)") : nil
        }
        defer { close(fd) }
        return probe(descriptor: fd, name: name ?? path)
    }

    /// Probes the regular file open as `fd` (not closed here) with libavformat, which reads it
    /// through the descriptor and opens nothing itself. This is what runs in the probe child,
    /// after it has confined itself (`evidence __probe`).
    /// - Parameter name: the name whose extension tells whether the file should be media.
    public static func probe(descriptor fd: Int32, name: String) -> MediaInfo? {
        let expectMedia = expectsMedia(name)

        // Files without a media extension are usually documents or data. Only a confident
        // signature match in their first bytes makes them media: otherwise libavformat would
        // guess a format from noise and read megabytes trying to decode it.
        if !expectMedia && !confidentSignature(fd, name: name) { return nil }
        let av: evidence_av_api
        switch library {
        case .success(let api): av = api
        case .failure(let e): return MediaInfo(probeError: "libavformat could not be loaded: \(e.message); not probed")
        }
        var ctx: UnsafeMutablePointer<AVFormatContext>?
        let rc = openConfined(av, fd, &ctx)
        guard rc >= 0, let fmt = ctx else {
            return expectMedia ? MediaInfo(probeError: errorText(rc, av)) : nil
        }
        defer { withUnsafePointer(to: av) { evidence_av_close_fd($0, &ctx) } }
        let container = fmt.pointee.iformat.map { String(cString: $0.pointee.name) }
        if let c = container, fallbackFormats.contains(c) { return nil }

        // Stills: a frame rate and duration would be artefacts of the demuxer, not facts.
        let still = container.map { $0 == "image2" || $0.hasSuffix("_pipe") } ?? false
        let found = av.find_stream_info!(fmt, nil)
        var info = MediaInfo(container: container)
        let count = Int(fmt.pointee.nb_streams)
        for i in 0..<count {
            guard let stream = fmt.pointee.streams[i], let par = stream.pointee.codecpar else { continue }
            let p = par.pointee
            var s = MediaInfo.Stream(index: i, type: typeName(p.codec_type))
            if let name = av.codec_get_name!(p.codec_id) { s.codec = String(cString: name) }
            if p.codec_type == AVMEDIA_TYPE_VIDEO && still {
                if p.width > 0 { s.width = Int(p.width) }
                if p.height > 0 { s.height = Int(p.height) }
            } else if p.codec_type == AVMEDIA_TYPE_VIDEO {
                if p.width > 0 { s.width = Int(p.width) }
                if p.height > 0 { s.height = Int(p.height) }
                let r = stream.pointee.avg_frame_rate.den != 0 ? stream.pointee.avg_frame_rate : stream.pointee.r_frame_rate
                if r.den != 0, r.num > 0 { s.frameRate = Double(r.num) / Double(r.den) }
            }
            if p.codec_type == AVMEDIA_TYPE_AUDIO {
                if p.sample_rate > 0 { s.sampleRate = Int(p.sample_rate) }
                if p.ch_layout.nb_channels > 0 { s.channels = Int(p.ch_layout.nb_channels) }
            }
            if p.bit_rate > 0 { s.bitRate = p.bit_rate }
            info.streams.append(s)
        }
        let hasAV = info.streams.contains { $0.type == "video" || $0.type == "audio" }
        guard hasAV else {
            return expectMedia ? MediaInfo(container: container, probeError: "no audio or video stream found") : nil
        }
        if found < 0 { info.probeError = errorText(found, av) }
        if !still, fmt.pointee.duration != evidence_av_nopts_value(), fmt.pointee.duration > 0 {
            info.durationSeconds = Double(fmt.pointee.duration) / Double(evidence_av_time_base())
        }
        if fmt.pointee.bit_rate > 0 { info.bitRate = fmt.pointee.bit_rate }
        info.creationTime = creationTime(fmt, av)
        return info
    }

    /// True when libavformat recognises the file's first 8 KB with at least half the maximum
    /// score (magic numbers, not guesses). Only the probe child calls this.
    static func confidentSignature(_ fd: Int32, name: String) -> Bool {
        var first = [UInt8](repeating: 0, count: MediaPrefilter.window)
        let n = first.withUnsafeMutableBytes { pread(fd, $0.baseAddress, MediaPrefilter.window, 0) }
        return n > 0 && confidentSignature(firstBytes: first[0..<n], name: name)
    }

    /// Whether libavformat's probe names a format for a file's first bytes (at most
    /// `MediaPrefilter.window` count) with a score of 50 or more. It parses those bytes: only in
    /// a confined process (the probe child, the sniff server of `evidence __probe --sniff`).
    package static func confidentSignature(firstBytes: ArraySlice<UInt8>, name: String) -> Bool {
        let padding = 64  // AVPROBE_PADDING_SIZE: zeroed bytes libavformat may read past the end
        let window = firstBytes.prefix(MediaPrefilter.window)
        // No container's signature is zeros: a sparse or preallocated file is settled here,
        // without loading libavformat (tens of MB of libraries) just to hear "no".
        guard !window.isEmpty, window.contains(where: { $0 != 0 }), case .success(let av) = library else { return false }
        let n = window.count
        var buf = Array(window) + [UInt8](repeating: 0, count: padding)
        var score: Int32 = 0
        let found = buf.withUnsafeMutableBufferPointer { b -> Bool in
            var pd = AVProbeData()
            pd.buf = b.baseAddress
            pd.buf_size = Int32(n)
            return name.withCString { name in
                pd.filename = name
                return av.probe_input_format3!(&pd, 1, &score) != nil
            }
        }
        return found && score >= 50
    }

    /// `creation_time` from the container, else from the first stream that has one.
    static func creationTime(_ fmt: UnsafeMutablePointer<AVFormatContext>, _ av: evidence_av_api) -> Date? {
        func tag(_ dict: OpaquePointer?) -> Date? {
            guard let dict, let e = av.dict_get!(dict, "creation_time", nil, 0), let v = e.pointee.value else { return nil }
            return Timestamp.parseLenient(String(cString: v))
        }
        if let d = tag(fmt.pointee.metadata) { return d }
        for i in 0..<Int(fmt.pointee.nb_streams) {
            if let s = fmt.pointee.streams[i], let d = tag(s.pointee.metadata) { return d }
        }
        return nil
    }

    static func typeName(_ t: AVMediaType) -> String {
        switch t {
        case AVMEDIA_TYPE_VIDEO: return "video"
        case AVMEDIA_TYPE_AUDIO: return "audio"
        case AVMEDIA_TYPE_SUBTITLE: return "subtitle"
        case AVMEDIA_TYPE_DATA: return "data"
        case AVMEDIA_TYPE_ATTACHMENT: return "attachment"
        default: return "unknown"
        }
    }

    static func errorText(_ code: Int32, _ av: evidence_av_api) -> String {
        var buf = [CChar](repeating: 0, count: 256)
        if av.strerror!(code, &buf, buf.count) == 0 {
            return String(decoding: buf.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        }
        return "libavformat error \(code)"
    }
}

/// One picture of a video (or an image), scaled down: the poster frame a certificate and the
/// portal show. RGB, 3 bytes a pixel, rows top to bottom.
public struct PosterFrame: Codable, Sendable, Equatable {
    public var width: Int
    public var height: Int
    public var rgb: Data

    public init(width: Int, height: Int, rgb: Data) { self.width = width; self.height = height; self.rgb = rgb }

    /// Whether the sizes agree with the pixels (a reply from the child is checked before use).
    public var isConsistent: Bool { width > 0 && height > 0 && width <= 4096 && height <= 4096 && rgb.count == width * height * 3 }
}

/// What `evidence __probe --poster` prints: the frame, or why there is none.
public struct PosterReply: Codable, Sendable {
    public var frame: PosterFrame?
    public var error: String?
    public init(frame: PosterFrame?, error: String?) { self.frame = frame; self.error = error }
}

/// Why no poster frame was made (no video stream, no decoder, an unhandled pixel format…).
public struct PosterError: Error, Sendable, CustomStringConvertible {
    public var message: String
    public init(message: String) { self.message = message }
    public var description: String { message }
}

extension MediaProbe {
    static let decoding: Result<evidence_av_decode_api, LoadError> = {
        guard case .success = library else { return .failure(LoadError(message: "libavformat is not loaded")) }
        var api = evidence_av_decode_api()
        var error = [CChar](repeating: 0, count: 256)
        guard evidence_av_load_decode(&api, &error, error.count) == 1 else {
            return .failure(LoadError(message: String(decoding: error.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)))
        }
        return .success(api)
    }()

    /// Loads the decoding functions too (the probe child does, before it confines itself).
    @discardableResult
    public static func loadDecoder() -> String? {
        switch decoding {
        case .success: return nil
        case .failure(let e): return "libavcodec could not be loaded: \(e.message)"
        }
    }

    /// Opens the file open as `fd` for hostile input: no protocol at all (the file comes through
    /// the descriptor; no concat, playlist or external reference may open another) and only the
    /// containers a capture device writes. A negative AVERROR, or 0 with `ctx` set.
    static func openConfined(_ av: evidence_av_api, _ fd: Int32, _ ctx: inout UnsafeMutablePointer<AVFormatContext>?) -> Int32 {
        var options: OpaquePointer?
        _ = av.dict_set!(&options, "protocol_whitelist", "none", 0)
        _ = av.dict_set!(&options, "format_whitelist", allowedDemuxers, 0)
        defer { av.dict_free!(&options) }
        return withUnsafePointer(to: av) { evidence_av_open_fd($0, &ctx, fd, &options) }
    }

    /// The first picture of the file open as `fd` (not closed here), at most `maxWidth` ×
    /// `maxHeight`; or why there is none. Same whitelists as `probe`: no protocol, only the
    /// containers a capture device writes. One decoder thread.
    public static func poster(descriptor fd: Int32, maxWidth: Int = 480, maxHeight: Int = 360) -> Result<PosterFrame, PosterError> {
        guard case .success(let av) = library else { return .failure(PosterError(message: "libavformat could not be loaded")) }
        let dec: evidence_av_decode_api
        switch decoding {
        case .success(let d): dec = d
        case .failure(let e): return .failure(PosterError(message: "libavcodec could not be loaded: \(e.message)"))
        }
        var ctx: UnsafeMutablePointer<AVFormatContext>?
        let rc = openConfined(av, fd, &ctx)
        guard rc >= 0, let fmt = ctx else { return .failure(PosterError(message: errorText(rc, av))) }
        defer { withUnsafePointer(to: av) { evidence_av_close_fd($0, &ctx) } }
        _ = av.find_stream_info!(fmt, nil)
        var out: UnsafeMutablePointer<UInt8>?
        var width: Int32 = 0, height: Int32 = 0
        var error = [CChar](repeating: 0, count: 256)
        let ok = withUnsafePointer(to: av) { a in
            withUnsafePointer(to: dec) { d in
                evidence_av_poster(a, d, fmt, Int32(maxWidth), Int32(maxHeight), &out, &width, &height, &error, error.count)
            }
        }
        guard ok == 1, let pixels = out else {
            return .failure(PosterError(message: String(decoding: error.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)))
        }
        defer { av.free!(pixels) }
        return .success(PosterFrame(width: Int(width), height: Int(height), rgb: Data(bytes: pixels, count: Int(width) * Int(height) * 3)))
    }
}
