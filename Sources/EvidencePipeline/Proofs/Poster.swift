import EvidenceCatalog
import EvidenceCertificate
import EvidenceCore
import EvidenceMedia
import EvidenceProcess
import EvidenceStore
import Foundation
import Glibc

/// The poster frame of a video or image item: one picture decoded by libavcodec in the
/// confined probe child (`evidence __probe --fd 3 --poster`, the same sandbox as the media
/// probe: no open, no network, nobody), written here as PNG, kept in the store and recorded by a
/// `poster` custody event (its SHA-256 and size). The certificate prints it; the portal shows it.
public enum PosterFrames {
    public struct Made: Sendable {
        public var digest: SHA256Digest
        public var png: Data
        public var width: Int
        public var height: Int
    }

    /// Whether the item has a picture to show: a video stream the probe read.
    public static func wanted(_ item: Item) -> Bool {
        guard let m = item.media, m.probeError == nil else { return false }
        return m.streams.contains { $0.type == "video" }
    }

    /// The poster already recorded for the item (the newest `poster` event), read from the
    /// store and checked against its recorded hash; nil when none, or when it does not match.
    public static func recorded(home: EvidenceHome, events: [CustodyEvent]) -> Made? {
        guard let e = events.last(where: { $0.kind == CustodyEventKind.poster.rawValue }) else { return nil }
        let d = CustodyCrossCheck.details(e)
        guard let hex = d["sha256"], let digest = SHA256Digest(hex: hex), let png = try? home.store.read(digest),
              SHA256Hasher.hash(png) == digest, let size = PNGPicture.size(png) else { return nil }
        return Made(digest: digest, png: png, width: size.width, height: size.height)
    }

    /// Decodes, stores and records the poster of `item` with the `evidence` binary at
    /// `executable`; nil (and why, logged by the caller) when there is none to make.
    public static func make(home: EvidenceHome, item: Item, name: String, executable: String, timeout: Double = 60) -> Result<Made, PosterError> {
        let answered: Result<PosterReply, PosterError>
        do {
            answered = try home.store.withLocalCopy(of: item.sha256) { path -> Result<PosterReply, PosterError> in
                let fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
                guard fd >= 0 else { return .failure(PosterError(message: "\(path): \(String(cString: strerror(errno)))")) }
                defer { close(fd) }
                let run: ChildProcess.Result
                do {
                    run = try ChildProcess.run(executable, ["__probe", "--fd", "3", "--name", name, "--poster"],
                                               separateStandardError: true, timeout: timeout, descriptors: [fd])
                } catch {
                    return .failure(PosterError(message: "the probe child did not start: \(error)"))
                }
                guard run.status == 0 else {
                    return .failure(PosterError(message: "the probe child ended with status \(run.status)"))
                }
                guard let decoded = try? JSONDecoder().decode(PosterReply.self, from: Data(run.output.utf8)) else {
                    return .failure(PosterError(message: "the probe child's answer is not a poster reply"))
                }
                return .success(decoded)
            }
        } catch {
            return .failure(PosterError(message: "\(error)"))
        }
        let reply: PosterReply
        switch answered {
        case .success(let r): reply = r
        case .failure(let e): return .failure(e)
        }
        guard let frame = reply.frame else { return .failure(PosterError(message: reply.error ?? "no picture")) }
        // The child's answer is untrusted: its sizes must agree with its pixels.
        guard frame.isConsistent, let png = PNGPicture.png(width: frame.width, height: frame.height, rgb: frame.rgb) else {
            return .failure(PosterError(message: "the probe child's picture is inconsistent (\(frame.width)×\(frame.height), \(frame.rgb.count) bytes)"))
        }
        do {
            let stored = try home.store.put(png)
            try home.catalog.appendEvent(itemID: item.id, kind: .poster,
                                         details: ["sha256": stored.digest.hex, "size": String(png.count),
                                                   "width": String(frame.width), "height": String(frame.height)])
            return .success(Made(digest: stored.digest, png: png, width: frame.width, height: frame.height))
        } catch {
            return .failure(PosterError(message: "\(error)"))
        }
    }
}
