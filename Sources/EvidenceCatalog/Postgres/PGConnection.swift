import CLibPQ
import Foundation

/// One libpq connection, used by one thread at a time (the pool hands it out).
///
/// Parameters always travel separately from the SQL (`PQexecParams`, text format), so no value
/// is ever spliced into a statement; the password is given to libpq as a parameter of its own,
/// never as part of a URL that could reach a log or an error message.
final class PGConnection: @unchecked Sendable {   // C handle (PGconn): the pool hands it to one thread at a time, and only then is it used
    private let conn: OpaquePointer
    /// Where the catalog is, for messages: `host:port/db` without user or password.
    let label: String

    init(_ target: PostgresTarget) throws(PGError) {
        // client_min_messages: the server's NOTICEs (a migration's "already exists, skipping")
        // would otherwise go straight to stderr through libpq's default notice processor.
        var keys = ["host", "port", "dbname", "user", "application_name", "connect_timeout", "client_encoding", "options"]
        var values = [target.host, String(target.port), target.database, target.user, "evidence", "10", "UTF8",
                      "-c client_min_messages=warning"]
        if let password = target.password { keys.append("password"); values.append(password) }
        if let ca = target.tlsCAFile {
            // verify-full: the server's certificate must chain to this CA and name the host.
            keys += ["sslmode", "sslrootcert"]; values += ["verify-full", ca]
        } else if target.isLocal {
            keys.append("sslmode"); values.append("disable")
        } else {
            keys.append("sslmode"); values.append("verify-full")
        }
        label = target.label
        let c: OpaquePointer? = Self.withCStrings(keys) { k in
            Self.withCStrings(values) { v in PQconnectdbParams(k, v, 0) }
        }
        guard let c else { throw PGError(code: nil, message: "\(target.label): out of memory opening a connection") }
        guard PQstatus(c) == CONNECTION_OK else {
            let message = String(cString: PQerrorMessage(c)).trimmingCharacters(in: .whitespacesAndNewlines)
            PQfinish(c)
            throw PGError(code: nil, message: "\(target.label): cannot connect: \(message)")
        }
        conn = c
    }

    deinit { PQfinish(conn) }

    var isBroken: Bool { PQstatus(conn) != CONNECTION_OK }

    /// Runs one statement with `$1…` parameters (nil is NULL) and returns its rows.
    @discardableResult
    func query(_ sql: String, _ params: [String?] = []) throws(PGError) -> PGRows {
        let result: OpaquePointer? = Self.withOptionalCStrings(params) { values in
            PQexecParams(conn, sql, Int32(params.count), nil, values, nil, nil, 0)
        }
        guard let result else {
            throw PGError(code: nil, message: "\(label): \(String(cString: PQerrorMessage(conn)))")
        }
        defer { PQclear(result) }
        switch PQresultStatus(result) {
        case PGRES_COMMAND_OK, PGRES_TUPLES_OK:
            return PGRows(result)
        default:
            let code = PQresultErrorField(result, Int32(UInt8(ascii: "C"))).map { String(cString: $0) }
            let message = PQresultErrorField(result, Int32(UInt8(ascii: "M"))).map { String(cString: $0) }
                ?? String(cString: PQerrorMessage(conn))
            throw PGError(code: code, message: "\(label): \(message.trimmingCharacters(in: .whitespacesAndNewlines))")
        }
    }

    /// Waits up to `milliseconds` for notifications on the channels this connection LISTENs to;
    /// returns how many arrived (0 on time-out). Throws when the connection is lost.
    func awaitNotifications(milliseconds: Int32) throws(PGError) -> Int {
        var count = 0
        func drain() {
            while let n = PQnotifies(conn) {
                PQfreemem(n)
                count += 1
            }
        }
        drain()  // delivered along with an earlier result
        if count > 0 { return count }
        var p = pollfd(fd: PQsocket(conn), events: Int16(POLLIN), revents: 0)
        guard p.fd >= 0 else { throw PGError(code: nil, message: "\(label): connection lost") }
        let ready = poll(&p, 1, milliseconds)
        if ready < 0 && errno != EINTR {
            throw PGError(code: nil, message: "\(label): poll: \(String(cString: strerror(errno)))")
        }
        if ready > 0 {
            guard PQconsumeInput(conn) == 1 else {
                throw PGError(code: nil, message: "\(label): \(String(cString: PQerrorMessage(conn)).trimmingCharacters(in: .whitespacesAndNewlines))")
            }
            drain()
        }
        return count
    }

    /// Simple-protocol statements (several separated by `;`, no parameters): migrations.
    func execute(script sql: String) throws(PGError) {
        guard let result = PQexec(conn, sql) else {
            throw PGError(code: nil, message: "\(label): \(String(cString: PQerrorMessage(conn)))")
        }
        defer { PQclear(result) }
        let status = PQresultStatus(result)
        guard status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK else {
            let code = PQresultErrorField(result, Int32(UInt8(ascii: "C"))).map { String(cString: $0) }
            throw PGError(code: code, message: "\(label): \(String(cString: PQresultErrorMessage(result)).trimmingCharacters(in: .whitespacesAndNewlines))")
        }
    }

    private static func withCStrings<T>(_ strings: [String], _ body: (UnsafePointer<UnsafePointer<CChar>?>) -> T) -> T {
        let copies = strings.map { strdup($0) }
        defer { copies.forEach { free($0) } }
        var pointers: [UnsafePointer<CChar>?] = copies.map { UnsafePointer($0) }
        pointers.append(nil)
        return pointers.withUnsafeBufferPointer { body($0.baseAddress!) }
    }

    private static func withOptionalCStrings<T>(_ strings: [String?], _ body: (UnsafePointer<UnsafePointer<CChar>?>?) -> T) -> T {
        let copies = strings.map { $0.map { strdup($0) } ?? nil }
        defer { copies.forEach { free($0) } }
        let pointers: [UnsafePointer<CChar>?] = copies.map { $0.map { UnsafePointer($0) } }
        return pointers.withUnsafeBufferPointer { body($0.baseAddress) }
    }
}

/// An error from the server (with its SQLSTATE) or from libpq.
struct PGError: Error, CustomStringConvertible {
    var code: String?
    var message: String
    var description: String { message }
    /// A conflict PostgreSQL resolves by aborting one transaction: run it again.
    var isRetryable: Bool { code == "40001" || code == "40P01" }
}

/// A statement's rows in text form, copied out of libpq's result.
struct PGRows {
    let columns: [String]
    let rows: [[String?]]

    init(_ result: OpaquePointer) {
        let n = Int(PQnfields(result))
        columns = (0..<n).map { String(cString: PQfname(result, Int32($0))) }
        rows = (0..<Int(PQntuples(result))).map { r in
            (0..<n).map { c in
                PQgetisnull(result, Int32(r), Int32(c)) == 1 ? nil : String(cString: PQgetvalue(result, Int32(r), Int32(c)))
            }
        }
    }

    var count: Int { rows.count }
    var first: PGRow? { rows.first.map { PGRow(columns: columns, values: $0) } }
    var all: [PGRow] { rows.map { PGRow(columns: columns, values: $0) } }
}

/// One row, read by column name.
struct PGRow {
    let columns: [String]
    let values: [String?]

    func string(_ name: String) -> String? {
        guard let i = columns.firstIndex(of: name) else { return nil }
        return values[i]
    }
    func text(_ name: String) throws(PGError) -> String {
        guard let s = string(name) else { throw PGError(code: nil, message: "column \(name) is NULL or missing") }
        return s
    }
    func int64(_ name: String) throws(PGError) -> Int64 {
        guard let v = string(name).flatMap({ Int64($0) }) else { throw PGError(code: nil, message: "column \(name) is not an integer") }
        return v
    }
    func optionalInt64(_ name: String) -> Int64? { string(name).flatMap { Int64($0) } }
    func int(_ name: String) throws(PGError) -> Int { Int(try int64(name)) }
    func bool(_ name: String) -> Bool { string(name) == "t" }
    func date(_ name: String) throws(PGError) -> Date {
        guard let d = optionalDate(name) else { throw PGError(code: nil, message: "column \(name) is not a timestamp") }
        return d
    }
    func optionalDate(_ name: String) -> Date? { string(name).flatMap(PGTime.parse) }
}

/// Timestamps cross the wire as text in UTC: sent as ISO 8601 with microseconds, read back in
/// PostgreSQL's ISO output (`2026-11-24 13:25:39.265123+00`; every session is set to UTC).
enum PGTime {
    static func string(_ date: Date) -> String {
        let micros = (date.timeIntervalSince1970 * 1_000_000).rounded()
        let seconds = Int64((micros / 1_000_000).rounded(.down))
        let fraction = Int64(micros) - seconds * 1_000_000
        var t = time_t(seconds)
        var parts = tm()
        gmtime_r(&t, &parts)
        return String(format: "%04d-%02d-%02dT%02d:%02d:%02d.%06lldZ", Int(parts.tm_year) + 1900, Int(parts.tm_mon) + 1,
                      Int(parts.tm_mday), Int(parts.tm_hour), Int(parts.tm_min), Int(parts.tm_sec), fraction)
    }

    static func parse(_ text: String) -> Date? {
        // yyyy-mm-dd hh:mm:ss[.ffffff]+00
        let utf8 = Array(text.utf8)
        guard utf8.count >= 22 else {
            return text == "infinity" ? .distantFuture : text == "-infinity" ? .distantPast : nil
        }
        func number(_ from: Int, _ count: Int) -> Int? {
            var n = 0
            for i in from..<(from + count) {
                let b = utf8[i]
                guard b >= 48, b <= 57 else { return nil }
                n = n * 10 + Int(b - 48)
            }
            return n
        }
        guard let year = number(0, 4), let month = number(5, 2), let day = number(8, 2),
              let hour = number(11, 2), let minute = number(14, 2), let second = number(17, 2) else { return nil }
        var i = 19
        var fraction = 0.0
        if i < utf8.count, utf8[i] == UInt8(ascii: ".") {
            i += 1
            var scale = 0.1
            while i < utf8.count, utf8[i] >= 48, utf8[i] <= 57 {
                fraction += Double(utf8[i] - 48) * scale
                scale /= 10
                i += 1
            }
        }
        guard text.hasSuffix("+00") else { return nil }
        var parts = tm()
        parts.tm_year = Int32(year - 1900); parts.tm_mon = Int32(month - 1); parts.tm_mday = Int32(day)
        parts.tm_hour = Int32(hour); parts.tm_min = Int32(minute); parts.tm_sec = Int32(second)
        let seconds = timegm(&parts)
        return Date(timeIntervalSince1970: Double(seconds) + fraction)
    }
}
