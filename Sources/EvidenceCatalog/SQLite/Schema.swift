import GRDB

/// Migrations are only ever appended: never edit a registered one.
enum Schema {
    static var migrator: DatabaseMigrator {
        var m = DatabaseMigrator()
        m.registerMigration("v1-items-sources-custody") { db in
            try db.create(table: "item") { t in
                t.autoIncrementedPrimaryKey("id")
                t.column("sha256", .text).notNull().unique()
                    .check { length($0) == 64 }
                t.column("size", .integer).notNull().check { $0 >= 0 }
                t.column("state", .text).notNull()
                t.column("state_reason", .text)
                t.column("media_json", .text)
                t.column("date_taken", .datetime)
                t.column("created_at", .datetime).notNull()
                t.column("updated_at", .datetime).notNull()
            }
            try db.create(index: "item_state", on: "item", columns: ["state"])

            try db.create(table: "source") { t in
                t.autoIncrementedPrimaryKey("id")
                t.column("item_id", .integer).notNull().references("item", onDelete: .restrict)
                t.column("path", .text).notNull()
                t.column("name", .text).notNull()
                t.column("rule", .text)
                t.column("device", .integer).notNull()
                t.column("inode", .integer).notNull()
                t.column("size", .integer).notNull()
                t.column("mtime_nanos", .integer).notNull()
                t.column("seen_at", .datetime).notNull()
                t.uniqueKey(["path", "device", "inode", "size", "mtime_nanos"])
            }
            try db.create(index: "source_item", on: "source", columns: ["item_id"])
            try db.create(index: "source_name", on: "source", columns: ["name"])

            try db.create(table: "quarantine") { t in
                t.autoIncrementedPrimaryKey("id")
                t.column("path", .text).notNull()
                t.column("rule", .text)
                t.column("reason", .text).notNull()
                t.column("at", .datetime).notNull()
                t.column("resolved", .boolean).notNull().defaults(to: false)
            }
            try db.create(index: "quarantine_path", on: "quarantine", columns: ["path"])

            try db.create(table: "custody_event") { t in
                t.column("seq", .integer).primaryKey()
                t.column("item_id", .integer).references("item", onDelete: .restrict)
                t.column("at", .text).notNull()
                t.column("kind", .text).notNull()
                t.column("actor", .text).notNull()
                t.column("details", .text).notNull()
                t.column("prev_hash", .text).notNull()
                t.column("hash", .text).notNull().unique()
            }
            try db.create(index: "custody_item", on: "custody_event", columns: ["item_id"])
            // Append-only in the schema itself; anyone who drops these triggers to edit the log
            // is still caught by the hash chain.
            try db.execute(sql: """
                CREATE TRIGGER custody_event_no_update BEFORE UPDATE ON custody_event
                BEGIN SELECT RAISE(ABORT, 'custody log is append-only'); END;
                CREATE TRIGGER custody_event_no_delete BEFORE DELETE ON custody_event
                BEGIN SELECT RAISE(ABORT, 'custody log is append-only'); END;
                """)
        }
        registerJobs(&m)
        registerProofs(&m)
        registerArchive(&m)
        m.registerMigration("v5-meta") { db in
            // Facts about the catalog itself: `store_id`, the store it describes.
            try db.create(table: "meta") { t in
                t.column("key", .text).primaryKey()
                t.column("value", .text).notNull()
            }
        }
        // (v6-job-wake is PostgreSQL's alone: SQLite has no NOTIFY.)
        m.registerMigration("v7-item-failed-from") { db in
            // Where a retry takes a failed item back to, kept with the item from now on. Items
            // already failed get it from the custody event of their last move to failed, which
            // is where retry used to look it up.
            try db.alter(table: "item") { t in
                t.add(column: "failed_from", .text)
            }
            try db.execute(sql: """
                UPDATE item SET failed_from = (
                  SELECT json_extract(e.details, '$.from') FROM custody_event e
                  WHERE e.item_id = item.id AND json_extract(e.details, '$.to') = 'failed' ORDER BY e.seq DESC LIMIT 1)
                WHERE state = 'failed'
                """)
        }
        m.registerMigration("v8-item-superseded-by") { db in
            // The later version of the same path (same rule) that superseded the item. No
            // foreign key: `catalog migrate` copies items in id order, and the successor's id is
            // always the larger one.
            try db.alter(table: "item") { t in
                t.add(column: "superseded_by", .integer)
            }
        }
        m.registerMigration("v9-custody-kind") { db in
            // Cases and tags are replayed from their custody events (`events(kinds:)`).
            try db.create(index: "custody_kind", on: "custody_event", columns: ["kind", "seq"])
        }
        m.registerMigration("v10-proof-remote") { db in
            // The members of a time-stamp batch are the proofs pending under its key (`proofs(notary:remoteID:)`).
            try db.create(index: "proof_remote", on: "proof", columns: ["notary", "remote_id"])
        }
        return m
    }
}

extension Schema {
    static func registerJobs(_ m: inout DatabaseMigrator) {
        m.registerMigration("v2-jobs") { db in
            try db.create(table: "job") { t in
                t.autoIncrementedPrimaryKey("id")
                t.column("kind", .text).notNull()
                t.column("item_id", .integer).references("item", onDelete: .restrict)
                t.column("state", .text).notNull()
                    .check { ["queued", "running", "done", "failed"].contains($0) }
                t.column("attempts", .integer).notNull().defaults(to: 0)
                t.column("max_attempts", .integer).notNull()
                t.column("next_run_at", .datetime).notNull()
                t.column("lease_owner", .text)
                t.column("lease_expires_at", .datetime)
                t.column("last_error", .text)
                t.column("payload", .text).notNull()
                // Makes enqueueing idempotent: the same job for the same thing exists once.
                t.column("dedupe_key", .text).notNull().unique()
                t.column("created_at", .datetime).notNull()
                t.column("updated_at", .datetime).notNull()
            }
            try db.create(index: "job_runnable", on: "job", columns: ["state", "next_run_at"])
            try db.create(index: "job_item", on: "job", columns: ["item_id"])
        }
    }
}

extension Schema {
    static func registerProofs(_ m: inout DatabaseMigrator) {
        m.registerMigration("v3-proofs-certificates") { db in
            try db.create(table: "proof") { t in
                t.column("item_id", .integer).notNull().references("item", onDelete: .restrict)
                t.column("notary", .text).notNull()
                t.column("kind", .text).notNull()
                t.column("state", .text).notNull()
                    .check { ["pending", "confirmed", "failed"].contains($0) }
                t.column("remote_id", .text)
                t.column("receipt", .text).check { $0 == nil || length($0) == 64 }
                t.column("tx_hash", .text)
                t.column("block_height", .integer)
                t.column("network", .text)
                t.column("link", .text)
                t.column("proven_at", .datetime)
                t.column("error", .text)
                t.column("submitted_at", .datetime)
                t.column("updated_at", .datetime).notNull()
                t.primaryKey(["item_id", "notary"])
            }
            try db.create(table: "certificate") { t in
                t.column("item_id", .integer).notNull().references("item", onDelete: .restrict)
                t.column("origin", .text).notNull()
                t.column("sha256", .text).notNull().check { length($0) == 64 }
                t.column("size", .integer).notNull()
                t.column("created_at", .datetime).notNull()
                t.primaryKey(["item_id", "origin"])
            }
        }
    }
}

extension Schema {
    static func registerArchive(_ m: inout DatabaseMigrator) {
        m.registerMigration("v4-archive") { db in
            try db.create(table: "archived_file") { t in
                t.column("item_id", .integer).notNull().references("item", onDelete: .restrict)
                t.column("account", .text).notNull()
                t.column("remote_path", .text).notNull()
                t.column("role", .text).notNull()
                t.column("sha256", .text).notNull().check { length($0) == 64 }
                t.column("size", .integer).notNull()
                t.column("verified_by", .text).notNull()
                t.column("remote_id", .text)
                t.column("verified_at", .datetime).notNull()
                t.primaryKey(["item_id", "account", "remote_path"])
            }
            try db.create(table: "shared_link") { t in
                t.column("item_id", .integer).notNull().references("item", onDelete: .restrict)
                t.column("account", .text).notNull()
                t.column("remote_path", .text).notNull()
                t.column("url", .text).notNull()
                t.column("expires", .datetime)
                t.column("password_protected", .boolean).notNull()
                t.column("fallback", .text)
                t.column("created_at", .datetime).notNull()
                t.primaryKey(["item_id", "account"])
            }
        }
    }
}
