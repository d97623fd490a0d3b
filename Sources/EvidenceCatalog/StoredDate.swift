import EvidenceCore
import Foundation
import GRDB

/// Dates in the SQLite catalog exactly as GRDB stores them (`yyyy-MM-dd HH:mm:ss.SSS`, UTC,
/// milliseconds rounded to the nearest, as its DateFormatter does), written without that formatter. The formatter loads ICU's
/// locale, calendar and time-zone data on first use: about 2 MB of `evidence ingest`'s peak
/// memory for one line of text per date. The text is the same byte for byte
/// (`StoredDateTests` compares it with GRDB's own), so catalogs written before compare the same.
/// Reading is left to GRDB: it parses these strings itself.
enum StoredDate {
    static func text(_ date: Date) -> String {
        Timestamp.utc(date, dateTimeSeparator: " ", suffix: "", milliseconds: .toNearestOrAwayFromZero)
    }

    /// Every catalog record's `databaseDateEncodingStrategy(for:)`.
    static let encoding = DatabaseDateEncodingStrategy.custom { text($0) }
}
