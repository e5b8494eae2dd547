-- muisti SQLite schema, version 7: each user's in-memory copy kept as prepared bytes, so the
-- first recall of a user after a restart reads one value instead of one row per memory
-- scattered over the file (a user's memories are written among everyone else's).
--
-- Every change to a user's records (of a partition) sets the copy aside and moves the row's
-- `gen` on; a load that found no copy writes the one it built only where `gen` is still
-- what its snapshot read, so a copy never holds what a later change changed. A user with
-- records has a row, and the row goes with the user's last record (a user erased keeps no
-- name here); a new row starts at a random `gen`, so a user erased and written again does
-- not meet a load of before with the same one. Access counts since a record was written
-- stay in `memory_access` and are added when a copy is read. The full-text terms are only
-- ever written with their record, in its transaction, so the record's trigger covers them.
CREATE TABLE user_copies (
    tenant    TEXT    NOT NULL,
    namespace TEXT    NOT NULL,
    user_id   TEXT    NOT NULL,
    gen       INTEGER NOT NULL,
    copy      BLOB,                                      -- NULL: to be written by a load
    PRIMARY KEY (tenant, namespace, user_id)
) WITHOUT ROWID;
INSERT INTO user_copies (tenant, namespace, user_id, gen, copy)
    SELECT DISTINCT tenant, namespace, user_id, 0, NULL FROM memories WHERE user_id IS NOT NULL;
CREATE TRIGGER user_copy_insert AFTER INSERT ON memories WHEN new.user_id IS NOT NULL BEGIN
    INSERT INTO user_copies (tenant, namespace, user_id, gen, copy)
    VALUES (new.tenant, new.namespace, new.user_id, abs(random() % 4611686018427387904), NULL)
    ON CONFLICT DO UPDATE SET gen = gen + 1, copy = NULL;
END;
CREATE TRIGGER user_copy_update AFTER UPDATE ON memories WHEN old.user_id IS NOT NULL BEGIN
    UPDATE user_copies SET gen = gen + 1, copy = NULL
    WHERE tenant = old.tenant AND namespace = old.namespace AND user_id = old.user_id;
END;
CREATE TRIGGER user_copy_moved AFTER UPDATE ON memories
WHEN old.user_id IS NOT new.user_id OR old.tenant IS NOT new.tenant
    OR old.namespace IS NOT new.namespace BEGIN
    INSERT INTO user_copies (tenant, namespace, user_id, gen, copy)
    SELECT new.tenant, new.namespace, new.user_id, abs(random() % 4611686018427387904), NULL
    WHERE new.user_id IS NOT NULL
    ON CONFLICT DO UPDATE SET gen = gen + 1, copy = NULL;
    DELETE FROM user_copies
    WHERE tenant = old.tenant AND namespace = old.namespace AND user_id = old.user_id
        AND NOT EXISTS (SELECT 1 FROM memories WHERE tenant = old.tenant
            AND user_id = old.user_id AND namespace = old.namespace);
END;
CREATE TRIGGER user_copy_delete AFTER DELETE ON memories WHEN old.user_id IS NOT NULL BEGIN
    UPDATE user_copies SET gen = gen + 1, copy = NULL
    WHERE tenant = old.tenant AND namespace = old.namespace AND user_id = old.user_id;
    DELETE FROM user_copies
    WHERE tenant = old.tenant AND namespace = old.namespace AND user_id = old.user_id
        AND NOT EXISTS (SELECT 1 FROM memories WHERE tenant = old.tenant
            AND user_id = old.user_id AND namespace = old.namespace);
END;
