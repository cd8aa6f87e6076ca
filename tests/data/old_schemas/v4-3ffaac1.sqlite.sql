CREATE TABLE schema_version (
        app TEXT NOT NULL,
        version INTEGER NOT NULL,
        applied_at_ms INTEGER NOT NULL
    );
INSERT INTO "schema_version" (app, version, applied_at_ms) VALUES ('sessiontree', 1, 1796286052372);
INSERT INTO "schema_version" (app, version, applied_at_ms) VALUES ('sessiontree', 2, 1796286052372);
INSERT INTO "schema_version" (app, version, applied_at_ms) VALUES ('sessiontree', 3, 1796286052372);
INSERT INTO "schema_version" (app, version, applied_at_ms) VALUES ('sessiontree', 4, 1796286052372);
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
INSERT INTO "sessions" (id, metadata, created_us, modified_us, leaf_id, name, entry_count, message_count, first_message, parent_session_id) VALUES ('old-a', '{"systemPrompt":"be brief","cwd":"/work","team":"blue","rank":3}', 1796286052387336, 1796286052429977, '01a23afd-f84d-73ca-be52-2b41ed36e154', 'zebra hunt', 7, 4, 'Find the Zebra crossing', NULL);
INSERT INTO "sessions" (id, metadata, created_us, modified_us, leaf_id, name, entry_count, message_count, first_message, parent_session_id) VALUES ('old-b', '{"team":"red","note":"a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note "}', 1796286052430044, 1796286052430295, NULL, NULL, 2, 1, 'hello b', NULL);
INSERT INTO "sessions" (id, metadata, created_us, modified_us, leaf_id, name, entry_count, message_count, first_message, parent_session_id) VALUES ('old-empty', '{}', 1796286052430332, 1796286052430332, NULL, NULL, 0, 0, NULL, NULL);
INSERT INTO "sessions" (id, metadata, created_us, modified_us, leaf_id, name, entry_count, message_count, first_message, parent_session_id) VALUES ('01a23afd-f84e-722d-a075-edd45d5fa638', '{"systemPrompt":"be brief","cwd":"/work","parentSessionId":"old-a","forkedFromEntryId":"01a23afd-f84c-7439-8224-caac4654c211","team":"blue","rank":3}', 1796286052430669, 1796286052430669, '01a23afd-f84c-7439-8224-caac4654c211', NULL, 4, 3, 'Find the Zebra crossing', 'old-a');
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
INSERT INTO "entries" (session_id, seq, id, parent_id, type, timestamp, target_id, body) VALUES ('old-a', 0, '01a23afd-f83c-75b6-9a3b-b76c9982c7b8', NULL, 'message', '2026-12-03T08:20:52.412Z', NULL, '{"type":"message","id":"01a23afd-f83c-75b6-9a3b-b76c9982c7b8","parentId":null,"timestamp":"2026-12-03T08:20:52.412Z","message":{"role":"user","content":"Find the Zebra crossing","timestamp":1796286052397}}');
INSERT INTO "entries" (session_id, seq, id, parent_id, type, timestamp, target_id, body) VALUES ('old-a', 1, '01a23afd-f84c-7439-8224-caabac33e959', '01a23afd-f83c-75b6-9a3b-b76c9982c7b8', 'message', '2026-12-03T08:20:52.428Z', NULL, '{"type":"message","id":"01a23afd-f84c-7439-8224-caabac33e959","parentId":"01a23afd-f83c-75b6-9a3b-b76c9982c7b8","timestamp":"2026-12-03T08:20:52.428Z","message":{"role":"assistant","content":[{"type":"text","text":"The zebra crossing is on Elm Street"}],"timestamp":1796286052428}}');
INSERT INTO "entries" (session_id, seq, id, parent_id, type, timestamp, target_id, body) VALUES ('old-a', 2, '01a23afd-f84c-7439-8224-caac4654c211', '01a23afd-f84c-7439-8224-caabac33e959', 'message', '2026-12-03T08:20:52.428Z', NULL, '{"type":"message","id":"01a23afd-f84c-7439-8224-caac4654c211","parentId":"01a23afd-f84c-7439-8224-caabac33e959","timestamp":"2026-12-03T08:20:52.428Z","message":{"role":"user","content":"and the bakery?","timestamp":1796286052428}}');
INSERT INTO "entries" (session_id, seq, id, parent_id, type, timestamp, target_id, body) VALUES ('old-a', 3, '01a23afd-f84c-7439-8224-caad49fe179b', '01a23afd-f84c-7439-8224-caac4654c211', 'label', '2026-12-03T08:20:52.428Z', '01a23afd-f84c-7439-8224-caabac33e959', '{"type":"label","id":"01a23afd-f84c-7439-8224-caad49fe179b","parentId":"01a23afd-f84c-7439-8224-caac4654c211","timestamp":"2026-12-03T08:20:52.428Z","targetId":"01a23afd-f84c-7439-8224-caabac33e959","label":"answer"}');
INSERT INTO "entries" (session_id, seq, id, parent_id, type, timestamp, target_id, body) VALUES ('old-a', 4, '01a23afd-f84d-73ca-be52-2b3f7fb1833e', '01a23afd-f84c-7439-8224-caac4654c211', 'session_info', '2026-12-03T08:20:52.429Z', NULL, '{"type":"session_info","id":"01a23afd-f84d-73ca-be52-2b3f7fb1833e","parentId":"01a23afd-f84c-7439-8224-caac4654c211","timestamp":"2026-12-03T08:20:52.429Z","name":"zebra hunt"}');
INSERT INTO "entries" (session_id, seq, id, parent_id, type, timestamp, target_id, body) VALUES ('old-a', 5, '01a23afd-f84d-73ca-be52-2b4021893161', '01a23afd-f84c-7439-8224-caac4654c211', 'leaf', '2026-12-03T08:20:52.429Z', '01a23afd-f84c-7439-8224-caabac33e959', '{"type":"leaf","id":"01a23afd-f84d-73ca-be52-2b4021893161","parentId":"01a23afd-f84c-7439-8224-caac4654c211","timestamp":"2026-12-03T08:20:52.429Z","targetId":"01a23afd-f84c-7439-8224-caabac33e959"}');
INSERT INTO "entries" (session_id, seq, id, parent_id, type, timestamp, target_id, body) VALUES ('old-a', 6, '01a23afd-f84d-73ca-be52-2b41ed36e154', '01a23afd-f84c-7439-8224-caabac33e959', 'message', '2026-12-03T08:20:52.429Z', NULL, '{"type":"message","id":"01a23afd-f84d-73ca-be52-2b41ed36e154","parentId":"01a23afd-f84c-7439-8224-caabac33e959","timestamp":"2026-12-03T08:20:52.429Z","message":{"role":"user","content":"Other branch: the museum","timestamp":1796286052429}}');
INSERT INTO "entries" (session_id, seq, id, parent_id, type, timestamp, target_id, body) VALUES ('old-b', 0, '01a23afd-f84e-722d-a075-edd142ba1448', NULL, 'message', '2026-12-03T08:20:52.430Z', NULL, '{"type":"message","id":"01a23afd-f84e-722d-a075-edd142ba1448","parentId":null,"timestamp":"2026-12-03T08:20:52.430Z","message":{"role":"user","content":"hello b","timestamp":1796286052430}}');
INSERT INTO "entries" (session_id, seq, id, parent_id, type, timestamp, target_id, body) VALUES ('old-b', 1, '01a23afd-f84e-722d-a075-edd2bce40f9d', '01a23afd-f84e-722d-a075-edd142ba1448', 'leaf', '2026-12-03T08:20:52.430Z', NULL, '{"type":"leaf","id":"01a23afd-f84e-722d-a075-edd2bce40f9d","parentId":"01a23afd-f84e-722d-a075-edd142ba1448","timestamp":"2026-12-03T08:20:52.430Z","targetId":null}');
INSERT INTO "entries" (session_id, seq, id, parent_id, type, timestamp, target_id, body) VALUES ('01a23afd-f84e-722d-a075-edd45d5fa638', 0, '01a23afd-f83c-75b6-9a3b-b76c9982c7b8', NULL, 'message', '2026-12-03T08:20:52.412Z', NULL, '{"type":"message","id":"01a23afd-f83c-75b6-9a3b-b76c9982c7b8","parentId":null,"timestamp":"2026-12-03T08:20:52.412Z","message":{"role":"user","content":"Find the Zebra crossing","timestamp":1796286052397}}');
INSERT INTO "entries" (session_id, seq, id, parent_id, type, timestamp, target_id, body) VALUES ('01a23afd-f84e-722d-a075-edd45d5fa638', 1, '01a23afd-f84c-7439-8224-caabac33e959', '01a23afd-f83c-75b6-9a3b-b76c9982c7b8', 'message', '2026-12-03T08:20:52.428Z', NULL, '{"type":"message","id":"01a23afd-f84c-7439-8224-caabac33e959","parentId":"01a23afd-f83c-75b6-9a3b-b76c9982c7b8","timestamp":"2026-12-03T08:20:52.428Z","message":{"role":"assistant","content":[{"type":"text","text":"The zebra crossing is on Elm Street"}],"timestamp":1796286052428}}');
INSERT INTO "entries" (session_id, seq, id, parent_id, type, timestamp, target_id, body) VALUES ('01a23afd-f84e-722d-a075-edd45d5fa638', 2, '01a23afd-f84c-7439-8224-caac4654c211', '01a23afd-f84c-7439-8224-caabac33e959', 'message', '2026-12-03T08:20:52.428Z', NULL, '{"type":"message","id":"01a23afd-f84c-7439-8224-caac4654c211","parentId":"01a23afd-f84c-7439-8224-caabac33e959","timestamp":"2026-12-03T08:20:52.428Z","message":{"role":"user","content":"and the bakery?","timestamp":1796286052428}}');
INSERT INTO "entries" (session_id, seq, id, parent_id, type, timestamp, target_id, body) VALUES ('01a23afd-f84e-722d-a075-edd45d5fa638', 3, '01a23afd-f84e-722d-a075-edd37b127a0f', '01a23afd-f84c-7439-8224-caac4654c211', 'label', '2026-12-03T08:20:52.430Z', '01a23afd-f84c-7439-8224-caabac33e959', '{"type":"label","id":"01a23afd-f84e-722d-a075-edd37b127a0f","parentId":"01a23afd-f84c-7439-8224-caac4654c211","timestamp":"2026-12-03T08:20:52.430Z","targetId":"01a23afd-f84c-7439-8224-caabac33e959","label":"answer"}');
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
INSERT INTO "session_meta" (key, value, session_id) VALUES ('cwd', '"/work"', '01a23afd-f84e-722d-a075-edd45d5fa638');
INSERT INTO "session_meta" (key, value, session_id) VALUES ('forkedFromEntryId', '"01a23afd-f84c-7439-8224-caac4654c211"', '01a23afd-f84e-722d-a075-edd45d5fa638');
INSERT INTO "session_meta" (key, value, session_id) VALUES ('parentSessionId', '"old-a"', '01a23afd-f84e-722d-a075-edd45d5fa638');
INSERT INTO "session_meta" (key, value, session_id) VALUES ('rank', '3', '01a23afd-f84e-722d-a075-edd45d5fa638');
INSERT INTO "session_meta" (key, value, session_id) VALUES ('systemPrompt', '"be brief"', '01a23afd-f84e-722d-a075-edd45d5fa638');
INSERT INTO "session_meta" (key, value, session_id) VALUES ('team', '"blue"', '01a23afd-f84e-722d-a075-edd45d5fa638');
INSERT INTO "session_meta" (key, value, session_id) VALUES ('cwd', '"/work"', 'old-a');
INSERT INTO "session_meta" (key, value, session_id) VALUES ('rank', '3', 'old-a');
INSERT INTO "session_meta" (key, value, session_id) VALUES ('systemPrompt', '"be brief"', 'old-a');
INSERT INTO "session_meta" (key, value, session_id) VALUES ('team', '"blue"', 'old-a');
INSERT INTO "session_meta" (key, value, session_id) VALUES ('note', '"a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note "', 'old-b');
INSERT INTO "session_meta" (key, value, session_id) VALUES ('team', '"red"', 'old-b');
CREATE INDEX session_meta_by_session ON session_meta (session_id);
CREATE VIRTUAL TABLE entries_fts USING fts5 (text, tokenize = 'trigram case_sensitive 1');
