-- Schema version 2: what keeps in-process copies of partitions coherent (`copies.rs`). Each
-- write transaction bumps its partitions' generations and logs the ids it changed under the
-- new generation, as its last statements; a reader compares a copy's generation with the
-- partition's and catches up from the log (a flush or an import logs `*`: reload).
CREATE TABLE IF NOT EXISTS {prefix}generations (
    tenant     VARBINARY(400) NOT NULL,
    namespace  VARBINARY(400) NOT NULL,
    generation BIGINT NOT NULL,
    PRIMARY KEY (tenant, namespace)
) ENGINE = InnoDB;

CREATE TABLE IF NOT EXISTS {prefix}changes (
    tenant     VARBINARY(400) NOT NULL,
    namespace  VARBINARY(400) NOT NULL,
    generation BIGINT NOT NULL,
    ids        LONGBLOB NOT NULL,
    PRIMARY KEY (tenant, namespace, generation)
) ENGINE = InnoDB;
