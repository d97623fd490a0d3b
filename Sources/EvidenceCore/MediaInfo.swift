import Foundation

/// What the media probe learned about a file. `nil` on an item means "not media";
/// a value with `probeError` set means "looked like media but could not be read".
public struct MediaInfo: Codable, Sendable, Equatable {
    public struct Stream: Codable, Sendable, Equatable {
        public var index: Int
        public var type: String            // video | audio | subtitle | data | attachment | unknown
        public var codec: String?
        public var width: Int?
        public var height: Int?
        public var frameRate: Double?
        public var sampleRate: Int?
        public var channels: Int?
        public var bitRate: Int64?

        public init(index: Int, type: String, codec: String? = nil, width: Int? = nil, height: Int? = nil,
                    frameRate: Double? = nil, sampleRate: Int? = nil, channels: Int? = nil, bitRate: Int64? = nil) {
            self.index = index; self.type = type; self.codec = codec; self.width = width; self.height = height
            self.frameRate = frameRate; self.sampleRate = sampleRate; self.channels = channels; self.bitRate = bitRate
        }
    }

    public var container: String?
    public var durationSeconds: Double?
    public var bitRate: Int64?
    public var streams: [Stream]
    /// The container's `creation_time` tag: when the device says it recorded.
    public var creationTime: Date?
    public var probeError: String?

    public init(container: String? = nil, durationSeconds: Double? = nil, bitRate: Int64? = nil,
                streams: [Stream] = [], creationTime: Date? = nil, probeError: String? = nil) {
        self.container = container; self.durationSeconds = durationSeconds; self.bitRate = bitRate
        self.streams = streams; self.creationTime = creationTime; self.probeError = probeError
    }

    /// One line for tables and certificates, e.g. "mov,mp4 · 2.0 s · h264 320×240 25 fps · aac 44100 Hz 1 ch".
    /// One plain line for people: "MP4 video, 2.0 s, H.264 320×240 30 fps, AAC 48 kHz stereo".
    public var summary: String { plainSummary(fileName: nil) }

    /// `summary`, with the file's extension choosing among the formats one demuxer reads
    /// (ffmpeg's "mov,mp4,m4a,3gp,3g2,mj2" is MP4 for clip.mp4 and QuickTime for clip.mov).
    public func plainSummary(fileName: String?) -> String {
        if let e = probeError { return "unreadable media (\(e))" }
        let video = streams.first { $0.type == "video" }
        let audio = streams.first { $0.type == "audio" }
        let still = video != nil && (durationSeconds ?? 0) == 0 && audio == nil
        let kind = still ? "image" : video != nil ? "video" : audio != nil ? "audio" : "media"
        var parts = ["\(Self.formatName(container, fileName: fileName)) \(kind)"]
        if !still, let d = durationSeconds, d > 0 { parts.append(String(format: "%.1f s", d)) }
        for s in streams where s.type == "video" || s.type == "audio" {
            var p = [Self.codecName(s.codec ?? s.type)]
            if let w = s.width, let h = s.height { p.append("\(w)×\(h)") }
            if !still, let f = s.frameRate, f > 0 { p.append(String(format: "%g fps", (f * 100).rounded() / 100)) }
            if let r = s.sampleRate, r > 0 { p.append(r % 1000 == 0 ? "\(r / 1000) kHz" : String(format: "%.1f kHz", Double(r) / 1000)) }
            if let ch = s.channels, ch > 0 { p.append(ch == 1 ? "mono" : ch == 2 ? "stereo" : "\(ch) channels") }
            parts.append(p.joined(separator: " "))
        }
        return parts.joined(separator: ", ")
    }

    static func formatName(_ container: String?, fileName: String?) -> String {
        let ext = fileName.map { ($0 as NSString).pathExtension.lowercased() } ?? ""
        let names = (container ?? "").split(separator: ",").map(String.init)
        let byExtension = ["mp4": "MP4", "m4v": "MP4", "m4a": "M4A", "mov": "QuickTime", "3gp": "3GP", "mkv": "Matroska",
                           "webm": "WebM", "avi": "AVI", "wav": "WAV", "mp3": "MP3", "flac": "FLAC", "ogg": "Ogg", "jpg": "JPEG",
                           "jpeg": "JPEG", "png": "PNG", "ts": "MPEG-TS", "mts": "MPEG-TS", "mxf": "MXF", "aac": "AAC"]
        // The extension decides only among the formats the demuxer that read the file handles.
        let family: [String: Set<String>] = ["mov": ["mp4", "m4v", "m4a", "mov", "3gp"], "matroska": ["mkv", "webm"],
                                             "image2": ["jpg", "jpeg", "png"], "jpeg_pipe": ["jpg", "jpeg"], "png_pipe": ["png"],
                                             "mpegts": ["ts", "mts"]]
        if let n = byExtension[ext], names.contains(ext) || names.contains(where: { family[$0]?.contains(ext) == true }) {
            return n
        }
        let byDemuxer = ["mov": "MP4/QuickTime", "matroska": "Matroska", "avi": "AVI", "wav": "WAV", "mp3": "MP3", "flac": "FLAC",
                         "ogg": "Ogg", "image2": "image", "png_pipe": "PNG", "jpeg_pipe": "JPEG", "mpegts": "MPEG-TS", "mxf": "MXF",
                         "aac": "AAC"]
        return names.first.flatMap { byDemuxer[$0] } ?? names.first?.uppercased() ?? "unknown"
    }

    static func codecName(_ codec: String) -> String {
        let names = ["h264": "H.264", "hevc": "H.265", "av1": "AV1", "vp8": "VP8", "vp9": "VP9", "mpeg4": "MPEG-4 Part 2",
                     "mjpeg": "Motion JPEG", "prores": "ProRes", "aac": "AAC", "mp3": "MP3", "opus": "Opus", "vorbis": "Vorbis",
                     "flac": "FLAC", "pcm_s16le": "PCM 16-bit", "pcm_s24le": "PCM 24-bit", "alac": "ALAC", "png": "PNG",
                     "mpeg2video": "MPEG-2", "ac3": "AC-3", "eac3": "E-AC-3", "amr_nb": "AMR-NB", "amr_wb": "AMR-WB"]
        return names[codec] ?? codec.uppercased()
    }
}
