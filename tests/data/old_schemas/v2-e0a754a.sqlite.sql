CREATE TABLE schema_version (
        app TEXT NOT NULL,
        version INTEGER NOT NULL,
        applied_at_ms INTEGER NOT NULL
    );
INSERT INTO "schema_version" (app, version, applied_at_ms) VALUES ('sessiontree', 1, 1796286044791);
INSERT INTO "schema_version" (app, version, applied_at_ms) VALUES ('sessiontree', 2, 1796286044792);
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
INSERT INTO "sessions" (id, metadata, created_us, modified_us, leaf_id, name, entry_count, message_count, first_message, parent_session_id) VALUES ('old-a', '{"systemPrompt":"be brief","cwd":"/work","team":"blue","rank":3}', 1796286044803226, 1796286044804699, '01a23afd-da84-730c-8516-5b6dfdadc591', 'zebra hunt', 7, 4, 'Find the Zebra crossing', NULL);
INSERT INTO "sessions" (id, metadata, created_us, modified_us, leaf_id, name, entry_count, message_count, first_message, parent_session_id) VALUES ('old-b', '{"team":"red","note":"a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note "}', 1796286044804747, 1796286044804919, NULL, NULL, 2, 1, 'hello b', NULL);
INSERT INTO "sessions" (id, metadata, created_us, modified_us, leaf_id, name, entry_count, message_count, first_message, parent_session_id) VALUES ('old-empty', '{}', 1796286044804949, 1796286044804949, NULL, NULL, 0, 0, NULL, NULL);
INSERT INTO "sessions" (id, metadata, created_us, modified_us, leaf_id, name, entry_count, message_count, first_message, parent_session_id) VALUES ('01a23afd-da89-71e3-93ce-9ef732e1f779', '{"systemPrompt":"be brief","cwd":"/work","parentSessionId":"old-a","forkedFromEntryId":"01a23afd-da84-730c-8516-5b6935ee887b","team":"blue","rank":3}', 1796286044809888, 1796286044810105, '01a23afd-da84-730c-8516-5b6935ee887b', NULL, 4, 3, 'Find the Zebra crossing', 'old-a');
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
INSERT INTO "entries" (session_id, seq, id, parent_id, type, timestamp, target_id, body) VALUES ('old-a', 0, '01a23afd-da83-7769-9f68-d9d69cf6167f', NULL, 'message', '2026-12-03T08:20:44.803Z', NULL, '{"type":"message","id":"01a23afd-da83-7769-9f68-d9d69cf6167f","parentId":null,"timestamp":"2026-12-03T08:20:44.803Z","message":{"role":"user","content":"Find the Zebra crossing","timestamp":1796286044803}}');
INSERT INTO "entries" (session_id, seq, id, parent_id, type, timestamp, target_id, body) VALUES ('old-a', 1, '01a23afd-da84-730c-8516-5b68766021ea', '01a23afd-da83-7769-9f68-d9d69cf6167f', 'message', '2026-12-03T08:20:44.804Z', NULL, '{"type":"message","id":"01a23afd-da84-730c-8516-5b68766021ea","parentId":"01a23afd-da83-7769-9f68-d9d69cf6167f","timestamp":"2026-12-03T08:20:44.804Z","message":{"role":"assistant","content":[{"type":"text","text":"The zebra crossing is on Elm Street"}],"timestamp":1796286044804}}');
INSERT INTO "entries" (session_id, seq, id, parent_id, type, timestamp, target_id, body) VALUES ('old-a', 2, '01a23afd-da84-730c-8516-5b6935ee887b', '01a23afd-da84-730c-8516-5b68766021ea', 'message', '2026-12-03T08:20:44.804Z', NULL, '{"type":"message","id":"01a23afd-da84-730c-8516-5b6935ee887b","parentId":"01a23afd-da84-730c-8516-5b68766021ea","timestamp":"2026-12-03T08:20:44.804Z","message":{"role":"user","content":"and the bakery?","timestamp":1796286044804}}');
INSERT INTO "entries" (session_id, seq, id, parent_id, type, timestamp, target_id, body) VALUES ('old-a', 3, '01a23afd-da84-730c-8516-5b6a49237c1d', '01a23afd-da84-730c-8516-5b6935ee887b', 'label', '2026-12-03T08:20:44.804Z', '01a23afd-da84-730c-8516-5b68766021ea', '{"type":"label","id":"01a23afd-da84-730c-8516-5b6a49237c1d","parentId":"01a23afd-da84-730c-8516-5b6935ee887b","timestamp":"2026-12-03T08:20:44.804Z","targetId":"01a23afd-da84-730c-8516-5b68766021ea","label":"answer"}');
INSERT INTO "entries" (session_id, seq, id, parent_id, type, timestamp, target_id, body) VALUES ('old-a', 4, '01a23afd-da84-730c-8516-5b6bb0d4d859', '01a23afd-da84-730c-8516-5b6935ee887b', 'session_info', '2026-12-03T08:20:44.804Z', NULL, '{"type":"session_info","id":"01a23afd-da84-730c-8516-5b6bb0d4d859","parentId":"01a23afd-da84-730c-8516-5b6935ee887b","timestamp":"2026-12-03T08:20:44.804Z","name":"zebra hunt"}');
INSERT INTO "entries" (session_id, seq, id, parent_id, type, timestamp, target_id, body) VALUES ('old-a', 5, '01a23afd-da84-730c-8516-5b6c8fd7c7c1', '01a23afd-da84-730c-8516-5b6935ee887b', 'leaf', '2026-12-03T08:20:44.804Z', '01a23afd-da84-730c-8516-5b68766021ea', '{"type":"leaf","id":"01a23afd-da84-730c-8516-5b6c8fd7c7c1","parentId":"01a23afd-da84-730c-8516-5b6935ee887b","timestamp":"2026-12-03T08:20:44.804Z","targetId":"01a23afd-da84-730c-8516-5b68766021ea"}');
INSERT INTO "entries" (session_id, seq, id, parent_id, type, timestamp, target_id, body) VALUES ('old-a', 6, '01a23afd-da84-730c-8516-5b6dfdadc591', '01a23afd-da84-730c-8516-5b68766021ea', 'message', '2026-12-03T08:20:44.804Z', NULL, '{"type":"message","id":"01a23afd-da84-730c-8516-5b6dfdadc591","parentId":"01a23afd-da84-730c-8516-5b68766021ea","timestamp":"2026-12-03T08:20:44.804Z","message":{"role":"user","content":"Other branch: the museum","timestamp":1796286044804}}');
INSERT INTO "entries" (session_id, seq, id, parent_id, type, timestamp, target_id, body) VALUES ('old-b', 0, '01a23afd-da84-730c-8516-5b6e2f1c5eb2', NULL, 'message', '2026-12-03T08:20:44.804Z', NULL, '{"type":"message","id":"01a23afd-da84-730c-8516-5b6e2f1c5eb2","parentId":null,"timestamp":"2026-12-03T08:20:44.804Z","message":{"role":"user","content":"hello b","timestamp":1796286044804}}');
INSERT INTO "entries" (session_id, seq, id, parent_id, type, timestamp, target_id, body) VALUES ('old-b', 1, '01a23afd-da84-730c-8516-5b6fc52cd33f', '01a23afd-da84-730c-8516-5b6e2f1c5eb2', 'leaf', '2026-12-03T08:20:44.804Z', NULL, '{"type":"leaf","id":"01a23afd-da84-730c-8516-5b6fc52cd33f","parentId":"01a23afd-da84-730c-8516-5b6e2f1c5eb2","timestamp":"2026-12-03T08:20:44.804Z","targetId":null}');
INSERT INTO "entries" (session_id, seq, id, parent_id, type, timestamp, target_id, body) VALUES ('01a23afd-da89-71e3-93ce-9ef732e1f779', 0, '01a23afd-da83-7769-9f68-d9d69cf6167f', NULL, 'message', '2026-12-03T08:20:44.803Z', NULL, '{"type":"message","id":"01a23afd-da83-7769-9f68-d9d69cf6167f","parentId":null,"timestamp":"2026-12-03T08:20:44.803Z","message":{"role":"user","content":"Find the Zebra crossing","timestamp":1796286044803}}');
INSERT INTO "entries" (session_id, seq, id, parent_id, type, timestamp, target_id, body) VALUES ('01a23afd-da89-71e3-93ce-9ef732e1f779', 1, '01a23afd-da84-730c-8516-5b68766021ea', '01a23afd-da83-7769-9f68-d9d69cf6167f', 'message', '2026-12-03T08:20:44.804Z', NULL, '{"type":"message","id":"01a23afd-da84-730c-8516-5b68766021ea","parentId":"01a23afd-da83-7769-9f68-d9d69cf6167f","timestamp":"2026-12-03T08:20:44.804Z","message":{"role":"assistant","content":[{"type":"text","text":"The zebra crossing is on Elm Street"}],"timestamp":1796286044804}}');
INSERT INTO "entries" (session_id, seq, id, parent_id, type, timestamp, target_id, body) VALUES ('01a23afd-da89-71e3-93ce-9ef732e1f779', 2, '01a23afd-da84-730c-8516-5b6935ee887b', '01a23afd-da84-730c-8516-5b68766021ea', 'message', '2026-12-03T08:20:44.804Z', NULL, '{"type":"message","id":"01a23afd-da84-730c-8516-5b6935ee887b","parentId":"01a23afd-da84-730c-8516-5b68766021ea","timestamp":"2026-12-03T08:20:44.804Z","message":{"role":"user","content":"and the bakery?","timestamp":1796286044804}}');
INSERT INTO "entries" (session_id, seq, id, parent_id, type, timestamp, target_id, body) VALUES ('01a23afd-da89-71e3-93ce-9ef732e1f779', 3, '01a23afd-da89-71e3-93ce-9ef639c86183', '01a23afd-da84-730c-8516-5b6935ee887b', 'label', '2026-12-03T08:20:44.809Z', '01a23afd-da84-730c-8516-5b68766021ea', '{"type":"label","id":"01a23afd-da89-71e3-93ce-9ef639c86183","parentId":"01a23afd-da84-730c-8516-5b6935ee887b","timestamp":"2026-12-03T08:20:44.809Z","targetId":"01a23afd-da84-730c-8516-5b68766021ea","label":"answer"}');
CREATE INDEX entries_labels ON entries (session_id, target_id, seq) WHERE type = 'label';
CREATE INDEX entries_names ON entries (session_id, seq) WHERE type = 'session_info';
CREATE VIRTUAL TABLE entries_fts USING fts5 (text, tokenize = 'unicode61 remove_diacritics 2');
CREATE TABLE search_index_state (indexed_upto INTEGER NOT NULL);
INSERT INTO "search_index_state" (indexed_upto) VALUES (0);
