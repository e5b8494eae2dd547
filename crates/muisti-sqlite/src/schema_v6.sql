-- muisti SQLite schema, version 6: the secondary indexes a bulk load has set aside (dropped
-- while it imports, built once at its end), with the statements that build them again, so
-- that a load cut short leaves them to be built when the store is next opened.
CREATE TABLE deferred_indexes (
    name TEXT PRIMARY KEY,                               -- the index's name
    sql  TEXT NOT NULL                                   -- its CREATE INDEX statement
);
