-- muisti SQLite schema, version 1. One row per memory record; key-value entries included.
CREATE TABLE IF NOT EXISTS memories (
    rowid            INTEGER PRIMARY KEY,
    id               TEXT    NOT NULL UNIQUE,       -- ULID
    tenant           TEXT    NOT NULL,
    namespace        TEXT    NOT NULL,
    key              TEXT    NOT NULL,
    content          TEXT    NOT NULL,              -- the text, or a JSON value's JSON
    content_is_json  INTEGER NOT NULL,              -- 0: content is a string; 1: JSON text
    category         TEXT    NOT NULL,
    scope            TEXT    NOT NULL,
    user_id          TEXT,
    agent_id         TEXT,
    session_id       TEXT,
    tags             TEXT    NOT NULL,              -- JSON array
    metadata         TEXT    NOT NULL,              -- JSON object
    importance       REAL    NOT NULL,
    source           TEXT    NOT NULL,
    confidence       INTEGER,
    content_hash     TEXT    NOT NULL,
    state            TEXT    NOT NULL,
    superseded_by    TEXT,
    valid_from       INTEGER,                       -- ms since epoch
    valid_until      INTEGER,
    created_at       INTEGER NOT NULL,
    updated_at       INTEGER NOT NULL,
    last_accessed_at INTEGER,
    access_count     INTEGER NOT NULL DEFAULT 0,
    expires_at       INTEGER,
    embedding_model  TEXT,
    UNIQUE (tenant, namespace, key)
);
CREATE INDEX IF NOT EXISTS memories_partition_id ON memories (tenant, namespace, id);
CREATE INDEX IF NOT EXISTS memories_expiry ON memories (expires_at) WHERE expires_at IS NOT NULL;
CREATE INDEX IF NOT EXISTS memories_hash ON memories (tenant, namespace, content_hash);
CREATE INDEX IF NOT EXISTS memories_user ON memories (tenant, user_id) WHERE user_id IS NOT NULL;
