import EvidenceCore
import Foundation
import GRDB

extension SQLiteCatalog {
    public func items(sha256Prefix: String, limit: Int) throws(CatalogError) -> [Item] {
        let hex = sha256Prefix.lowercased()
        guard (4...64).contains(hex.count), hex.allSatisfy(\.isHexDigit) else { return [] }
        // A range on the unique index, not LIKE: the prefix is data, never a pattern.
        return try read { db in
            try ItemRow.fetchAll(db, sql: "SELECT * FROM item WHERE sha256 >= ? AND sha256 < ? ORDER BY id DESC LIMIT ?",
                                 arguments: [hex, hex + "g", limit]).map { try $0.model() }
        }
    }

    public func items(nameContaining text: String, limit: Int) throws(CatalogError) -> [Item] {
        guard !text.isEmpty else { return [] }
        // instr() rather than LIKE, so `%` and `_` in what an auditor types match themselves.
        return try read { db in
            try ItemRow.fetchAll(db, sql: """
                SELECT * FROM item WHERE id IN (SELECT item_id FROM source WHERE instr(lower(name), lower(?)) > 0)
                ORDER BY id DESC LIMIT ?
                """, arguments: [text, limit]).map { try $0.model() }
        }
    }

    public func items(ingestedFrom from: Date, to: Date, limit: Int) throws(CatalogError) -> [Item] {
        try read { db in
            try ItemRow.fetchAll(db, sql: "SELECT * FROM item WHERE created_at >= ? AND created_at < ? ORDER BY id DESC LIMIT ?",
                                 arguments: [from, to, limit]).map { try $0.model() }
        }
    }

    public func recentItems(limit: Int) throws(CatalogError) -> [Item] {
        try read { db in
            try ItemRow.fetchAll(db, sql: "SELECT * FROM item ORDER BY id DESC LIMIT ?", arguments: [limit]).map { try $0.model() }
        }
    }
}

extension SQLiteCatalog {
    public func items(state: ItemState, limit: Int) throws(CatalogError) -> [Item] {
        try read { db in
            try ItemRow.fetchAll(db, sql: "SELECT * FROM item WHERE state = ? ORDER BY updated_at LIMIT ?",
                                 arguments: [state.rawValue, limit]).map { try $0.model() }
        }
    }
}
