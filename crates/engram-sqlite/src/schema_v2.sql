-- engram SQLite schema, version 2: vectors and full-text search.
ALTER TABLE memories ADD COLUMN vector BLOB;                -- f32 little-endian, unit length
CREATE VIRTUAL TABLE IF NOT EXISTS memories_fts USING fts5(
    tokens,                                                  -- engram's tokens, space-separated
    tokenize = 'unicode61 remove_diacritics 0'
);
