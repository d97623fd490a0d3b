import Foundation

/// One notarization report as the QED emulation stores it. Its status is not stored: it is
/// derived when read, from the creation time and the sandbox's pending time, so a report
/// "confirms" on schedule without any background task (and across restarts).
public struct QEDReport: Codable, Sendable, Equatable {
    public struct ProvableFile: Codable, Sendable, Equatable {
        public var slug: String
        public var hash: String
        public var fileName: String
    }

    public enum Status: String, Codable, Sendable {
        case pending, confirmed, failed
    }

    /// Names containing this marker end `failed` instead of `confirmed`.
    public static let failureMarker = "FAIL-ME"

    public var slug: String
    public var hash: String
    public var name: String
    public var note: String
    public var email: String
    public var metaData: JSONValue
    public var originalCreatedAt: Date
    public var provableFiles: [ProvableFile]
    public var createdAt: Date
    /// Fixed at creation so every read shows the same transaction.
    public var txHash: String
    public var blockHeight: Int

    public func status(at now: Date, pendingSeconds: Double) -> Status {
        guard now.timeIntervalSince(createdAt) >= pendingSeconds else { return .pending }
        return name.contains(Self.failureMarker) ? .failed : .confirmed
    }

    /// When the emulated chain included the transaction (the end of the pending time).
    public func blockTime(pendingSeconds: Double) -> Date {
        createdAt.addingTimeInterval(pendingSeconds)
    }

    public static let networkName = "sandbox-chain"
    public static let networkID: Int64 = 999

    public var explorerURL: String { "https://explorer.sandbox.invalid/tx/\(txHash)" }

    /// The report in QED's response shape, as of `now`.
    public func json(at now: Date, pendingSeconds: Double) -> JSONValue {
        let status = status(at: now, pendingSeconds: pendingSeconds)
        let tx: JSONValue
        switch status {
        case .pending:
            tx = .object([("hash", .null)])
        case .failed:
            tx = .object([("hash", .string(txHash))])
        case .confirmed:
            tx = .object([
                ("hash", .string(txHash)),
                ("data", .string("0x" + hash)),
                ("block_height", .int(Int64(blockHeight))),
                ("block_time", .string(QEDDateFormat.string(blockTime(pendingSeconds: pendingSeconds)))),
                ("explorer_url", .string(explorerURL)),
                ("network_name", .string(Self.networkName)),
                ("network_id", .int(Self.networkID)),
            ])
        }
        var members: [(String, JSONValue)] = [
            ("slug", .string(slug)),
            ("status", .string(status.rawValue)),
            ("name", .string(name)),
            ("note", .string(note)),
            ("hash", .string(hash)),
            ("provable_files", .array(provableFiles.map {
                .object([("slug", .string($0.slug)), ("hash", .string($0.hash)),
                         ("file_name", .string($0.fileName)), ("file", .null)])
            })),
            ("meta_data", metaData),
            ("original_created_at", .string(QEDDateFormat.string(originalCreatedAt))),
            ("created_at", .string(QEDDateFormat.string(createdAt))),
            ("tx", tx),
        ]
        if status == .failed {
            members.append(("failure_reason",
                            .string("Transaction reverted on \(Self.networkName): the report name contains \(Self.failureMarker).")))
        }
        return .object(members)
    }
}
