CREATE TABLE schema_version (
        app TEXT NOT NULL,
        version INTEGER NOT NULL,
        applied_at_ms INTEGER NOT NULL
    );
INSERT INTO "schema_version" (app, version, applied_at_ms) VALUES ('sessiontree', 1, 1796286043391);
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
INSERT INTO "sessions" (id, metadata, created_us, modified_us, leaf_id, name, entry_count, message_count, first_message, parent_session_id) VALUES ('old-a', '{"systemPrompt":"be brief","cwd":"/work","team":"blue","rank":3}', 1796286043399270, 1796286043400505, '01a23afd-d508-77a1-a135-7fcb58ffc9d1', 'zebra hunt', 7, 4, 'Find the Zebra crossing', NULL);
INSERT INTO "sessions" (id, metadata, created_us, modified_us, leaf_id, name, entry_count, message_count, first_message, parent_session_id) VALUES ('old-b', '{"team":"red","note":"a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note "}', 1796286043400562, 1796286043400736, NULL, NULL, 2, 1, 'hello b', NULL);
INSERT INTO "sessions" (id, metadata, created_us, modified_us, leaf_id, name, entry_count, message_count, first_message, parent_session_id) VALUES ('old-empty', '{}', 1796286043400768, 1796286043400768, NULL, NULL, 0, 0, NULL, NULL);
INSERT INTO "sessions" (id, metadata, created_us, modified_us, leaf_id, name, entry_count, message_count, first_message, parent_session_id) VALUES ('01a23afd-d509-748d-8315-e6e00e368690', '{"systemPrompt":"be brief","cwd":"/work","parentSessionId":"old-a","forkedFromEntryId":"01a23afd-d508-77a1-a135-7fc7b72be489","team":"blue","rank":3}', 1796286043401191, 1796286043401364, '01a23afd-d508-77a1-a135-7fc7b72be489', NULL, 4, 3, 'Find the Zebra crossing', 'old-a');
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
INSERT INTO "entries" (session_id, seq, id, parent_id, type, timestamp, target_id, body) VALUES ('old-a', 0, '01a23afd-d507-7793-91ee-5ecb05d40224', NULL, 'message', '2026-12-03T08:20:43.399Z', NULL, '{"type":"message","id":"01a23afd-d507-7793-91ee-5ecb05d40224","parentId":null,"timestamp":"2026-12-03T08:20:43.399Z","message":{"role":"user","content":"Find the Zebra crossing","timestamp":1796286043399}}');
INSERT INTO "entries" (session_id, seq, id, parent_id, type, timestamp, target_id, body) VALUES ('old-a', 1, '01a23afd-d507-7793-91ee-5eccf4a79735', '01a23afd-d507-7793-91ee-5ecb05d40224', 'message', '2026-12-03T08:20:43.399Z', NULL, '{"type":"message","id":"01a23afd-d507-7793-91ee-5eccf4a79735","parentId":"01a23afd-d507-7793-91ee-5ecb05d40224","timestamp":"2026-12-03T08:20:43.399Z","message":{"role":"assistant","content":[{"type":"text","text":"The zebra crossing is on Elm Street"}],"timestamp":1796286043399}}');
INSERT INTO "entries" (session_id, seq, id, parent_id, type, timestamp, target_id, body) VALUES ('old-a', 2, '01a23afd-d508-77a1-a135-7fc7b72be489', '01a23afd-d507-7793-91ee-5eccf4a79735', 'message', '2026-12-03T08:20:43.400Z', NULL, '{"type":"message","id":"01a23afd-d508-77a1-a135-7fc7b72be489","parentId":"01a23afd-d507-7793-91ee-5eccf4a79735","timestamp":"2026-12-03T08:20:43.400Z","message":{"role":"user","content":"and the bakery?","timestamp":1796286043400}}');
INSERT INTO "entries" (session_id, seq, id, parent_id, type, timestamp, target_id, body) VALUES ('old-a', 3, '01a23afd-d508-77a1-a135-7fc80f868ff3', '01a23afd-d508-77a1-a135-7fc7b72be489', 'label', '2026-12-03T08:20:43.400Z', '01a23afd-d507-7793-91ee-5eccf4a79735', '{"type":"label","id":"01a23afd-d508-77a1-a135-7fc80f868ff3","parentId":"01a23afd-d508-77a1-a135-7fc7b72be489","timestamp":"2026-12-03T08:20:43.400Z","targetId":"01a23afd-d507-7793-91ee-5eccf4a79735","label":"answer"}');
INSERT INTO "entries" (session_id, seq, id, parent_id, type, timestamp, target_id, body) VALUES ('old-a', 4, '01a23afd-d508-77a1-a135-7fc900c7c31f', '01a23afd-d508-77a1-a135-7fc7b72be489', 'session_info', '2026-12-03T08:20:43.400Z', NULL, '{"type":"session_info","id":"01a23afd-d508-77a1-a135-7fc900c7c31f","parentId":"01a23afd-d508-77a1-a135-7fc7b72be489","timestamp":"2026-12-03T08:20:43.400Z","name":"zebra hunt"}');
INSERT INTO "entries" (session_id, seq, id, parent_id, type, timestamp, target_id, body) VALUES ('old-a', 5, '01a23afd-d508-77a1-a135-7fcab4a2264c', '01a23afd-d508-77a1-a135-7fc7b72be489', 'leaf', '2026-12-03T08:20:43.400Z', '01a23afd-d507-7793-91ee-5eccf4a79735', '{"type":"leaf","id":"01a23afd-d508-77a1-a135-7fcab4a2264c","parentId":"01a23afd-d508-77a1-a135-7fc7b72be489","timestamp":"2026-12-03T08:20:43.400Z","targetId":"01a23afd-d507-7793-91ee-5eccf4a79735"}');
INSERT INTO "entries" (session_id, seq, id, parent_id, type, timestamp, target_id, body) VALUES ('old-a', 6, '01a23afd-d508-77a1-a135-7fcb58ffc9d1', '01a23afd-d507-7793-91ee-5eccf4a79735', 'message', '2026-12-03T08:20:43.400Z', NULL, '{"type":"message","id":"01a23afd-d508-77a1-a135-7fcb58ffc9d1","parentId":"01a23afd-d507-7793-91ee-5eccf4a79735","timestamp":"2026-12-03T08:20:43.400Z","message":{"role":"user","content":"Other branch: the museum","timestamp":1796286043400}}');
INSERT INTO "entries" (session_id, seq, id, parent_id, type, timestamp, target_id, body) VALUES ('old-b', 0, '01a23afd-d508-77a1-a135-7fccb5606d0b', NULL, 'message', '2026-12-03T08:20:43.400Z', NULL, '{"type":"message","id":"01a23afd-d508-77a1-a135-7fccb5606d0b","parentId":null,"timestamp":"2026-12-03T08:20:43.400Z","message":{"role":"user","content":"hello b","timestamp":1796286043400}}');
INSERT INTO "entries" (session_id, seq, id, parent_id, type, timestamp, target_id, body) VALUES ('old-b', 1, '01a23afd-d508-77a1-a135-7fcd23ff20fa', '01a23afd-d508-77a1-a135-7fccb5606d0b', 'leaf', '2026-12-03T08:20:43.400Z', NULL, '{"type":"leaf","id":"01a23afd-d508-77a1-a135-7fcd23ff20fa","parentId":"01a23afd-d508-77a1-a135-7fccb5606d0b","timestamp":"2026-12-03T08:20:43.400Z","targetId":null}');
INSERT INTO "entries" (session_id, seq, id, parent_id, type, timestamp, target_id, body) VALUES ('01a23afd-d509-748d-8315-e6e00e368690', 0, '01a23afd-d507-7793-91ee-5ecb05d40224', NULL, 'message', '2026-12-03T08:20:43.399Z', NULL, '{"type":"message","id":"01a23afd-d507-7793-91ee-5ecb05d40224","parentId":null,"timestamp":"2026-12-03T08:20:43.399Z","message":{"role":"user","content":"Find the Zebra crossing","timestamp":1796286043399}}');
INSERT INTO "entries" (session_id, seq, id, parent_id, type, timestamp, target_id, body) VALUES ('01a23afd-d509-748d-8315-e6e00e368690', 1, '01a23afd-d507-7793-91ee-5eccf4a79735', '01a23afd-d507-7793-91ee-5ecb05d40224', 'message', '2026-12-03T08:20:43.399Z', NULL, '{"type":"message","id":"01a23afd-d507-7793-91ee-5eccf4a79735","parentId":"01a23afd-d507-7793-91ee-5ecb05d40224","timestamp":"2026-12-03T08:20:43.399Z","message":{"role":"assistant","content":[{"type":"text","text":"The zebra crossing is on Elm Street"}],"timestamp":1796286043399}}');
INSERT INTO "entries" (session_id, seq, id, parent_id, type, timestamp, target_id, body) VALUES ('01a23afd-d509-748d-8315-e6e00e368690', 2, '01a23afd-d508-77a1-a135-7fc7b72be489', '01a23afd-d507-7793-91ee-5eccf4a79735', 'message', '2026-12-03T08:20:43.400Z', NULL, '{"type":"message","id":"01a23afd-d508-77a1-a135-7fc7b72be489","parentId":"01a23afd-d507-7793-91ee-5eccf4a79735","timestamp":"2026-12-03T08:20:43.400Z","message":{"role":"user","content":"and the bakery?","timestamp":1796286043400}}');
INSERT INTO "entries" (session_id, seq, id, parent_id, type, timestamp, target_id, body) VALUES ('01a23afd-d509-748d-8315-e6e00e368690', 3, '01a23afd-d509-748d-8315-e6df55c4359a', '01a23afd-d508-77a1-a135-7fc7b72be489', 'label', '2026-12-03T08:20:43.401Z', '01a23afd-d507-7793-91ee-5eccf4a79735', '{"type":"label","id":"01a23afd-d509-748d-8315-e6df55c4359a","parentId":"01a23afd-d508-77a1-a135-7fc7b72be489","timestamp":"2026-12-03T08:20:43.401Z","targetId":"01a23afd-d507-7793-91ee-5eccf4a79735","label":"answer"}');
CREATE INDEX entries_labels ON entries (session_id, target_id, seq) WHERE type = 'label';
CREATE INDEX entries_names ON entries (session_id, seq) WHERE type = 'session_info';
CREATE VIRTUAL TABLE entries_fts USING fts5 (text, tokenize = 'unicode61 remove_diacritics 2');
INSERT INTO "entries_fts" (rowid, text) VALUES (1, 'Find the Zebra crossing');
INSERT INTO "entries_fts" (rowid, text) VALUES (2, 'The zebra crossing is on Elm Street');
INSERT INTO "entries_fts" (rowid, text) VALUES (3, 'and the bakery?');
INSERT INTO "entries_fts" (rowid, text) VALUES (7, 'Other branch: the museum');
INSERT INTO "entries_fts" (rowid, text) VALUES (8, 'hello b');
INSERT INTO "entries_fts" (rowid, text) VALUES (10, 'Find the Zebra crossing');
INSERT INTO "entries_fts" (rowid, text) VALUES (11, 'The zebra crossing is on Elm Street');
INSERT INTO "entries_fts" (rowid, text) VALUES (12, 'and the bakery?');
