CREATE TABLE schema_version (
        app TEXT NOT NULL,
        version INTEGER NOT NULL,
        applied_at_ms INTEGER NOT NULL
    );
INSERT INTO "schema_version" (app, version, applied_at_ms) VALUES ('sessiontree', 1, 1796286056791);
INSERT INTO "schema_version" (app, version, applied_at_ms) VALUES ('sessiontree', 2, 1796286056791);
INSERT INTO "schema_version" (app, version, applied_at_ms) VALUES ('sessiontree', 3, 1796286056791);
INSERT INTO "schema_version" (app, version, applied_at_ms) VALUES ('sessiontree', 4, 1796286056792);
INSERT INTO "schema_version" (app, version, applied_at_ms) VALUES ('sessiontree', 5, 1796286056792);
INSERT INTO "schema_version" (app, version, applied_at_ms) VALUES ('sessiontree', 6, 1796286056792);
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
INSERT INTO "sessions" (id, metadata, created_us, modified_us, leaf_id, name, entry_count, message_count, first_message, parent_session_id) VALUES ('old-a', '{"systemPrompt":"be brief","cwd":"/work","team":"blue","rank":3}', 1796286056795293, 1796286056822307, '01a23afe-0976-7236-b8ba-6688abbab5d1', 'zebra hunt', 7, 4, 'Find the Zebra crossing', NULL);
INSERT INTO "sessions" (id, metadata, created_us, modified_us, leaf_id, name, entry_count, message_count, first_message, parent_session_id) VALUES ('old-b', '{"team":"red","note":"a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note "}', 1796286056822363, 1796286056822585, NULL, NULL, 2, 1, 'hello b', NULL);
INSERT INTO "sessions" (id, metadata, created_us, modified_us, leaf_id, name, entry_count, message_count, first_message, parent_session_id) VALUES ('old-empty', '{}', 1796286056822622, 1796286056822622, NULL, NULL, 0, 0, NULL, NULL);
INSERT INTO "sessions" (id, metadata, created_us, modified_us, leaf_id, name, entry_count, message_count, first_message, parent_session_id) VALUES ('01a23afe-0976-7236-b8ba-668c4e5aacee', '{"systemPrompt":"be brief","cwd":"/work","parentSessionId":"old-a","forkedFromEntryId":"01a23afe-096b-736d-b694-89a1aac92cf3","team":"blue","rank":3}', 1796286056822995, 1796286056822995, '01a23afe-096b-736d-b694-89a1aac92cf3', NULL, 4, 3, 'Find the Zebra crossing', 'old-a');
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
INSERT INTO "entries" (session_id, seq, id, parent_id, type, timestamp, target_id, body) VALUES ('old-a', 0, '01a23afe-0964-750f-99fe-f22bf4705590', NULL, 'message', '2026-12-03T08:20:56.804Z', NULL, '{"type":"message","id":"01a23afe-0964-750f-99fe-f22bf4705590","parentId":null,"timestamp":"2026-12-03T08:20:56.804Z","message":{"role":"user","content":"Find the Zebra crossing","timestamp":1796286056795}}');
INSERT INTO "entries" (session_id, seq, id, parent_id, type, timestamp, target_id, body) VALUES ('old-a', 1, '01a23afe-096b-736d-b694-89a09a078be5', '01a23afe-0964-750f-99fe-f22bf4705590', 'message', '2026-12-03T08:20:56.811Z', NULL, '{"type":"message","id":"01a23afe-096b-736d-b694-89a09a078be5","parentId":"01a23afe-0964-750f-99fe-f22bf4705590","timestamp":"2026-12-03T08:20:56.811Z","message":{"role":"assistant","content":[{"type":"text","text":"The zebra crossing is on Elm Street"}],"timestamp":1796286056811}}');
INSERT INTO "entries" (session_id, seq, id, parent_id, type, timestamp, target_id, body) VALUES ('old-a', 2, '01a23afe-096b-736d-b694-89a1aac92cf3', '01a23afe-096b-736d-b694-89a09a078be5', 'message', '2026-12-03T08:20:56.811Z', NULL, '{"type":"message","id":"01a23afe-096b-736d-b694-89a1aac92cf3","parentId":"01a23afe-096b-736d-b694-89a09a078be5","timestamp":"2026-12-03T08:20:56.811Z","message":{"role":"user","content":"and the bakery?","timestamp":1796286056811}}');
INSERT INTO "entries" (session_id, seq, id, parent_id, type, timestamp, target_id, body) VALUES ('old-a', 3, '01a23afe-096c-7104-b63b-3347513361b8', '01a23afe-096b-736d-b694-89a1aac92cf3', 'label', '2026-12-03T08:20:56.812Z', '01a23afe-096b-736d-b694-89a09a078be5', '{"type":"label","id":"01a23afe-096c-7104-b63b-3347513361b8","parentId":"01a23afe-096b-736d-b694-89a1aac92cf3","timestamp":"2026-12-03T08:20:56.812Z","targetId":"01a23afe-096b-736d-b694-89a09a078be5","label":"answer"}');
INSERT INTO "entries" (session_id, seq, id, parent_id, type, timestamp, target_id, body) VALUES ('old-a', 4, '01a23afe-0975-774c-81f6-01ecbb52659e', '01a23afe-096b-736d-b694-89a1aac92cf3', 'session_info', '2026-12-03T08:20:56.821Z', NULL, '{"type":"session_info","id":"01a23afe-0975-774c-81f6-01ecbb52659e","parentId":"01a23afe-096b-736d-b694-89a1aac92cf3","timestamp":"2026-12-03T08:20:56.821Z","name":"zebra hunt"}');
INSERT INTO "entries" (session_id, seq, id, parent_id, type, timestamp, target_id, body) VALUES ('old-a', 5, '01a23afe-0976-7236-b8ba-668716106ed2', '01a23afe-096b-736d-b694-89a1aac92cf3', 'leaf', '2026-12-03T08:20:56.822Z', '01a23afe-096b-736d-b694-89a09a078be5', '{"type":"leaf","id":"01a23afe-0976-7236-b8ba-668716106ed2","parentId":"01a23afe-096b-736d-b694-89a1aac92cf3","timestamp":"2026-12-03T08:20:56.822Z","targetId":"01a23afe-096b-736d-b694-89a09a078be5"}');
INSERT INTO "entries" (session_id, seq, id, parent_id, type, timestamp, target_id, body) VALUES ('old-a', 6, '01a23afe-0976-7236-b8ba-6688abbab5d1', '01a23afe-096b-736d-b694-89a09a078be5', 'message', '2026-12-03T08:20:56.822Z', NULL, '{"type":"message","id":"01a23afe-0976-7236-b8ba-6688abbab5d1","parentId":"01a23afe-096b-736d-b694-89a09a078be5","timestamp":"2026-12-03T08:20:56.822Z","message":{"role":"user","content":"Other branch: the museum","timestamp":1796286056822}}');
INSERT INTO "entries" (session_id, seq, id, parent_id, type, timestamp, target_id, body) VALUES ('old-b', 0, '01a23afe-0976-7236-b8ba-6689a94c694e', NULL, 'message', '2026-12-03T08:20:56.822Z', NULL, '{"type":"message","id":"01a23afe-0976-7236-b8ba-6689a94c694e","parentId":null,"timestamp":"2026-12-03T08:20:56.822Z","message":{"role":"user","content":"hello b","timestamp":1796286056822}}');
INSERT INTO "entries" (session_id, seq, id, parent_id, type, timestamp, target_id, body) VALUES ('old-b', 1, '01a23afe-0976-7236-b8ba-668aee8069cf', '01a23afe-0976-7236-b8ba-6689a94c694e', 'leaf', '2026-12-03T08:20:56.822Z', NULL, '{"type":"leaf","id":"01a23afe-0976-7236-b8ba-668aee8069cf","parentId":"01a23afe-0976-7236-b8ba-6689a94c694e","timestamp":"2026-12-03T08:20:56.822Z","targetId":null}');
INSERT INTO "entries" (session_id, seq, id, parent_id, type, timestamp, target_id, body) VALUES ('01a23afe-0976-7236-b8ba-668c4e5aacee', 0, '01a23afe-0964-750f-99fe-f22bf4705590', NULL, 'message', '2026-12-03T08:20:56.804Z', NULL, '{"type":"message","id":"01a23afe-0964-750f-99fe-f22bf4705590","parentId":null,"timestamp":"2026-12-03T08:20:56.804Z","message":{"role":"user","content":"Find the Zebra crossing","timestamp":1796286056795}}');
INSERT INTO "entries" (session_id, seq, id, parent_id, type, timestamp, target_id, body) VALUES ('01a23afe-0976-7236-b8ba-668c4e5aacee', 1, '01a23afe-096b-736d-b694-89a09a078be5', '01a23afe-0964-750f-99fe-f22bf4705590', 'message', '2026-12-03T08:20:56.811Z', NULL, '{"type":"message","id":"01a23afe-096b-736d-b694-89a09a078be5","parentId":"01a23afe-0964-750f-99fe-f22bf4705590","timestamp":"2026-12-03T08:20:56.811Z","message":{"role":"assistant","content":[{"type":"text","text":"The zebra crossing is on Elm Street"}],"timestamp":1796286056811}}');
INSERT INTO "entries" (session_id, seq, id, parent_id, type, timestamp, target_id, body) VALUES ('01a23afe-0976-7236-b8ba-668c4e5aacee', 2, '01a23afe-096b-736d-b694-89a1aac92cf3', '01a23afe-096b-736d-b694-89a09a078be5', 'message', '2026-12-03T08:20:56.811Z', NULL, '{"type":"message","id":"01a23afe-096b-736d-b694-89a1aac92cf3","parentId":"01a23afe-096b-736d-b694-89a09a078be5","timestamp":"2026-12-03T08:20:56.811Z","message":{"role":"user","content":"and the bakery?","timestamp":1796286056811}}');
INSERT INTO "entries" (session_id, seq, id, parent_id, type, timestamp, target_id, body) VALUES ('01a23afe-0976-7236-b8ba-668c4e5aacee', 3, '01a23afe-0976-7236-b8ba-668baffe6cbd', '01a23afe-096b-736d-b694-89a1aac92cf3', 'label', '2026-12-03T08:20:56.822Z', '01a23afe-096b-736d-b694-89a09a078be5', '{"type":"label","id":"01a23afe-0976-7236-b8ba-668baffe6cbd","parentId":"01a23afe-096b-736d-b694-89a1aac92cf3","timestamp":"2026-12-03T08:20:56.822Z","targetId":"01a23afe-096b-736d-b694-89a09a078be5","label":"answer"}');
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
INSERT INTO "session_meta" (key, value, session_id) VALUES ('cwd', '"/work"', '01a23afe-0976-7236-b8ba-668c4e5aacee');
INSERT INTO "session_meta" (key, value, session_id) VALUES ('forkedFromEntryId', '"01a23afe-096b-736d-b694-89a1aac92cf3"', '01a23afe-0976-7236-b8ba-668c4e5aacee');
INSERT INTO "session_meta" (key, value, session_id) VALUES ('parentSessionId', '"old-a"', '01a23afe-0976-7236-b8ba-668c4e5aacee');
INSERT INTO "session_meta" (key, value, session_id) VALUES ('rank', '3', '01a23afe-0976-7236-b8ba-668c4e5aacee');
INSERT INTO "session_meta" (key, value, session_id) VALUES ('systemPrompt', '"be brief"', '01a23afe-0976-7236-b8ba-668c4e5aacee');
INSERT INTO "session_meta" (key, value, session_id) VALUES ('team', '"blue"', '01a23afe-0976-7236-b8ba-668c4e5aacee');
INSERT INTO "session_meta" (key, value, session_id) VALUES ('cwd', '"/work"', 'old-a');
INSERT INTO "session_meta" (key, value, session_id) VALUES ('rank', '3', 'old-a');
INSERT INTO "session_meta" (key, value, session_id) VALUES ('systemPrompt', '"be brief"', 'old-a');
INSERT INTO "session_meta" (key, value, session_id) VALUES ('team', '"blue"', 'old-a');
INSERT INTO "session_meta" (key, value, session_id) VALUES ('note', '"a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note "', 'old-b');
INSERT INTO "session_meta" (key, value, session_id) VALUES ('team', '"red"', 'old-b');
CREATE INDEX session_meta_by_session ON session_meta (session_id);
CREATE VIRTUAL TABLE entries_fts USING fts5 (text, tokenize = 'trigram case_sensitive 1');
