import EvidenceCore
import Foundation

/// QED's REST wire shapes (`/v1/reports/`). The documentation fixes the fields of a report but
/// not the shape of a list, nor an error format: models read leniently (unknown fields are
/// ignored, a field of the wrong type reads as absent, so the error can name it) and an
/// unknown status decodes to `.other`, which the client refuses by name.
enum QEDAPI {
    /// `POST /v1/reports/`: `provable_files` lists the file itself, so the report proves it by name too.
    struct NewReport: Encodable {
        struct File: Encodable { var hash: String; var file_name: String }
        var hash: String
        var provable_files: [File]
        var original_created_at: String
        var name: String
        var note: String
        var meta_data: [String: String]
    }

    enum Status: Decodable, Equatable {
        case pending, confirmed, failed
        case other(String)

        init(text: String) { self = ["pending": Self.pending, "confirmed": .confirmed, "failed": .failed][text] ?? .other(text) }
        init(from decoder: any Decoder) throws { self.init(text: try decoder.singleValueContainer().decode(String.self)) }
    }

    /// The blockchain transaction: only `hash` while pending.
    struct Tx: Decodable {
        var hash: String?
        var block_height: Int64?
        var block_time: String?
        var explorer_url: String?
        var network_name: String?

        enum Keys: String, CodingKey { case hash, block_height, block_time, explorer_url, network_name }
        init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: Keys.self)
            hash = try? c.decodeIfPresent(String.self, forKey: .hash)
            block_height = (try? c.decodeIfPresent(LenientInt64.self, forKey: .block_height))?.value
            block_time = try? c.decodeIfPresent(String.self, forKey: .block_time)
            explorer_url = try? c.decodeIfPresent(String.self, forKey: .explorer_url)
            network_name = try? c.decodeIfPresent(String.self, forKey: .network_name)
        }
    }

    struct Report: Decodable {
        var slug: String?
        var status: Status?
        var hash: String?
        var tx: Tx?
        var failure_reason: String?

        enum Keys: String, CodingKey { case slug, status, hash, tx, failure_reason }
        init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: Keys.self)
            slug = try? c.decodeIfPresent(String.self, forKey: .slug)
            status = try? c.decodeIfPresent(Status.self, forKey: .status)
            hash = try? c.decodeIfPresent(String.self, forKey: .hash)
            tx = try? c.decodeIfPresent(Tx.self, forKey: .tx)
            failure_reason = try? c.decodeIfPresent(String.self, forKey: .failure_reason)
        }
    }

    /// A report list as any server may answer it: a bare array, or Django REST framework's
    /// paginated `{count, next, previous, results}`. Entries stay as they came (each is kept
    /// verbatim as a receipt once adopted).
    enum ReportList: Decodable {
        case array([JSONTree])
        case page(results: [JSONTree], next: String?)
        case neither

        enum Keys: String, CodingKey { case results, next }
        init(from decoder: any Decoder) throws {
            if let array = try? decoder.singleValueContainer().decode([JSONTree].self) { self = .array(array); return }
            guard let c = try? decoder.container(keyedBy: Keys.self),
                  let results = try? c.decode([JSONTree].self, forKey: .results) else {
                _ = try decoder.singleValueContainer().decode(JSONTree.self)   // JSON at all, or throw
                self = .neither
                return
            }
            self = .page(results: results, next: try? c.decodeIfPresent(String.self, forKey: .next))
        }
    }

    /// A DRF error body: `{"detail": "…"}` or `{"field": ["message", …]}`, as a line for people.
    static func errorText(_ body: Data) -> String? {
        guard case .object(let fields)? = WireJSON.decode(JSONTree.self, from: body) else { return nil }
        return fields.keys.sorted().map { key in
            let text = fields[key]?.text ?? ""
            return key == "detail" ? text : "\(key): \(text)"
        }.joined(separator: "; ")
    }
}
