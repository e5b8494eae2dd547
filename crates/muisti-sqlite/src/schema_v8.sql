-- muisti SQLite schema, version 8: each user's copy kept as one packed part per record,
-- written by the store with the record in its transaction, so a user's copy is ready from
-- the moment the records are written (version 7 kept one value per user that every write set
-- aside, so after an ingest every user's first load read the rows, one seek per row in
-- three tables, the rows of many users interleaved on the pages).
--
-- The parts are clustered by user (a WITHOUT ROWID table keyed by the user, then the
-- record's rowid), so a user's parts are read in sequence. The store writes a record's part
-- after the statement that writes the record, so after the triggers below; the triggers
-- take a record's part away whenever its row changes or goes (a change made by other means
-- than the store leaves the record without a part, never with a stale one) and keep each
-- user's count of records. A load takes the parts only when there is one for each of the
-- user's records; otherwise it reads the rows and writes their parts, only where `gen`
-- (moved on by every change to the user's records) is still what its snapshot read. A user
-- with records has a row, and the user's last record takes the row (and the user's name)
-- with it; a new row starts at a random `gen`, so a user erased and written again does not
-- meet a load of before with the same one. Access counts since a record was written stay in
-- `memory_access` and are added when a copy is read.
DROP TRIGGER user_copy_insert;
DROP TRIGGER user_copy_update;
DROP TRIGGER user_copy_moved;
DROP TRIGGER user_copy_delete;
DROP TABLE user_copies;
CREATE TABLE user_copies (
    tenant    TEXT    NOT NULL,
    namespace TEXT    NOT NULL,
    user_id   TEXT    NOT NULL,
    gen       INTEGER NOT NULL,
    records   INTEGER NOT NULL,                          -- the user's records
    PRIMARY KEY (tenant, namespace, user_id)
) WITHOUT ROWID;
CREATE TABLE user_copy_parts (
    tenant    TEXT    NOT NULL,
    namespace TEXT    NOT NULL,
    user_id   TEXT    NOT NULL,
    record    INTEGER NOT NULL,                          -- the record's rowid
    part      BLOB    NOT NULL,                          -- the record as its copy holds it
    PRIMARY KEY (tenant, namespace, user_id, record)
) WITHOUT ROWID;
INSERT INTO user_copies (tenant, namespace, user_id, gen, records)
    SELECT tenant, namespace, user_id, 0, count(*) FROM memories WHERE user_id IS NOT NULL
    GROUP BY tenant, namespace, user_id;
CREATE TRIGGER user_copy_insert AFTER INSERT ON memories WHEN new.user_id IS NOT NULL BEGIN
    INSERT INTO user_copies (tenant, namespace, user_id, gen, records)
    VALUES (new.tenant, new.namespace, new.user_id, abs(random() % 4611686018427387904), 1)
    ON CONFLICT DO UPDATE SET gen = gen + 1, records = records + 1;
END;
CREATE TRIGGER user_copy_update AFTER UPDATE ON memories WHEN old.user_id IS NOT NULL BEGIN
    DELETE FROM user_copy_parts WHERE tenant = old.tenant AND namespace = old.namespace
        AND user_id = old.user_id AND record = old.rowid;
    UPDATE user_copies SET gen = gen + 1
    WHERE tenant = old.tenant AND namespace = old.namespace AND user_id = old.user_id;
END;
CREATE TRIGGER user_copy_moved AFTER UPDATE ON memories
WHEN old.user_id IS NOT new.user_id OR old.tenant IS NOT new.tenant
    OR old.namespace IS NOT new.namespace BEGIN
    INSERT INTO user_copies (tenant, namespace, user_id, gen, records)
    SELECT new.tenant, new.namespace, new.user_id, abs(random() % 4611686018427387904), 1
    WHERE new.user_id IS NOT NULL
    ON CONFLICT DO UPDATE SET gen = gen + 1, records = records + 1;
    UPDATE user_copies SET records = records - 1
    WHERE tenant = old.tenant AND namespace = old.namespace AND user_id = old.user_id;
    DELETE FROM user_copies
    WHERE tenant = old.tenant AND namespace = old.namespace AND user_id = old.user_id
        AND records <= 0;
END;
CREATE TRIGGER user_copy_delete AFTER DELETE ON memories WHEN old.user_id IS NOT NULL BEGIN
    DELETE FROM user_copy_parts WHERE tenant = old.tenant AND namespace = old.namespace
        AND user_id = old.user_id AND record = old.rowid;
    UPDATE user_copies SET gen = gen + 1, records = records - 1
    WHERE tenant = old.tenant AND namespace = old.namespace AND user_id = old.user_id;
    DELETE FROM user_copies
    WHERE tenant = old.tenant AND namespace = old.namespace AND user_id = old.user_id
        AND records <= 0;
END;
-- One user's records of a partition, in id order: a listing of one user (the history a
-- delete clears, maintenance's pages) read the whole partition through the partition's index
-- before (the planner prefers it to avoid a sort), and a user's load reads its rows from here.
-- The hash index takes the user too, so the dedupe check of a write (a hash and a user) still
-- goes to it rather than to the user's every row.
DROP INDEX IF EXISTS memories_user;
DELETE FROM deferred_indexes WHERE name = 'memories_user';
CREATE INDEX memories_user ON memories (tenant, namespace, user_id, id);
DROP INDEX IF EXISTS memories_hash;
DELETE FROM deferred_indexes WHERE name = 'memories_hash';
CREATE INDEX memories_hash ON memories (tenant, namespace, content_hash, user_id);
