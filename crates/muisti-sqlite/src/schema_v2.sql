-- muisti SQLite schema, version 2: context, vectors and full-text search.
ALTER TABLE memories ADD COLUMN context TEXT;               -- situating text, indexed at a lower weight
ALTER TABLE memories ADD COLUMN vector BLOB;                -- f32 little-endian, unit length
CREATE VIRTUAL TABLE IF NOT EXISTS memories_fts USING fts5(
    tokens,                                                  -- muisti's terms of key and content
    context,                                                 -- muisti's terms of the context
    scope,                                                   -- hashed partition and owner terms, to narrow a match
    tokenize = 'unicode61 remove_diacritics 0'
);
-- Merge full-text segments less eagerly: cheaper writes; queries mostly run on the
-- in-memory copy (see cache.rs).
INSERT INTO memories_fts (memories_fts, rank) VALUES ('automerge', 8);
