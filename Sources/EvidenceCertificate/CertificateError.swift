import CCairo

/// Rendering failed inside cairo (out of memory, write error, …).
public struct CertificateError: Error, CustomStringConvertible, Sendable, Equatable {
    /// What the renderer was doing, e.g. "creating the PDF surface".
    public var stage: String
    /// cairo's `cairo_status_t` value.
    public var code: Int
    /// cairo's text for `code` (`cairo_status_to_string`).
    public var cairoMessage: String

    public var description: String { "certificate: \(stage) failed: cairo: \(cairoMessage) (status \(code))" }

    init(stage: String, status: cairo_status_t) {
        self.stage = stage
        self.code = Int(status.rawValue)
        if let text = cairo_status_to_string(status) {
            self.cairoMessage = String(cString: text)
        } else {
            self.cairoMessage = "unknown status"
        }
    }
}

extension CertificateError {
    /// For callers and tests that only have a raw status value.
    init(stage: String, code: Int) {
        self.init(stage: stage, status: cairo_status_t(rawValue: UInt32(truncatingIfNeeded: code)))
    }
}
