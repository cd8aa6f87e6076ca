CREATE TABLE schema_version (
        app TEXT NOT NULL,
        version INTEGER NOT NULL,
        applied_at_ms INTEGER NOT NULL
    );
INSERT INTO "schema_version" (app, version, applied_at_ms) VALUES ('sessiontree', 1, 1796286046599);
INSERT INTO "schema_version" (app, version, applied_at_ms) VALUES ('sessiontree', 2, 1796286046599);
INSERT INTO "schema_version" (app, version, applied_at_ms) VALUES ('sessiontree', 3, 1796286046600);
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
INSERT INTO "sessions" (id, metadata, created_us, modified_us, leaf_id, name, entry_count, message_count, first_message, parent_session_id) VALUES ('old-a', '{"systemPrompt":"be brief","cwd":"/work","team":"blue","rank":3}', 1796286046607305, 1796286046609055, '01a23afd-e190-76f4-8874-cfa4e31799c6', 'zebra hunt', 7, 4, 'Find the Zebra crossing', NULL);
INSERT INTO "sessions" (id, metadata, created_us, modified_us, leaf_id, name, entry_count, message_count, first_message, parent_session_id) VALUES ('old-b', '{"team":"red","note":"a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note "}', 1796286046609105, 1796286046609314, NULL, NULL, 2, 1, 'hello b', NULL);
INSERT INTO "sessions" (id, metadata, created_us, modified_us, leaf_id, name, entry_count, message_count, first_message, parent_session_id) VALUES ('old-empty', '{}', 1796286046609343, 1796286046609343, NULL, NULL, 0, 0, NULL, NULL);
INSERT INTO "sessions" (id, metadata, created_us, modified_us, leaf_id, name, entry_count, message_count, first_message, parent_session_id) VALUES ('01a23afd-e191-768d-a1d8-dcda4424b039', '{"systemPrompt":"be brief","cwd":"/work","parentSessionId":"old-a","forkedFromEntryId":"01a23afd-e190-76f4-8874-cfa049a79af1","team":"blue","rank":3}', 1796286046609842, 1796286046610153, '01a23afd-e190-76f4-8874-cfa049a79af1', NULL, 4, 3, 'Find the Zebra crossing', 'old-a');
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
INSERT INTO "entries" (session_id, seq, id, parent_id, type, timestamp, target_id, body) VALUES ('old-a', 0, '01a23afd-e18f-77e1-9ac1-9a7d6f298d05', NULL, 'message', '2026-12-03T08:20:46.607Z', NULL, '{"type":"message","id":"01a23afd-e18f-77e1-9ac1-9a7d6f298d05","parentId":null,"timestamp":"2026-12-03T08:20:46.607Z","message":{"role":"user","content":"Find the Zebra crossing","timestamp":1796286046607}}');
INSERT INTO "entries" (session_id, seq, id, parent_id, type, timestamp, target_id, body) VALUES ('old-a', 1, '01a23afd-e190-76f4-8874-cf9f8e89c3be', '01a23afd-e18f-77e1-9ac1-9a7d6f298d05', 'message', '2026-12-03T08:20:46.608Z', NULL, '{"type":"message","id":"01a23afd-e190-76f4-8874-cf9f8e89c3be","parentId":"01a23afd-e18f-77e1-9ac1-9a7d6f298d05","timestamp":"2026-12-03T08:20:46.608Z","message":{"role":"assistant","content":[{"type":"text","text":"The zebra crossing is on Elm Street"}],"timestamp":1796286046608}}');
INSERT INTO "entries" (session_id, seq, id, parent_id, type, timestamp, target_id, body) VALUES ('old-a', 2, '01a23afd-e190-76f4-8874-cfa049a79af1', '01a23afd-e190-76f4-8874-cf9f8e89c3be', 'message', '2026-12-03T08:20:46.608Z', NULL, '{"type":"message","id":"01a23afd-e190-76f4-8874-cfa049a79af1","parentId":"01a23afd-e190-76f4-8874-cf9f8e89c3be","timestamp":"2026-12-03T08:20:46.608Z","message":{"role":"user","content":"and the bakery?","timestamp":1796286046608}}');
INSERT INTO "entries" (session_id, seq, id, parent_id, type, timestamp, target_id, body) VALUES ('old-a', 3, '01a23afd-e190-76f4-8874-cfa1ce17758a', '01a23afd-e190-76f4-8874-cfa049a79af1', 'label', '2026-12-03T08:20:46.608Z', '01a23afd-e190-76f4-8874-cf9f8e89c3be', '{"type":"label","id":"01a23afd-e190-76f4-8874-cfa1ce17758a","parentId":"01a23afd-e190-76f4-8874-cfa049a79af1","timestamp":"2026-12-03T08:20:46.608Z","targetId":"01a23afd-e190-76f4-8874-cf9f8e89c3be","label":"answer"}');
INSERT INTO "entries" (session_id, seq, id, parent_id, type, timestamp, target_id, body) VALUES ('old-a', 4, '01a23afd-e190-76f4-8874-cfa2c9584802', '01a23afd-e190-76f4-8874-cfa049a79af1', 'session_info', '2026-12-03T08:20:46.608Z', NULL, '{"type":"session_info","id":"01a23afd-e190-76f4-8874-cfa2c9584802","parentId":"01a23afd-e190-76f4-8874-cfa049a79af1","timestamp":"2026-12-03T08:20:46.608Z","name":"zebra hunt"}');
INSERT INTO "entries" (session_id, seq, id, parent_id, type, timestamp, target_id, body) VALUES ('old-a', 5, '01a23afd-e190-76f4-8874-cfa3f26bb1c0', '01a23afd-e190-76f4-8874-cfa049a79af1', 'leaf', '2026-12-03T08:20:46.608Z', '01a23afd-e190-76f4-8874-cf9f8e89c3be', '{"type":"leaf","id":"01a23afd-e190-76f4-8874-cfa3f26bb1c0","parentId":"01a23afd-e190-76f4-8874-cfa049a79af1","timestamp":"2026-12-03T08:20:46.608Z","targetId":"01a23afd-e190-76f4-8874-cf9f8e89c3be"}');
INSERT INTO "entries" (session_id, seq, id, parent_id, type, timestamp, target_id, body) VALUES ('old-a', 6, '01a23afd-e190-76f4-8874-cfa4e31799c6', '01a23afd-e190-76f4-8874-cf9f8e89c3be', 'message', '2026-12-03T08:20:46.608Z', NULL, '{"type":"message","id":"01a23afd-e190-76f4-8874-cfa4e31799c6","parentId":"01a23afd-e190-76f4-8874-cf9f8e89c3be","timestamp":"2026-12-03T08:20:46.608Z","message":{"role":"user","content":"Other branch: the museum","timestamp":1796286046608}}');
INSERT INTO "entries" (session_id, seq, id, parent_id, type, timestamp, target_id, body) VALUES ('old-b', 0, '01a23afd-e191-768d-a1d8-dcd773321447', NULL, 'message', '2026-12-03T08:20:46.609Z', NULL, '{"type":"message","id":"01a23afd-e191-768d-a1d8-dcd773321447","parentId":null,"timestamp":"2026-12-03T08:20:46.609Z","message":{"role":"user","content":"hello b","timestamp":1796286046609}}');
INSERT INTO "entries" (session_id, seq, id, parent_id, type, timestamp, target_id, body) VALUES ('old-b', 1, '01a23afd-e191-768d-a1d8-dcd812975e05', '01a23afd-e191-768d-a1d8-dcd773321447', 'leaf', '2026-12-03T08:20:46.609Z', NULL, '{"type":"leaf","id":"01a23afd-e191-768d-a1d8-dcd812975e05","parentId":"01a23afd-e191-768d-a1d8-dcd773321447","timestamp":"2026-12-03T08:20:46.609Z","targetId":null}');
INSERT INTO "entries" (session_id, seq, id, parent_id, type, timestamp, target_id, body) VALUES ('01a23afd-e191-768d-a1d8-dcda4424b039', 0, '01a23afd-e18f-77e1-9ac1-9a7d6f298d05', NULL, 'message', '2026-12-03T08:20:46.607Z', NULL, '{"type":"message","id":"01a23afd-e18f-77e1-9ac1-9a7d6f298d05","parentId":null,"timestamp":"2026-12-03T08:20:46.607Z","message":{"role":"user","content":"Find the Zebra crossing","timestamp":1796286046607}}');
INSERT INTO "entries" (session_id, seq, id, parent_id, type, timestamp, target_id, body) VALUES ('01a23afd-e191-768d-a1d8-dcda4424b039', 1, '01a23afd-e190-76f4-8874-cf9f8e89c3be', '01a23afd-e18f-77e1-9ac1-9a7d6f298d05', 'message', '2026-12-03T08:20:46.608Z', NULL, '{"type":"message","id":"01a23afd-e190-76f4-8874-cf9f8e89c3be","parentId":"01a23afd-e18f-77e1-9ac1-9a7d6f298d05","timestamp":"2026-12-03T08:20:46.608Z","message":{"role":"assistant","content":[{"type":"text","text":"The zebra crossing is on Elm Street"}],"timestamp":1796286046608}}');
INSERT INTO "entries" (session_id, seq, id, parent_id, type, timestamp, target_id, body) VALUES ('01a23afd-e191-768d-a1d8-dcda4424b039', 2, '01a23afd-e190-76f4-8874-cfa049a79af1', '01a23afd-e190-76f4-8874-cf9f8e89c3be', 'message', '2026-12-03T08:20:46.608Z', NULL, '{"type":"message","id":"01a23afd-e190-76f4-8874-cfa049a79af1","parentId":"01a23afd-e190-76f4-8874-cf9f8e89c3be","timestamp":"2026-12-03T08:20:46.608Z","message":{"role":"user","content":"and the bakery?","timestamp":1796286046608}}');
INSERT INTO "entries" (session_id, seq, id, parent_id, type, timestamp, target_id, body) VALUES ('01a23afd-e191-768d-a1d8-dcda4424b039', 3, '01a23afd-e191-768d-a1d8-dcd9a293748a', '01a23afd-e190-76f4-8874-cfa049a79af1', 'label', '2026-12-03T08:20:46.609Z', '01a23afd-e190-76f4-8874-cf9f8e89c3be', '{"type":"label","id":"01a23afd-e191-768d-a1d8-dcd9a293748a","parentId":"01a23afd-e190-76f4-8874-cfa049a79af1","timestamp":"2026-12-03T08:20:46.609Z","targetId":"01a23afd-e190-76f4-8874-cf9f8e89c3be","label":"answer"}');
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
INSERT INTO "session_meta" (key, value, session_id) VALUES ('cwd', '"/work"', '01a23afd-e191-768d-a1d8-dcda4424b039');
INSERT INTO "session_meta" (key, value, session_id) VALUES ('forkedFromEntryId', '"01a23afd-e190-76f4-8874-cfa049a79af1"', '01a23afd-e191-768d-a1d8-dcda4424b039');
INSERT INTO "session_meta" (key, value, session_id) VALUES ('parentSessionId', '"old-a"', '01a23afd-e191-768d-a1d8-dcda4424b039');
INSERT INTO "session_meta" (key, value, session_id) VALUES ('rank', '3', '01a23afd-e191-768d-a1d8-dcda4424b039');
INSERT INTO "session_meta" (key, value, session_id) VALUES ('systemPrompt', '"be brief"', '01a23afd-e191-768d-a1d8-dcda4424b039');
INSERT INTO "session_meta" (key, value, session_id) VALUES ('team', '"blue"', '01a23afd-e191-768d-a1d8-dcda4424b039');
INSERT INTO "session_meta" (key, value, session_id) VALUES ('cwd', '"/work"', 'old-a');
INSERT INTO "session_meta" (key, value, session_id) VALUES ('rank', '3', 'old-a');
INSERT INTO "session_meta" (key, value, session_id) VALUES ('systemPrompt', '"be brief"', 'old-a');
INSERT INTO "session_meta" (key, value, session_id) VALUES ('team', '"blue"', 'old-a');
INSERT INTO "session_meta" (key, value, session_id) VALUES ('note', '"a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note "', 'old-b');
INSERT INTO "session_meta" (key, value, session_id) VALUES ('team', '"red"', 'old-b');
CREATE INDEX session_meta_by_session ON session_meta (session_id);
