-- muisti SQLite schema, version 3: a version counter per record, for conditional updates.
ALTER TABLE memories ADD COLUMN version INTEGER NOT NULL DEFAULT 1;
