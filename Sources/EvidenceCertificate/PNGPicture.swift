import CCairo
import Foundation

/// Pictures for documents: an RGB frame written as PNG (cairo, in memory), and a PNG read back
/// for drawing. The PNG is what the store keeps and the portal serves.
public enum PNGPicture {
    /// `rgb` (3 bytes a pixel, rows top to bottom) as a PNG; nil when the sizes do not agree.
    public static func png(width: Int, height: Int, rgb: Data) -> Data? {
        guard width > 0, height > 0, width <= 4096, height <= 4096, rgb.count == width * height * 3 else { return nil }
        guard let surface = cairo_image_surface_create(CAIRO_FORMAT_RGB24, Int32(width), Int32(height)) else { return nil }
        defer { cairo_surface_destroy(surface) }
        guard cairo_surface_status(surface) == CAIRO_STATUS_SUCCESS, let base = cairo_image_surface_get_data(surface) else { return nil }
        let stride = Int(cairo_image_surface_get_stride(surface))
        cairo_surface_flush(surface)
        rgb.withUnsafeBytes { (src: UnsafeRawBufferPointer) in
            for y in 0..<height {
                let row = base.advanced(by: y * stride).withMemoryRebound(to: UInt32.self, capacity: width) { $0 }
                for x in 0..<width {
                    let i = (y * width + x) * 3
                    row[x] = UInt32(src[i]) << 16 | UInt32(src[i + 1]) << 8 | UInt32(src[i + 2])
                }
            }
        }
        cairo_surface_mark_dirty(surface)
        let sink = PDFSink()
        let unmanaged = Unmanaged.passRetained(sink)
        defer { unmanaged.release() }
        guard cairo_surface_write_to_png_stream(surface, pdfWrite, unmanaged.toOpaque()) == CAIRO_STATUS_SUCCESS else { return nil }
        return sink.data
    }

    /// The size of a PNG (from its IHDR), or nil when it is not one.
    public static func size(_ png: Data) -> (width: Int, height: Int)? {
        let b = [UInt8](png.prefix(24))
        guard b.count == 24, b[0..<8] == [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A], b[12..<16] == [0x49, 0x48, 0x44, 0x52] else { return nil }
        func be(_ i: Int) -> Int { Int(b[i]) << 24 | Int(b[i + 1]) << 16 | Int(b[i + 2]) << 8 | Int(b[i + 3]) }
        return (be(16), be(20))
    }
}
