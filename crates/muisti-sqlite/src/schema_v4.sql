-- muisti SQLite schema, version 4: full-text terms in a plain table (the in-memory copy of
-- each partition scores BM25 with the partition's own statistics, so FTS5's index over every
-- tenant's rows is no longer read), and access statistics apart from the record, so counting
-- an access writes a small row instead of rewriting the record.
CREATE TABLE memory_terms (
    rowid   INTEGER PRIMARY KEY,                         -- the record's rowid
    tokens  TEXT    NOT NULL,                            -- muisti's terms of key and content
    context TEXT                                         -- muisti's terms of the context
);
INSERT INTO memory_terms (rowid, tokens, context) SELECT rowid, tokens, context FROM memories_fts;
DROP TABLE memories_fts;
-- Accesses counted since the record was last written: a read adds them to the record's own
-- access_count and takes the later last_accessed_at. Writing the record folds them in.
CREATE TABLE memory_access (
    rowid            INTEGER PRIMARY KEY,                -- the record's rowid
    access_count     INTEGER NOT NULL,
    last_accessed_at INTEGER NOT NULL
);
CREATE TRIGGER memories_deleted AFTER DELETE ON memories BEGIN
    DELETE FROM memory_terms WHERE rowid = old.rowid;
    DELETE FROM memory_access WHERE rowid = old.rowid;
END;
CREATE TRIGGER memories_access_folded AFTER UPDATE OF access_count ON memories BEGIN
    DELETE FROM memory_access WHERE rowid = new.rowid;
END;
-- No partial indexes: to decide whether one applies, SQLite compares every bound parameter
-- with the index's condition and then re-prepares the statement whenever a parameter
-- changes, which made every read parse its SQL again.
DROP INDEX memories_expiry;
CREATE INDEX memories_expiry ON memories (expires_at);
DROP INDEX memories_user;
CREATE INDEX memories_user ON memories (tenant, user_id);
