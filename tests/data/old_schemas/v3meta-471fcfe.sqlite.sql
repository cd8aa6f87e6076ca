CREATE TABLE schema_version (
        app TEXT NOT NULL,
        version INTEGER NOT NULL,
        applied_at_ms INTEGER NOT NULL
    );
INSERT INTO "schema_version" (app, version, applied_at_ms) VALUES ('sessiontree', 1, 1796286339456);
INSERT INTO "schema_version" (app, version, applied_at_ms) VALUES ('sessiontree', 2, 1796286339456);
INSERT INTO "schema_version" (app, version, applied_at_ms) VALUES ('sessiontree', 3, 1796286339456);
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
INSERT INTO "sessions" (id, metadata, created_us, modified_us, leaf_id, name, entry_count, message_count, first_message, parent_session_id) VALUES ('old-a', '{"systemPrompt":"be brief","cwd":"/work","team":"blue","rank":3}', 1796286339465583, 1796286339471885, '01a23b02-598f-70e9-835e-39a329af0e26', 'zebra hunt', 7, 4, 'Find the Zebra crossing', NULL);
INSERT INTO "sessions" (id, metadata, created_us, modified_us, leaf_id, name, entry_count, message_count, first_message, parent_session_id) VALUES ('old-b', '{"team":"red","note":"a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note "}', 1796286339471951, 1796286339472240, NULL, NULL, 2, 1, 'hello b', NULL);
INSERT INTO "sessions" (id, metadata, created_us, modified_us, leaf_id, name, entry_count, message_count, first_message, parent_session_id) VALUES ('old-empty', '{}', 1796286339472277, 1796286339472277, NULL, NULL, 0, 0, NULL, NULL);
INSERT INTO "sessions" (id, metadata, created_us, modified_us, leaf_id, name, entry_count, message_count, first_message, parent_session_id) VALUES ('01a23b02-5990-735c-bf04-56ee3d83a5ac', '{"systemPrompt":"be brief","cwd":"/work","parentSessionId":"old-a","forkedFromEntryId":"01a23b02-598a-777c-b94f-04bf8425f702","team":"blue","rank":3}', 1796286339472640, 1796286339472876, '01a23b02-598a-777c-b94f-04bf8425f702', NULL, 4, 3, 'Find the Zebra crossing', 'old-a');
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
INSERT INTO "entries" (session_id, seq, id, parent_id, type, timestamp, target_id, body) VALUES ('old-a', 0, '01a23b02-5989-746a-8bf7-2d68e0f122cd', NULL, 'message', '2026-12-03T08:25:39.465Z', NULL, '{"type":"message","id":"01a23b02-5989-746a-8bf7-2d68e0f122cd","parentId":null,"timestamp":"2026-12-03T08:25:39.465Z","message":{"role":"user","content":"Find the Zebra crossing","timestamp":1796286339465}}');
INSERT INTO "entries" (session_id, seq, id, parent_id, type, timestamp, target_id, body) VALUES ('old-a', 1, '01a23b02-598a-777c-b94f-04be0dcf0021', '01a23b02-5989-746a-8bf7-2d68e0f122cd', 'message', '2026-12-03T08:25:39.466Z', NULL, '{"type":"message","id":"01a23b02-598a-777c-b94f-04be0dcf0021","parentId":"01a23b02-5989-746a-8bf7-2d68e0f122cd","timestamp":"2026-12-03T08:25:39.466Z","message":{"role":"assistant","content":[{"type":"text","text":"The zebra crossing is on Elm Street"}],"timestamp":1796286339466}}');
INSERT INTO "entries" (session_id, seq, id, parent_id, type, timestamp, target_id, body) VALUES ('old-a', 2, '01a23b02-598a-777c-b94f-04bf8425f702', '01a23b02-598a-777c-b94f-04be0dcf0021', 'message', '2026-12-03T08:25:39.466Z', NULL, '{"type":"message","id":"01a23b02-598a-777c-b94f-04bf8425f702","parentId":"01a23b02-598a-777c-b94f-04be0dcf0021","timestamp":"2026-12-03T08:25:39.466Z","message":{"role":"user","content":"and the bakery?","timestamp":1796286339466}}');
INSERT INTO "entries" (session_id, seq, id, parent_id, type, timestamp, target_id, body) VALUES ('old-a', 3, '01a23b02-598a-777c-b94f-04c0b79c72ca', '01a23b02-598a-777c-b94f-04bf8425f702', 'label', '2026-12-03T08:25:39.466Z', '01a23b02-598a-777c-b94f-04be0dcf0021', '{"type":"label","id":"01a23b02-598a-777c-b94f-04c0b79c72ca","parentId":"01a23b02-598a-777c-b94f-04bf8425f702","timestamp":"2026-12-03T08:25:39.466Z","targetId":"01a23b02-598a-777c-b94f-04be0dcf0021","label":"answer"}');
INSERT INTO "entries" (session_id, seq, id, parent_id, type, timestamp, target_id, body) VALUES ('old-a', 4, '01a23b02-598b-70cc-a6c7-786b1af80bf6', '01a23b02-598a-777c-b94f-04bf8425f702', 'session_info', '2026-12-03T08:25:39.467Z', NULL, '{"type":"session_info","id":"01a23b02-598b-70cc-a6c7-786b1af80bf6","parentId":"01a23b02-598a-777c-b94f-04bf8425f702","timestamp":"2026-12-03T08:25:39.467Z","name":"zebra hunt"}');
INSERT INTO "entries" (session_id, seq, id, parent_id, type, timestamp, target_id, body) VALUES ('old-a', 5, '01a23b02-598f-70e9-835e-39a212763e2c', '01a23b02-598a-777c-b94f-04bf8425f702', 'leaf', '2026-12-03T08:25:39.471Z', '01a23b02-598a-777c-b94f-04be0dcf0021', '{"type":"leaf","id":"01a23b02-598f-70e9-835e-39a212763e2c","parentId":"01a23b02-598a-777c-b94f-04bf8425f702","timestamp":"2026-12-03T08:25:39.471Z","targetId":"01a23b02-598a-777c-b94f-04be0dcf0021"}');
INSERT INTO "entries" (session_id, seq, id, parent_id, type, timestamp, target_id, body) VALUES ('old-a', 6, '01a23b02-598f-70e9-835e-39a329af0e26', '01a23b02-598a-777c-b94f-04be0dcf0021', 'message', '2026-12-03T08:25:39.471Z', NULL, '{"type":"message","id":"01a23b02-598f-70e9-835e-39a329af0e26","parentId":"01a23b02-598a-777c-b94f-04be0dcf0021","timestamp":"2026-12-03T08:25:39.471Z","message":{"role":"user","content":"Other branch: the museum","timestamp":1796286339471}}');
INSERT INTO "entries" (session_id, seq, id, parent_id, type, timestamp, target_id, body) VALUES ('old-b', 0, '01a23b02-5990-735c-bf04-56eb0d3f035d', NULL, 'message', '2026-12-03T08:25:39.472Z', NULL, '{"type":"message","id":"01a23b02-5990-735c-bf04-56eb0d3f035d","parentId":null,"timestamp":"2026-12-03T08:25:39.472Z","message":{"role":"user","content":"hello b","timestamp":1796286339472}}');
INSERT INTO "entries" (session_id, seq, id, parent_id, type, timestamp, target_id, body) VALUES ('old-b', 1, '01a23b02-5990-735c-bf04-56ecbe62e6de', '01a23b02-5990-735c-bf04-56eb0d3f035d', 'leaf', '2026-12-03T08:25:39.472Z', NULL, '{"type":"leaf","id":"01a23b02-5990-735c-bf04-56ecbe62e6de","parentId":"01a23b02-5990-735c-bf04-56eb0d3f035d","timestamp":"2026-12-03T08:25:39.472Z","targetId":null}');
INSERT INTO "entries" (session_id, seq, id, parent_id, type, timestamp, target_id, body) VALUES ('01a23b02-5990-735c-bf04-56ee3d83a5ac', 0, '01a23b02-5989-746a-8bf7-2d68e0f122cd', NULL, 'message', '2026-12-03T08:25:39.465Z', NULL, '{"type":"message","id":"01a23b02-5989-746a-8bf7-2d68e0f122cd","parentId":null,"timestamp":"2026-12-03T08:25:39.465Z","message":{"role":"user","content":"Find the Zebra crossing","timestamp":1796286339465}}');
INSERT INTO "entries" (session_id, seq, id, parent_id, type, timestamp, target_id, body) VALUES ('01a23b02-5990-735c-bf04-56ee3d83a5ac', 1, '01a23b02-598a-777c-b94f-04be0dcf0021', '01a23b02-5989-746a-8bf7-2d68e0f122cd', 'message', '2026-12-03T08:25:39.466Z', NULL, '{"type":"message","id":"01a23b02-598a-777c-b94f-04be0dcf0021","parentId":"01a23b02-5989-746a-8bf7-2d68e0f122cd","timestamp":"2026-12-03T08:25:39.466Z","message":{"role":"assistant","content":[{"type":"text","text":"The zebra crossing is on Elm Street"}],"timestamp":1796286339466}}');
INSERT INTO "entries" (session_id, seq, id, parent_id, type, timestamp, target_id, body) VALUES ('01a23b02-5990-735c-bf04-56ee3d83a5ac', 2, '01a23b02-598a-777c-b94f-04bf8425f702', '01a23b02-598a-777c-b94f-04be0dcf0021', 'message', '2026-12-03T08:25:39.466Z', NULL, '{"type":"message","id":"01a23b02-598a-777c-b94f-04bf8425f702","parentId":"01a23b02-598a-777c-b94f-04be0dcf0021","timestamp":"2026-12-03T08:25:39.466Z","message":{"role":"user","content":"and the bakery?","timestamp":1796286339466}}');
INSERT INTO "entries" (session_id, seq, id, parent_id, type, timestamp, target_id, body) VALUES ('01a23b02-5990-735c-bf04-56ee3d83a5ac', 3, '01a23b02-5990-735c-bf04-56ed9855d86c', '01a23b02-598a-777c-b94f-04bf8425f702', 'label', '2026-12-03T08:25:39.472Z', '01a23b02-598a-777c-b94f-04be0dcf0021', '{"type":"label","id":"01a23b02-5990-735c-bf04-56ed9855d86c","parentId":"01a23b02-598a-777c-b94f-04bf8425f702","timestamp":"2026-12-03T08:25:39.472Z","targetId":"01a23b02-598a-777c-b94f-04be0dcf0021","label":"answer"}');
CREATE INDEX entries_labels ON entries (session_id, target_id, seq) WHERE type = 'label';
CREATE INDEX entries_names ON entries (session_id, seq) WHERE type = 'session_info';
CREATE VIRTUAL TABLE entries_fts USING fts5 (text, tokenize = 'unicode61 remove_diacritics 2');
CREATE TABLE search_index_state (indexed_upto INTEGER NOT NULL);
INSERT INTO "search_index_state" (indexed_upto) VALUES (0);
CREATE TABLE session_meta (
        key TEXT NOT NULL,
        value TEXT NOT NULL,
        session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
        PRIMARY KEY (key, value, session_id)
    ) WITHOUT ROWID;
INSERT INTO "session_meta" (key, value, session_id) VALUES ('cwd', '"/work"', '01a23b02-5990-735c-bf04-56ee3d83a5ac');
INSERT INTO "session_meta" (key, value, session_id) VALUES ('forkedFromEntryId', '"01a23b02-598a-777c-b94f-04bf8425f702"', '01a23b02-5990-735c-bf04-56ee3d83a5ac');
INSERT INTO "session_meta" (key, value, session_id) VALUES ('parentSessionId', '"old-a"', '01a23b02-5990-735c-bf04-56ee3d83a5ac');
INSERT INTO "session_meta" (key, value, session_id) VALUES ('rank', '3', '01a23b02-5990-735c-bf04-56ee3d83a5ac');
INSERT INTO "session_meta" (key, value, session_id) VALUES ('systemPrompt', '"be brief"', '01a23b02-5990-735c-bf04-56ee3d83a5ac');
INSERT INTO "session_meta" (key, value, session_id) VALUES ('team', '"blue"', '01a23b02-5990-735c-bf04-56ee3d83a5ac');
INSERT INTO "session_meta" (key, value, session_id) VALUES ('cwd', '"/work"', 'old-a');
INSERT INTO "session_meta" (key, value, session_id) VALUES ('rank', '3', 'old-a');
INSERT INTO "session_meta" (key, value, session_id) VALUES ('systemPrompt', '"be brief"', 'old-a');
INSERT INTO "session_meta" (key, value, session_id) VALUES ('team', '"blue"', 'old-a');
INSERT INTO "session_meta" (key, value, session_id) VALUES ('note', '"a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note "', 'old-b');
INSERT INTO "session_meta" (key, value, session_id) VALUES ('team', '"red"', 'old-b');
CREATE INDEX session_meta_by_session ON session_meta (session_id);
