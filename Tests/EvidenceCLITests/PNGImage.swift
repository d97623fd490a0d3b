import Foundation
import ZIPFoundation

/// A decoded 8-bit, non-interlaced PNG (what Chromium's `--screenshot` writes), enough to
/// check that a page really rendered: its size and its pixels.
struct PNGImage {
    let width: Int
    let height: Int
    /// Bytes per pixel: 3 (RGB) or 4 (RGBA).
    let channels: Int
    /// Unfiltered rows, `width * channels` bytes each.
    let pixels: [UInt8]

    enum DecodeError: Error { case notPNG, unsupported(String), corrupt(String) }

    init(data: Data) throws {
        let bytes = [UInt8](data)
        guard bytes.count > 33, bytes.prefix(8) == [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] else { throw DecodeError.notPNG }
        func u32(_ at: Int) -> Int { bytes[at..<at + 4].reduce(0) { $0 << 8 | Int($1) } }
        var at = 8
        var w = 0, h = 0, colorType = -1
        var idat: [UInt8] = []
        while at + 8 <= bytes.count {
            let length = u32(at)
            let type = String(decoding: bytes[at + 4..<at + 8], as: UTF8.self)
            let body = at + 8
            guard body + length + 4 <= bytes.count else { throw DecodeError.corrupt("chunk \(type) runs past the end") }
            switch type {
            case "IHDR":
                w = u32(body); h = u32(body + 4)
                guard bytes[body + 8] == 8 else { throw DecodeError.unsupported("bit depth \(bytes[body + 8])") }
                colorType = Int(bytes[body + 9])
                guard bytes[body + 12] == 0 else { throw DecodeError.unsupported("interlaced") }
            case "IDAT": idat += bytes[body..<body + length]
            default: break
            }
            if type == "IEND" { break }
            at = body + length + 4
        }
        guard w > 0, h > 0, idat.count > 6 else { throw DecodeError.corrupt("no IHDR or IDAT") }
        guard colorType == 2 || colorType == 6 else { throw DecodeError.unsupported("color type \(colorType)") }
        width = w; height = h; channels = colorType == 6 ? 4 : 3

        // IDAT is a zlib stream: 2 header bytes, raw deflate, adler32 (ignored).
        let deflate = Data(idat.dropFirst(2))
        var raw = Data()
        _ = try Data.decompress(size: Int64(deflate.count), bufferSize: deflate.count, skipCRC32: true,
                                provider: { position, size in
                                    guard position < deflate.count else { throw DecodeError.corrupt("deflate stream does not end") }
                                    return deflate.subdata(in: Int(position)..<min(deflate.count, Int(position) + size))
                                }, consumer: { raw.append($0) })
        let stride = w * channels
        guard raw.count >= h * (stride + 1) else { throw DecodeError.corrupt("\(raw.count) bytes for \(h) rows of \(stride)") }
        let src = [UInt8](raw)
        var out = [UInt8](repeating: 0, count: h * stride)
        for y in 0..<h {
            let filter = src[y * (stride + 1)]
            let line = y * (stride + 1) + 1
            for x in 0..<stride {
                let a = x >= channels ? Int(out[y * stride + x - channels]) : 0
                let b = y > 0 ? Int(out[(y - 1) * stride + x]) : 0
                let c = x >= channels && y > 0 ? Int(out[(y - 1) * stride + x - channels]) : 0
                let v = Int(src[line + x])
                let predicted: Int
                switch filter {
                case 0: predicted = 0
                case 1: predicted = a
                case 2: predicted = b
                case 3: predicted = (a + b) / 2
                case 4:
                    let p = a + b - c, pa = abs(p - a), pb = abs(p - b), pc = abs(p - c)
                    predicted = pa <= pb && pa <= pc ? a : pb <= pc ? b : c
                default: throw DecodeError.corrupt("filter \(filter) in row \(y)")
                }
                out[y * stride + x] = UInt8(truncatingIfNeeded: v + predicted)
            }
        }
        pixels = out
    }

    func rgb(_ x: Int, _ y: Int) -> (UInt8, UInt8, UInt8) {
        let i = (y * width + x) * channels
        return (pixels[i], pixels[i + 1], pixels[i + 2])
    }

    /// Share of pixels (0…1) that are not (near) white.
    var inkedFraction: Double {
        var n = 0
        for y in 0..<height { for x in 0..<width { let (r, g, b) = rgb(x, y); if min(r, g, b) < 235 { n += 1 } } }
        return Double(n) / Double(width * height)
    }

    /// Pixels within `tolerance` of `color`.
    func count(_ color: (Int, Int, Int), tolerance: Int = 12) -> Int {
        var n = 0
        for y in 0..<height {
            for x in 0..<width {
                let (r, g, b) = rgb(x, y)
                if abs(Int(r) - color.0) <= tolerance && abs(Int(g) - color.1) <= tolerance && abs(Int(b) - color.2) <= tolerance { n += 1 }
            }
        }
        return n
    }
}
