-- muisti on MySQL 8 / MariaDB 10.11+, schema version 1: one table of records (memories and
-- key-value entries alike) with their vectors, and one of full-text postings, written in one
-- transaction. `{prefix}` is the URL's table prefix. Text is stored as bytes (VARBINARY,
-- BLOB): names compare exactly, without collations or trailing-space padding. Times are
-- milliseconds since the Unix epoch (as every muisti store keeps them).
CREATE TABLE IF NOT EXISTS {prefix}memories (
    id               VARBINARY(26) NOT NULL,
    tenant           VARBINARY(400) NOT NULL,
    namespace        VARBINARY(400) NOT NULL,
    `key`            VARBINARY(2048) NOT NULL,
    content          LONGBLOB NOT NULL,
    content_is_json  BOOLEAN NOT NULL,
    category         BLOB NOT NULL,
    scope            VARBINARY(32) NOT NULL,
    user_id          VARBINARY(1024),
    agent_id         VARBINARY(1024),
    session_id       VARBINARY(1024),
    tags             BLOB NOT NULL,
    metadata         LONGBLOB NOT NULL,
    importance       DOUBLE NOT NULL,
    source           VARBINARY(32) NOT NULL,
    confidence       SMALLINT,
    content_hash     VARBINARY(128) NOT NULL,
    state            VARBINARY(16) NOT NULL,
    superseded_by    VARBINARY(26),
    valid_from       BIGINT,
    valid_until      BIGINT,
    created_at       BIGINT NOT NULL,
    updated_at       BIGINT NOT NULL,
    last_accessed_at BIGINT,
    access_count     BIGINT NOT NULL,
    expires_at       BIGINT,
    embedding_model  BLOB,
    context          LONGBLOB,
    version          BIGINT NOT NULL,
    -- Terms in the indexed text and the context (muisti_core::text::tokenize): BM25's
    -- document length.
    doc_len          INT NOT NULL,
    -- Little-endian f32s; the engine compares them.
    embedding        LONGBLOB,
    dims             INT,
    -- Ids are unique (ULIDs); the tenant leads every key so that a lookup by id is confined
    -- by the index itself.
    PRIMARY KEY (tenant, id),
    UNIQUE KEY memories_key (tenant, namespace, `key`),
    KEY memories_partition (tenant, namespace, id),
    KEY memories_user (tenant, namespace, user_id, id),
    KEY memories_hash (tenant, namespace, content_hash),
    KEY memories_expiry (expires_at)
) ENGINE = InnoDB ROW_FORMAT = DYNAMIC;

-- One row per distinct term of a record: how often it occurs in the indexed text (`tf`) and
-- in the context (`ctx_tf`). A term longer than 64 bytes is kept as its first 40 bytes and
-- a hash (see `term_key`). Deleting a record deletes its postings.
CREATE TABLE IF NOT EXISTS {prefix}postings (
    tenant    VARBINARY(400) NOT NULL,
    namespace VARBINARY(400) NOT NULL,
    term      VARBINARY(80) NOT NULL,
    id        VARBINARY(26) NOT NULL,
    tf        INT NOT NULL,
    ctx_tf    INT NOT NULL,
    PRIMARY KEY (tenant, namespace, term, id),
    KEY postings_record (tenant, id),
    CONSTRAINT {prefix}postings_record FOREIGN KEY (tenant, id)
        REFERENCES {prefix}memories (tenant, id) ON DELETE CASCADE
) ENGINE = InnoDB ROW_FORMAT = DYNAMIC;
