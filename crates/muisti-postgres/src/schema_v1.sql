-- muisti on PostgreSQL, schema version 1: one table of records (memories and key-value
-- entries alike), their full-text terms and their vectors, written in one transaction.
-- Times are milliseconds since the Unix epoch (as every muisti store keeps them).
CREATE TABLE memories (
    id               text NOT NULL,
    tenant           text NOT NULL,
    namespace        text NOT NULL,
    key              text NOT NULL,
    content          text NOT NULL,
    content_is_json  boolean NOT NULL,
    category         text NOT NULL,
    scope            text NOT NULL,
    user_id          text,
    agent_id         text,
    session_id       text,
    tags             jsonb NOT NULL,
    metadata         jsonb NOT NULL,
    importance       double precision NOT NULL,
    source           text NOT NULL,
    confidence       smallint,
    content_hash     text NOT NULL,
    state            text NOT NULL,
    superseded_by    text,
    valid_from       bigint,
    valid_until      bigint,
    created_at       bigint NOT NULL,
    updated_at       bigint NOT NULL,
    last_accessed_at bigint,
    access_count     bigint NOT NULL,
    expires_at       bigint,
    embedding_model  text,
    context          text,
    version          bigint NOT NULL,
    -- The engine's tokens of the indexed text and of the context (muisti_core::text::tokenize),
    -- and their count: BM25 is computed by the engine from these, never by the database.
    terms            text[] NOT NULL,
    context_terms    text[] NOT NULL,
    doc_len          integer NOT NULL,
    embedding        vector,
    dims             integer,
    -- Ids are unique (ULIDs); the tenant leads the key so that every lookup by id is
    -- confined by the index itself, and the table can be distributed by tenant (Citus).
    PRIMARY KEY (tenant, id),
    UNIQUE (tenant, namespace, key)
);
CREATE INDEX memories_partition ON memories (tenant, namespace, id) INCLUDE (doc_len, expires_at);
CREATE INDEX memories_user ON memories (tenant, namespace, user_id, id) INCLUDE (doc_len, expires_at);
CREATE INDEX memories_hash ON memories (tenant, namespace, content_hash);
CREATE INDEX memories_terms ON memories USING gin (terms);
CREATE INDEX memories_context_terms ON memories USING gin (context_terms);
CREATE INDEX memories_expiry ON memories (expires_at) WHERE expires_at IS NOT NULL;
