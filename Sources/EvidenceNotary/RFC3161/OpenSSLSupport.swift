import COpenSSL
import Foundation

/// Small helpers around libcrypto calls shared by the RFC 3161 codec. Everything here
/// is internal; ownership stays with the caller unless a comment says otherwise.
enum OpenSSLSupport {
    /// Empties this thread's OpenSSL error queue into one line of text
    /// (`error:…:reason (extra data); error:…`). Returns "" when the queue is empty.
    static func drainErrors() -> String {
        var parts: [String] = []
        while true {
            var file: UnsafePointer<CChar>? = nil
            var line: Int32 = 0
            var function: UnsafePointer<CChar>? = nil
            var data: UnsafePointer<CChar>? = nil
            var flags: Int32 = 0
            let code = ERR_get_error_all(&file, &line, &function, &data, &flags)
            if code == 0 { break }
            var buffer = [CChar](repeating: 0, count: 256)
            let text = buffer.withUnsafeMutableBufferPointer { buf -> String in
                ERR_error_string_n(code, buf.baseAddress, buf.count)
                return String(cString: buf.baseAddress!)
            }
            var entry = text
            if let data, flags & ERR_TXT_STRING != 0, data.pointee != 0 {
                entry += " (" + String(cString: data) + ")"
            }
            if parts.count < 16 { parts.append(entry) }
        }
        return parts.joined(separator: "; ")
    }

    /// `text` followed by the drained error queue, if any.
    static func withErrors(_ text: String) -> String {
        let queue = drainErrors()
        return queue.isEmpty ? text : "\(text): \(queue)"
    }

    /// Magnitude of an ASN1_INTEGER as big-endian bytes, left-padded to at least `minimumCount`.
    /// Nil when the value cannot be converted (negative numbers are returned by magnitude;
    /// callers that care compare with `ASN1_INTEGER_cmp`).
    static func integerBytes(_ value: UnsafePointer<ASN1_INTEGER>, minimumCount: Int = 1) -> [UInt8]? {
        guard let bn = ASN1_INTEGER_to_BN(value, nil) else { return nil }
        defer { BN_free(bn) }
        let count = Int(evidence_bn_num_bytes(bn))
        var out = [UInt8](repeating: 0, count: max(count, 1))
        if count > 0 {
            guard BN_bn2bin(bn, &out) == Int32(count) else { return nil }
        }
        if out.count < minimumCount {
            out = [UInt8](repeating: 0, count: minimumCount - out.count) + out
        }
        return out
    }

    /// A new ASN1_INTEGER holding the unsigned big-endian `bytes`; the caller frees it.
    static func makeInteger(_ bytes: [UInt8]) -> UnsafeMutablePointer<ASN1_INTEGER>? {
        guard let bn = BN_bin2bn(bytes, Int32(bytes.count), nil) else { return nil }
        defer { BN_free(bn) }
        return BN_to_ASN1_INTEGER(bn, nil)
    }

    /// Dotted OID text (`1.2.3.4.1`), never a short name.
    static func oidText(_ object: OpaquePointer?) -> String? {
        guard let object else { return nil }
        var buffer = [CChar](repeating: 0, count: 128)
        let n = buffer.withUnsafeMutableBufferPointer { OBJ_obj2txt($0.baseAddress, Int32($0.count), object, 1) }
        guard n > 0 else { return nil }
        if Int(n) >= buffer.count {
            var big = [CChar](repeating: 0, count: Int(n) + 1)
            _ = big.withUnsafeMutableBufferPointer { OBJ_obj2txt($0.baseAddress, Int32($0.count), object, 1) }
            return big.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        }
        return buffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
    }

    /// Contents of an ASN1_STRING as UTF-8 text (lossy for invalid bytes).
    static func stringText(_ s: UnsafePointer<ASN1_STRING>) -> String {
        let length = Int(ASN1_STRING_length(s))
        guard length > 0, let bytes = ASN1_STRING_get0_data(s) else { return "" }
        return String(decoding: UnsafeBufferPointer(start: bytes, count: length), as: UTF8.self)
    }

    /// RFC 2253 text of an X509_NAME (`CN=Evidence Test TSA,O=Evidence Sandbox`).
    static func nameText(_ name: OpaquePointer) -> String? {
        guard let bio = BIO_new(BIO_s_mem()) else { return nil }
        defer { BIO_free(bio) }
        guard X509_NAME_print_ex(bio, name, 0, evidence_xn_flag_rfc2253()) >= 0 else { return nil }
        var pointer: UnsafeMutablePointer<CChar>? = nil
        let length = evidence_bio_get_mem_data(bio, &pointer)
        guard length > 0, let pointer else { return nil }
        return pointer.withMemoryRebound(to: UInt8.self, capacity: length) {
            String(decoding: UnsafeBufferPointer(start: $0, count: length), as: UTF8.self)
        }
    }
}
