-- muisti on PostgreSQL, schema version 2: the versions of partitions and their change log,
-- which keep the servers' in-process copies coherent (see copies.rs). Every write
-- transaction bumps one slot's generation of each partition it changes and logs the ids it
-- changed under the new generation ('*': all), as its last statements.
CREATE TABLE generations (
    tenant     text NOT NULL,
    namespace  text NOT NULL,
    slot       smallint NOT NULL,
    generation bigint NOT NULL,
    PRIMARY KEY (tenant, namespace, slot)
);
CREATE TABLE changes (
    tenant     text NOT NULL,
    namespace  text NOT NULL,
    slot       smallint NOT NULL,
    generation bigint NOT NULL,
    ids        text[] NOT NULL,
    PRIMARY KEY (tenant, namespace, slot, generation)
);
