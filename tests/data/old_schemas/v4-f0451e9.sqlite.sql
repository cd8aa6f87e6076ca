CREATE TABLE schema_version (
        app TEXT NOT NULL,
        version INTEGER NOT NULL,
        applied_at_ms INTEGER NOT NULL
    );
INSERT INTO "schema_version" (app, version, applied_at_ms) VALUES ('sessiontree', 1, 1796286050238);
INSERT INTO "schema_version" (app, version, applied_at_ms) VALUES ('sessiontree', 2, 1796286050238);
INSERT INTO "schema_version" (app, version, applied_at_ms) VALUES ('sessiontree', 3, 1796286050238);
INSERT INTO "schema_version" (app, version, applied_at_ms) VALUES ('sessiontree', 4, 1796286050238);
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
INSERT INTO "sessions" (id, metadata, created_us, modified_us, leaf_id, name, entry_count, message_count, first_message, parent_session_id) VALUES ('old-a', '{"systemPrompt":"be brief","cwd":"/work","team":"blue","rank":3}', 1796286050246545, 1796286050248258, '01a23afd-efc8-76d2-9a92-ab3e917ba401', 'zebra hunt', 7, 4, 'Find the Zebra crossing', NULL);
INSERT INTO "sessions" (id, metadata, created_us, modified_us, leaf_id, name, entry_count, message_count, first_message, parent_session_id) VALUES ('old-b', '{"team":"red","note":"a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note "}', 1796286050248307, 1796286050248638, NULL, NULL, 2, 1, 'hello b', NULL);
INSERT INTO "sessions" (id, metadata, created_us, modified_us, leaf_id, name, entry_count, message_count, first_message, parent_session_id) VALUES ('old-empty', '{}', 1796286050248674, 1796286050248674, NULL, NULL, 0, 0, NULL, NULL);
INSERT INTO "sessions" (id, metadata, created_us, modified_us, leaf_id, name, entry_count, message_count, first_message, parent_session_id) VALUES ('01a23afd-efc8-76d2-9a92-ab42fbcb8f56', '{"systemPrompt":"be brief","cwd":"/work","parentSessionId":"old-a","forkedFromEntryId":"01a23afd-efc7-7427-985b-9f44521b67a6","team":"blue","rank":3}', 1796286050249006, 1796286050249116, '01a23afd-efc7-7427-985b-9f44521b67a6', NULL, 4, 3, 'Find the Zebra crossing', 'old-a');
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
INSERT INTO "entries" (session_id, seq, id, parent_id, type, timestamp, target_id, body) VALUES ('old-a', 0, '01a23afd-efc6-75b1-b3a2-e8f88d31803e', NULL, 'message', '2026-12-03T08:20:50.246Z', NULL, '{"type":"message","id":"01a23afd-efc6-75b1-b3a2-e8f88d31803e","parentId":null,"timestamp":"2026-12-03T08:20:50.246Z","message":{"role":"user","content":"Find the Zebra crossing","timestamp":1796286050246}}');
INSERT INTO "entries" (session_id, seq, id, parent_id, type, timestamp, target_id, body) VALUES ('old-a', 1, '01a23afd-efc7-7427-985b-9f43f4f7d6cc', '01a23afd-efc6-75b1-b3a2-e8f88d31803e', 'message', '2026-12-03T08:20:50.247Z', NULL, '{"type":"message","id":"01a23afd-efc7-7427-985b-9f43f4f7d6cc","parentId":"01a23afd-efc6-75b1-b3a2-e8f88d31803e","timestamp":"2026-12-03T08:20:50.247Z","message":{"role":"assistant","content":[{"type":"text","text":"The zebra crossing is on Elm Street"}],"timestamp":1796286050247}}');
INSERT INTO "entries" (session_id, seq, id, parent_id, type, timestamp, target_id, body) VALUES ('old-a', 2, '01a23afd-efc7-7427-985b-9f44521b67a6', '01a23afd-efc7-7427-985b-9f43f4f7d6cc', 'message', '2026-12-03T08:20:50.247Z', NULL, '{"type":"message","id":"01a23afd-efc7-7427-985b-9f44521b67a6","parentId":"01a23afd-efc7-7427-985b-9f43f4f7d6cc","timestamp":"2026-12-03T08:20:50.247Z","message":{"role":"user","content":"and the bakery?","timestamp":1796286050247}}');
INSERT INTO "entries" (session_id, seq, id, parent_id, type, timestamp, target_id, body) VALUES ('old-a', 3, '01a23afd-efc7-7427-985b-9f45a171cf61', '01a23afd-efc7-7427-985b-9f44521b67a6', 'label', '2026-12-03T08:20:50.247Z', '01a23afd-efc7-7427-985b-9f43f4f7d6cc', '{"type":"label","id":"01a23afd-efc7-7427-985b-9f45a171cf61","parentId":"01a23afd-efc7-7427-985b-9f44521b67a6","timestamp":"2026-12-03T08:20:50.247Z","targetId":"01a23afd-efc7-7427-985b-9f43f4f7d6cc","label":"answer"}');
INSERT INTO "entries" (session_id, seq, id, parent_id, type, timestamp, target_id, body) VALUES ('old-a', 4, '01a23afd-efc7-7427-985b-9f4647d9ba63', '01a23afd-efc7-7427-985b-9f44521b67a6', 'session_info', '2026-12-03T08:20:50.247Z', NULL, '{"type":"session_info","id":"01a23afd-efc7-7427-985b-9f4647d9ba63","parentId":"01a23afd-efc7-7427-985b-9f44521b67a6","timestamp":"2026-12-03T08:20:50.247Z","name":"zebra hunt"}');
INSERT INTO "entries" (session_id, seq, id, parent_id, type, timestamp, target_id, body) VALUES ('old-a', 5, '01a23afd-efc8-76d2-9a92-ab3d3a4603b6', '01a23afd-efc7-7427-985b-9f44521b67a6', 'leaf', '2026-12-03T08:20:50.248Z', '01a23afd-efc7-7427-985b-9f43f4f7d6cc', '{"type":"leaf","id":"01a23afd-efc8-76d2-9a92-ab3d3a4603b6","parentId":"01a23afd-efc7-7427-985b-9f44521b67a6","timestamp":"2026-12-03T08:20:50.248Z","targetId":"01a23afd-efc7-7427-985b-9f43f4f7d6cc"}');
INSERT INTO "entries" (session_id, seq, id, parent_id, type, timestamp, target_id, body) VALUES ('old-a', 6, '01a23afd-efc8-76d2-9a92-ab3e917ba401', '01a23afd-efc7-7427-985b-9f43f4f7d6cc', 'message', '2026-12-03T08:20:50.248Z', NULL, '{"type":"message","id":"01a23afd-efc8-76d2-9a92-ab3e917ba401","parentId":"01a23afd-efc7-7427-985b-9f43f4f7d6cc","timestamp":"2026-12-03T08:20:50.248Z","message":{"role":"user","content":"Other branch: the museum","timestamp":1796286050248}}');
INSERT INTO "entries" (session_id, seq, id, parent_id, type, timestamp, target_id, body) VALUES ('old-b', 0, '01a23afd-efc8-76d2-9a92-ab3f934b9785', NULL, 'message', '2026-12-03T08:20:50.248Z', NULL, '{"type":"message","id":"01a23afd-efc8-76d2-9a92-ab3f934b9785","parentId":null,"timestamp":"2026-12-03T08:20:50.248Z","message":{"role":"user","content":"hello b","timestamp":1796286050248}}');
INSERT INTO "entries" (session_id, seq, id, parent_id, type, timestamp, target_id, body) VALUES ('old-b', 1, '01a23afd-efc8-76d2-9a92-ab40d81d2bb6', '01a23afd-efc8-76d2-9a92-ab3f934b9785', 'leaf', '2026-12-03T08:20:50.248Z', NULL, '{"type":"leaf","id":"01a23afd-efc8-76d2-9a92-ab40d81d2bb6","parentId":"01a23afd-efc8-76d2-9a92-ab3f934b9785","timestamp":"2026-12-03T08:20:50.248Z","targetId":null}');
INSERT INTO "entries" (session_id, seq, id, parent_id, type, timestamp, target_id, body) VALUES ('01a23afd-efc8-76d2-9a92-ab42fbcb8f56', 0, '01a23afd-efc6-75b1-b3a2-e8f88d31803e', NULL, 'message', '2026-12-03T08:20:50.246Z', NULL, '{"type":"message","id":"01a23afd-efc6-75b1-b3a2-e8f88d31803e","parentId":null,"timestamp":"2026-12-03T08:20:50.246Z","message":{"role":"user","content":"Find the Zebra crossing","timestamp":1796286050246}}');
INSERT INTO "entries" (session_id, seq, id, parent_id, type, timestamp, target_id, body) VALUES ('01a23afd-efc8-76d2-9a92-ab42fbcb8f56', 1, '01a23afd-efc7-7427-985b-9f43f4f7d6cc', '01a23afd-efc6-75b1-b3a2-e8f88d31803e', 'message', '2026-12-03T08:20:50.247Z', NULL, '{"type":"message","id":"01a23afd-efc7-7427-985b-9f43f4f7d6cc","parentId":"01a23afd-efc6-75b1-b3a2-e8f88d31803e","timestamp":"2026-12-03T08:20:50.247Z","message":{"role":"assistant","content":[{"type":"text","text":"The zebra crossing is on Elm Street"}],"timestamp":1796286050247}}');
INSERT INTO "entries" (session_id, seq, id, parent_id, type, timestamp, target_id, body) VALUES ('01a23afd-efc8-76d2-9a92-ab42fbcb8f56', 2, '01a23afd-efc7-7427-985b-9f44521b67a6', '01a23afd-efc7-7427-985b-9f43f4f7d6cc', 'message', '2026-12-03T08:20:50.247Z', NULL, '{"type":"message","id":"01a23afd-efc7-7427-985b-9f44521b67a6","parentId":"01a23afd-efc7-7427-985b-9f43f4f7d6cc","timestamp":"2026-12-03T08:20:50.247Z","message":{"role":"user","content":"and the bakery?","timestamp":1796286050247}}');
INSERT INTO "entries" (session_id, seq, id, parent_id, type, timestamp, target_id, body) VALUES ('01a23afd-efc8-76d2-9a92-ab42fbcb8f56', 3, '01a23afd-efc8-76d2-9a92-ab41a0ebcb8c', '01a23afd-efc7-7427-985b-9f44521b67a6', 'label', '2026-12-03T08:20:50.248Z', '01a23afd-efc7-7427-985b-9f43f4f7d6cc', '{"type":"label","id":"01a23afd-efc8-76d2-9a92-ab41a0ebcb8c","parentId":"01a23afd-efc7-7427-985b-9f44521b67a6","timestamp":"2026-12-03T08:20:50.248Z","targetId":"01a23afd-efc7-7427-985b-9f43f4f7d6cc","label":"answer"}');
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
INSERT INTO "session_meta" (key, value, session_id) VALUES ('cwd', '"/work"', '01a23afd-efc8-76d2-9a92-ab42fbcb8f56');
INSERT INTO "session_meta" (key, value, session_id) VALUES ('forkedFromEntryId', '"01a23afd-efc7-7427-985b-9f44521b67a6"', '01a23afd-efc8-76d2-9a92-ab42fbcb8f56');
INSERT INTO "session_meta" (key, value, session_id) VALUES ('parentSessionId', '"old-a"', '01a23afd-efc8-76d2-9a92-ab42fbcb8f56');
INSERT INTO "session_meta" (key, value, session_id) VALUES ('rank', '3', '01a23afd-efc8-76d2-9a92-ab42fbcb8f56');
INSERT INTO "session_meta" (key, value, session_id) VALUES ('systemPrompt', '"be brief"', '01a23afd-efc8-76d2-9a92-ab42fbcb8f56');
INSERT INTO "session_meta" (key, value, session_id) VALUES ('team', '"blue"', '01a23afd-efc8-76d2-9a92-ab42fbcb8f56');
INSERT INTO "session_meta" (key, value, session_id) VALUES ('cwd', '"/work"', 'old-a');
INSERT INTO "session_meta" (key, value, session_id) VALUES ('rank', '3', 'old-a');
INSERT INTO "session_meta" (key, value, session_id) VALUES ('systemPrompt', '"be brief"', 'old-a');
INSERT INTO "session_meta" (key, value, session_id) VALUES ('team', '"blue"', 'old-a');
INSERT INTO "session_meta" (key, value, session_id) VALUES ('note', '"a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note "', 'old-b');
INSERT INTO "session_meta" (key, value, session_id) VALUES ('team', '"red"', 'old-b');
CREATE INDEX session_meta_by_session ON session_meta (session_id);
CREATE VIRTUAL TABLE entries_fts USING fts5 (text, tokenize = 'trigram case_sensitive 1');
