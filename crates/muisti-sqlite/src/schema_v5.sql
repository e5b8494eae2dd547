-- muisti SQLite schema, version 5: listings of one scope's memories read only those rows,
-- in id order, instead of the partition's: one user's (the agent reads the user's
-- declarative entries on every message) and one conversation's (its scratch memories go
-- after every turn).
CREATE INDEX memories_scope_user ON memories (tenant, namespace, scope, user_id, id);
CREATE INDEX memories_scope_session ON memories (tenant, namespace, scope, session_id, id);
