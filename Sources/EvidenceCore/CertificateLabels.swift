import Foundation

/// Who and what a certificate names for a court: the issuing agency, the custodian, the case or
/// incident, the officer, the device and the location. From the rule (`[labels]` in its file),
/// overridden field by field by a sidecar `NAME.json` the device dropped beside the file.
public struct CertificateLabels: Codable, Sendable, Equatable {
    public var values: [String: String]

    /// The keys, in the order a certificate prints them, with their printed names.
    public static let fields: [(key: String, title: String)] = [
        ("agency", "Issuer (agency)"), ("custodian", "Custodian"), ("case", "Case / incident"),
        ("officer", "Officer"), ("device", "Device"), ("location", "Location"),
    ]
    public static let keys: Set<String> = Set(fields.map(\.key))
    /// A sidecar larger than this is not read (a hostile or mistaken file, not labels).
    public static let sidecarLimit = 64 * 1024

    public init(_ values: [String: String] = [:]) { self.values = values }

    public var isEmpty: Bool { values.isEmpty }

    /// `self`, each field `other` sets replacing this one's.
    public func overridden(by other: CertificateLabels) -> CertificateLabels {
        CertificateLabels(values.merging(other.values) { _, new in new })
    }

    /// (printed name, value) for the fields set, in print order.
    public var printed: [(String, String)] {
        Self.fields.compactMap { f in values[f.key].map { (f.title, $0) } }
    }

    /// Why one value is not a label, or nil: one line of at most 200 characters.
    public static func valueProblem(_ v: String) -> String? {
        v.isEmpty ? "is empty" : lineProblem(v)
    }

    /// Why a text printed for people (a label, a case title, a package's texts) is refused, or
    /// nil: at most 200 characters, no control or invisible formatting (bidirectional,
    /// zero-width) character, so it is one line that shows what it holds.
    public static func lineProblem(_ v: String) -> String? {
        if v.count > 200 { return "is longer than 200 characters" }
        if v.unicodeScalars.contains(where: { $0.properties.generalCategory == .control || $0.properties.generalCategory == .format }) {
            return "holds a control or invisible formatting character"
        }
        return nil
    }

    /// The sidecar of `path`: `path.json` (clip.mp4.json), else the same name with `.json`
    /// for its extension (clip.json). Nil when there is none; `problem` when one exists but
    /// is not labels (too large, not a JSON object, a value that is not one short line of
    /// text): the certificate is made without it and the problem is recorded.
    public static func sidecar(of path: String) -> (labels: CertificateLabels?, file: String?, problem: String?) {
        let stem = (path as NSString).deletingPathExtension
        for candidate in [path + ".json", stem + ".json"] where candidate != path {
            var st = stat()
            guard lstat(candidate, &st) == 0 else { continue }
            guard (st.st_mode & S_IFMT) == S_IFREG else { return (nil, candidate, "not a regular file") }
            guard st.st_size <= sidecarLimit else { return (nil, candidate, "larger than \(sidecarLimit / 1024) KB") }
            guard let data = FileManager.default.contents(atPath: candidate) else { return (nil, candidate, "unreadable") }
            do { try StrictJSON.check(data) } catch { return (nil, candidate, error.description) }
            guard let object = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] else {
                return (nil, candidate, "not a JSON object")
            }
            var values: [String: String] = [:]
            for (k, v) in object where keys.contains(k) {
                guard let s = v as? String else { return (nil, candidate, "\"\(k)\" is not a string") }
                if let p = valueProblem(s) { return (nil, candidate, "\"\(k)\" \(p)") }
                values[k] = s
            }
            return (CertificateLabels(values), candidate, nil)
        }
        return (nil, nil, nil)
    }
}
