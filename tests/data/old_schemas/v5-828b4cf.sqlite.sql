CREATE TABLE schema_version (
        app TEXT NOT NULL,
        version INTEGER NOT NULL,
        applied_at_ms INTEGER NOT NULL
    );
INSERT INTO "schema_version" (app, version, applied_at_ms) VALUES ('sessiontree', 1, 1796286054711);
INSERT INTO "schema_version" (app, version, applied_at_ms) VALUES ('sessiontree', 2, 1796286054711);
INSERT INTO "schema_version" (app, version, applied_at_ms) VALUES ('sessiontree', 3, 1796286054712);
INSERT INTO "schema_version" (app, version, applied_at_ms) VALUES ('sessiontree', 4, 1796286054712);
INSERT INTO "schema_version" (app, version, applied_at_ms) VALUES ('sessiontree', 5, 1796286054712);
CREATE TABLE sessions (
        id TEXT PRIMARY KEY,
        metadata TEXT NOT NULL,
        created_us INTEGER NOT NULL,
        modified_us INTEGER NOT NULL,
        leaf_id TEXT,
        name TEXT,
        entry_count INTEGER NOT NULL DEFAULT 0,
        message_count INTEGER NOT NULL DEFAULT 0,
        first_message TEXT,
        parent_session_id TEXT
    );
INSERT INTO "sessions" (id, metadata, created_us, modified_us, leaf_id, name, entry_count, message_count, first_message, parent_session_id) VALUES ('old-a', '{"systemPrompt":"be brief","cwd":"/work","team":"blue","rank":3}', 1796286054730477, 1796286054772383, '01a23afe-0174-703c-92f5-15858d70ff90', 'zebra hunt', 7, 4, 'Find the Zebra crossing', NULL);
INSERT INTO "sessions" (id, metadata, created_us, modified_us, leaf_id, name, entry_count, message_count, first_message, parent_session_id) VALUES ('old-b', '{"team":"red","note":"a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note "}', 1796286054772448, 1796286054772693, NULL, NULL, 2, 1, 'hello b', NULL);
INSERT INTO "sessions" (id, metadata, created_us, modified_us, leaf_id, name, entry_count, message_count, first_message, parent_session_id) VALUES ('old-empty', '{}', 1796286054772734, 1796286054772734, NULL, NULL, 0, 0, NULL, NULL);
INSERT INTO "sessions" (id, metadata, created_us, modified_us, leaf_id, name, entry_count, message_count, first_message, parent_session_id) VALUES ('01a23afe-0175-76c0-b509-91c27c65d610', '{"systemPrompt":"be brief","cwd":"/work","parentSessionId":"old-a","forkedFromEntryId":"01a23afe-0172-7237-8c11-c8bdb860a0be","team":"blue","rank":3}', 1796286054773261, 1796286054773261, '01a23afe-0172-7237-8c11-c8bdb860a0be', NULL, 4, 3, 'Find the Zebra crossing', 'old-a');
CREATE INDEX sessions_by_modified ON sessions (modified_us DESC, id DESC);
CREATE TABLE entries (
        session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
        seq INTEGER NOT NULL,
        id TEXT NOT NULL,
        parent_id TEXT,
        type TEXT NOT NULL,
        timestamp TEXT NOT NULL,
        target_id TEXT,
        body TEXT NOT NULL,
        PRIMARY KEY (session_id, seq),
        UNIQUE (session_id, id)
    );
INSERT INTO "entries" (session_id, seq, id, parent_id, type, timestamp, target_id, body) VALUES ('old-a', 0, '01a23afe-015c-75c5-9743-b59822fc6492', NULL, 'message', '2026-12-03T08:20:54.748Z', NULL, '{"type":"message","id":"01a23afe-015c-75c5-9743-b59822fc6492","parentId":null,"timestamp":"2026-12-03T08:20:54.748Z","message":{"role":"user","content":"Find the Zebra crossing","timestamp":1796286054736}}');
INSERT INTO "entries" (session_id, seq, id, parent_id, type, timestamp, target_id, body) VALUES ('old-a', 1, '01a23afe-0172-7237-8c11-c8bc6a67cef7', '01a23afe-015c-75c5-9743-b59822fc6492', 'message', '2026-12-03T08:20:54.770Z', NULL, '{"type":"message","id":"01a23afe-0172-7237-8c11-c8bc6a67cef7","parentId":"01a23afe-015c-75c5-9743-b59822fc6492","timestamp":"2026-12-03T08:20:54.770Z","message":{"role":"assistant","content":[{"type":"text","text":"The zebra crossing is on Elm Street"}],"timestamp":1796286054770}}');
INSERT INTO "entries" (session_id, seq, id, parent_id, type, timestamp, target_id, body) VALUES ('old-a', 2, '01a23afe-0172-7237-8c11-c8bdb860a0be', '01a23afe-0172-7237-8c11-c8bc6a67cef7', 'message', '2026-12-03T08:20:54.770Z', NULL, '{"type":"message","id":"01a23afe-0172-7237-8c11-c8bdb860a0be","parentId":"01a23afe-0172-7237-8c11-c8bc6a67cef7","timestamp":"2026-12-03T08:20:54.770Z","message":{"role":"user","content":"and the bakery?","timestamp":1796286054770}}');
INSERT INTO "entries" (session_id, seq, id, parent_id, type, timestamp, target_id, body) VALUES ('old-a', 3, '01a23afe-0173-76b2-8377-bb1af592b66b', '01a23afe-0172-7237-8c11-c8bdb860a0be', 'label', '2026-12-03T08:20:54.771Z', '01a23afe-0172-7237-8c11-c8bc6a67cef7', '{"type":"label","id":"01a23afe-0173-76b2-8377-bb1af592b66b","parentId":"01a23afe-0172-7237-8c11-c8bdb860a0be","timestamp":"2026-12-03T08:20:54.771Z","targetId":"01a23afe-0172-7237-8c11-c8bc6a67cef7","label":"answer"}');
INSERT INTO "entries" (session_id, seq, id, parent_id, type, timestamp, target_id, body) VALUES ('old-a', 4, '01a23afe-0173-76b2-8377-bb1b414b1759', '01a23afe-0172-7237-8c11-c8bdb860a0be', 'session_info', '2026-12-03T08:20:54.771Z', NULL, '{"type":"session_info","id":"01a23afe-0173-76b2-8377-bb1b414b1759","parentId":"01a23afe-0172-7237-8c11-c8bdb860a0be","timestamp":"2026-12-03T08:20:54.771Z","name":"zebra hunt"}');
INSERT INTO "entries" (session_id, seq, id, parent_id, type, timestamp, target_id, body) VALUES ('old-a', 5, '01a23afe-0174-703c-92f5-1584eb3efd06', '01a23afe-0172-7237-8c11-c8bdb860a0be', 'leaf', '2026-12-03T08:20:54.772Z', '01a23afe-0172-7237-8c11-c8bc6a67cef7', '{"type":"leaf","id":"01a23afe-0174-703c-92f5-1584eb3efd06","parentId":"01a23afe-0172-7237-8c11-c8bdb860a0be","timestamp":"2026-12-03T08:20:54.772Z","targetId":"01a23afe-0172-7237-8c11-c8bc6a67cef7"}');
INSERT INTO "entries" (session_id, seq, id, parent_id, type, timestamp, target_id, body) VALUES ('old-a', 6, '01a23afe-0174-703c-92f5-15858d70ff90', '01a23afe-0172-7237-8c11-c8bc6a67cef7', 'message', '2026-12-03T08:20:54.772Z', NULL, '{"type":"message","id":"01a23afe-0174-703c-92f5-15858d70ff90","parentId":"01a23afe-0172-7237-8c11-c8bc6a67cef7","timestamp":"2026-12-03T08:20:54.772Z","message":{"role":"user","content":"Other branch: the museum","timestamp":1796286054772}}');
INSERT INTO "entries" (session_id, seq, id, parent_id, type, timestamp, target_id, body) VALUES ('old-b', 0, '01a23afe-0174-703c-92f5-15864d89c025', NULL, 'message', '2026-12-03T08:20:54.772Z', NULL, '{"type":"message","id":"01a23afe-0174-703c-92f5-15864d89c025","parentId":null,"timestamp":"2026-12-03T08:20:54.772Z","message":{"role":"user","content":"hello b","timestamp":1796286054772}}');
INSERT INTO "entries" (session_id, seq, id, parent_id, type, timestamp, target_id, body) VALUES ('old-b', 1, '01a23afe-0174-703c-92f5-1587306824a8', '01a23afe-0174-703c-92f5-15864d89c025', 'leaf', '2026-12-03T08:20:54.772Z', NULL, '{"type":"leaf","id":"01a23afe-0174-703c-92f5-1587306824a8","parentId":"01a23afe-0174-703c-92f5-15864d89c025","timestamp":"2026-12-03T08:20:54.772Z","targetId":null}');
INSERT INTO "entries" (session_id, seq, id, parent_id, type, timestamp, target_id, body) VALUES ('01a23afe-0175-76c0-b509-91c27c65d610', 0, '01a23afe-015c-75c5-9743-b59822fc6492', NULL, 'message', '2026-12-03T08:20:54.748Z', NULL, '{"type":"message","id":"01a23afe-015c-75c5-9743-b59822fc6492","parentId":null,"timestamp":"2026-12-03T08:20:54.748Z","message":{"role":"user","content":"Find the Zebra crossing","timestamp":1796286054736}}');
INSERT INTO "entries" (session_id, seq, id, parent_id, type, timestamp, target_id, body) VALUES ('01a23afe-0175-76c0-b509-91c27c65d610', 1, '01a23afe-0172-7237-8c11-c8bc6a67cef7', '01a23afe-015c-75c5-9743-b59822fc6492', 'message', '2026-12-03T08:20:54.770Z', NULL, '{"type":"message","id":"01a23afe-0172-7237-8c11-c8bc6a67cef7","parentId":"01a23afe-015c-75c5-9743-b59822fc6492","timestamp":"2026-12-03T08:20:54.770Z","message":{"role":"assistant","content":[{"type":"text","text":"The zebra crossing is on Elm Street"}],"timestamp":1796286054770}}');
INSERT INTO "entries" (session_id, seq, id, parent_id, type, timestamp, target_id, body) VALUES ('01a23afe-0175-76c0-b509-91c27c65d610', 2, '01a23afe-0172-7237-8c11-c8bdb860a0be', '01a23afe-0172-7237-8c11-c8bc6a67cef7', 'message', '2026-12-03T08:20:54.770Z', NULL, '{"type":"message","id":"01a23afe-0172-7237-8c11-c8bdb860a0be","parentId":"01a23afe-0172-7237-8c11-c8bc6a67cef7","timestamp":"2026-12-03T08:20:54.770Z","message":{"role":"user","content":"and the bakery?","timestamp":1796286054770}}');
INSERT INTO "entries" (session_id, seq, id, parent_id, type, timestamp, target_id, body) VALUES ('01a23afe-0175-76c0-b509-91c27c65d610', 3, '01a23afe-0175-76c0-b509-91c1c958fb32', '01a23afe-0172-7237-8c11-c8bdb860a0be', 'label', '2026-12-03T08:20:54.773Z', '01a23afe-0172-7237-8c11-c8bc6a67cef7', '{"type":"label","id":"01a23afe-0175-76c0-b509-91c1c958fb32","parentId":"01a23afe-0172-7237-8c11-c8bdb860a0be","timestamp":"2026-12-03T08:20:54.773Z","targetId":"01a23afe-0172-7237-8c11-c8bc6a67cef7","label":"answer"}');
CREATE INDEX entries_labels ON entries (session_id, target_id, seq) WHERE type = 'label';
CREATE INDEX entries_names ON entries (session_id, seq) WHERE type = 'session_info';
CREATE TABLE search_index_state (indexed_upto INTEGER NOT NULL);
INSERT INTO "search_index_state" (indexed_upto) VALUES (0);
CREATE TABLE session_meta (
        key TEXT NOT NULL,
        value TEXT NOT NULL,
        session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
        PRIMARY KEY (key, value, session_id)
    ) WITHOUT ROWID;
INSERT INTO "session_meta" (key, value, session_id) VALUES ('cwd', '"/work"', '01a23afe-0175-76c0-b509-91c27c65d610');
INSERT INTO "session_meta" (key, value, session_id) VALUES ('forkedFromEntryId', '"01a23afe-0172-7237-8c11-c8bdb860a0be"', '01a23afe-0175-76c0-b509-91c27c65d610');
INSERT INTO "session_meta" (key, value, session_id) VALUES ('parentSessionId', '"old-a"', '01a23afe-0175-76c0-b509-91c27c65d610');
INSERT INTO "session_meta" (key, value, session_id) VALUES ('rank', '3', '01a23afe-0175-76c0-b509-91c27c65d610');
INSERT INTO "session_meta" (key, value, session_id) VALUES ('systemPrompt', '"be brief"', '01a23afe-0175-76c0-b509-91c27c65d610');
INSERT INTO "session_meta" (key, value, session_id) VALUES ('team', '"blue"', '01a23afe-0175-76c0-b509-91c27c65d610');
INSERT INTO "session_meta" (key, value, session_id) VALUES ('cwd', '"/work"', 'old-a');
INSERT INTO "session_meta" (key, value, session_id) VALUES ('rank', '3', 'old-a');
INSERT INTO "session_meta" (key, value, session_id) VALUES ('systemPrompt', '"be brief"', 'old-a');
INSERT INTO "session_meta" (key, value, session_id) VALUES ('team', '"blue"', 'old-a');
INSERT INTO "session_meta" (key, value, session_id) VALUES ('note', '"a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note "', 'old-b');
INSERT INTO "session_meta" (key, value, session_id) VALUES ('team', '"red"', 'old-b');
CREATE INDEX session_meta_by_session ON session_meta (session_id);
CREATE VIRTUAL TABLE entries_fts USING fts5 (text, tokenize = 'trigram case_sensitive 1');
