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
    public var summary: String {
        if let e = probeError { return "unreadable media (\(e))" }
        var parts: [String] = []
        if let c = container { parts.append(c) }
        if let d = durationSeconds { parts.append(String(format: "%.1f s", d)) }
        for s in streams {
            var p = [s.codec ?? s.type]
            if let w = s.width, let h = s.height { p.append("\(w)×\(h)") }
            if let f = s.frameRate, f > 0 { p.append(String(format: "%g fps", (f * 100).rounded() / 100)) }
            if let r = s.sampleRate, r > 0 { p.append("\(r) Hz") }
            if let ch = s.channels, ch > 0 { p.append("\(ch) ch") }
            parts.append(p.joined(separator: " "))
        }
        return parts.joined(separator: " · ")
    }
}
