CREATE TABLE schema_version (
        app TEXT NOT NULL,
        version INTEGER NOT NULL,
        applied_at_ms INTEGER NOT NULL
    );
INSERT INTO "schema_version" (app, version, applied_at_ms) VALUES ('sessiontree', 1, 1796286048456);
INSERT INTO "schema_version" (app, version, applied_at_ms) VALUES ('sessiontree', 2, 1796286048456);
INSERT INTO "schema_version" (app, version, applied_at_ms) VALUES ('sessiontree', 3, 1796286048457);
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
INSERT INTO "sessions" (id, metadata, created_us, modified_us, leaf_id, name, entry_count, message_count, first_message, parent_session_id) VALUES ('old-a', '{"systemPrompt":"be brief","cwd":"/work","team":"blue","rank":3}', 1796286048470823, 1796286048472370, '01a23afd-e8d8-7733-83c3-24401ac65c67', 'zebra hunt', 7, 4, 'Find the Zebra crossing', NULL);
INSERT INTO "sessions" (id, metadata, created_us, modified_us, leaf_id, name, entry_count, message_count, first_message, parent_session_id) VALUES ('old-b', '{"team":"red","note":"a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note "}', 1796286048472428, 1796286048472734, NULL, NULL, 2, 1, 'hello b', NULL);
INSERT INTO "sessions" (id, metadata, created_us, modified_us, leaf_id, name, entry_count, message_count, first_message, parent_session_id) VALUES ('old-empty', '{}', 1796286048472777, 1796286048472777, NULL, NULL, 0, 0, NULL, NULL);
INSERT INTO "sessions" (id, metadata, created_us, modified_us, leaf_id, name, entry_count, message_count, first_message, parent_session_id) VALUES ('01a23afd-e8d9-768a-a2a0-019b24e634fa', '{"systemPrompt":"be brief","cwd":"/work","parentSessionId":"old-a","forkedFromEntryId":"01a23afd-e8d7-72e8-a286-4457d7c7c347","team":"blue","rank":3}', 1796286048473096, 1796286048473186, '01a23afd-e8d7-72e8-a286-4457d7c7c347', NULL, 4, 3, 'Find the Zebra crossing', 'old-a');
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
INSERT INTO "entries" (session_id, seq, id, parent_id, type, timestamp, target_id, body) VALUES ('old-a', 0, '01a23afd-e8d7-72e8-a286-44554bd8972d', NULL, 'message', '2026-12-03T08:20:48.471Z', NULL, '{"type":"message","id":"01a23afd-e8d7-72e8-a286-44554bd8972d","parentId":null,"timestamp":"2026-12-03T08:20:48.471Z","message":{"role":"user","content":"Find the Zebra crossing","timestamp":1796286048471}}');
INSERT INTO "entries" (session_id, seq, id, parent_id, type, timestamp, target_id, body) VALUES ('old-a', 1, '01a23afd-e8d7-72e8-a286-445674323eb6', '01a23afd-e8d7-72e8-a286-44554bd8972d', 'message', '2026-12-03T08:20:48.471Z', NULL, '{"type":"message","id":"01a23afd-e8d7-72e8-a286-445674323eb6","parentId":"01a23afd-e8d7-72e8-a286-44554bd8972d","timestamp":"2026-12-03T08:20:48.471Z","message":{"role":"assistant","content":[{"type":"text","text":"The zebra crossing is on Elm Street"}],"timestamp":1796286048471}}');
INSERT INTO "entries" (session_id, seq, id, parent_id, type, timestamp, target_id, body) VALUES ('old-a', 2, '01a23afd-e8d7-72e8-a286-4457d7c7c347', '01a23afd-e8d7-72e8-a286-445674323eb6', 'message', '2026-12-03T08:20:48.471Z', NULL, '{"type":"message","id":"01a23afd-e8d7-72e8-a286-4457d7c7c347","parentId":"01a23afd-e8d7-72e8-a286-445674323eb6","timestamp":"2026-12-03T08:20:48.471Z","message":{"role":"user","content":"and the bakery?","timestamp":1796286048471}}');
INSERT INTO "entries" (session_id, seq, id, parent_id, type, timestamp, target_id, body) VALUES ('old-a', 3, '01a23afd-e8d7-72e8-a286-4458b3633f3f', '01a23afd-e8d7-72e8-a286-4457d7c7c347', 'label', '2026-12-03T08:20:48.471Z', '01a23afd-e8d7-72e8-a286-445674323eb6', '{"type":"label","id":"01a23afd-e8d7-72e8-a286-4458b3633f3f","parentId":"01a23afd-e8d7-72e8-a286-4457d7c7c347","timestamp":"2026-12-03T08:20:48.471Z","targetId":"01a23afd-e8d7-72e8-a286-445674323eb6","label":"answer"}');
INSERT INTO "entries" (session_id, seq, id, parent_id, type, timestamp, target_id, body) VALUES ('old-a', 4, '01a23afd-e8d8-7733-83c3-243ecb43018f', '01a23afd-e8d7-72e8-a286-4457d7c7c347', 'session_info', '2026-12-03T08:20:48.472Z', NULL, '{"type":"session_info","id":"01a23afd-e8d8-7733-83c3-243ecb43018f","parentId":"01a23afd-e8d7-72e8-a286-4457d7c7c347","timestamp":"2026-12-03T08:20:48.472Z","name":"zebra hunt"}');
INSERT INTO "entries" (session_id, seq, id, parent_id, type, timestamp, target_id, body) VALUES ('old-a', 5, '01a23afd-e8d8-7733-83c3-243f7f2c6ffe', '01a23afd-e8d7-72e8-a286-4457d7c7c347', 'leaf', '2026-12-03T08:20:48.472Z', '01a23afd-e8d7-72e8-a286-445674323eb6', '{"type":"leaf","id":"01a23afd-e8d8-7733-83c3-243f7f2c6ffe","parentId":"01a23afd-e8d7-72e8-a286-4457d7c7c347","timestamp":"2026-12-03T08:20:48.472Z","targetId":"01a23afd-e8d7-72e8-a286-445674323eb6"}');
INSERT INTO "entries" (session_id, seq, id, parent_id, type, timestamp, target_id, body) VALUES ('old-a', 6, '01a23afd-e8d8-7733-83c3-24401ac65c67', '01a23afd-e8d7-72e8-a286-445674323eb6', 'message', '2026-12-03T08:20:48.472Z', NULL, '{"type":"message","id":"01a23afd-e8d8-7733-83c3-24401ac65c67","parentId":"01a23afd-e8d7-72e8-a286-445674323eb6","timestamp":"2026-12-03T08:20:48.472Z","message":{"role":"user","content":"Other branch: the museum","timestamp":1796286048472}}');
INSERT INTO "entries" (session_id, seq, id, parent_id, type, timestamp, target_id, body) VALUES ('old-b', 0, '01a23afd-e8d8-7733-83c3-2441deb3e30c', NULL, 'message', '2026-12-03T08:20:48.472Z', NULL, '{"type":"message","id":"01a23afd-e8d8-7733-83c3-2441deb3e30c","parentId":null,"timestamp":"2026-12-03T08:20:48.472Z","message":{"role":"user","content":"hello b","timestamp":1796286048472}}');
INSERT INTO "entries" (session_id, seq, id, parent_id, type, timestamp, target_id, body) VALUES ('old-b', 1, '01a23afd-e8d8-7733-83c3-2442fea7a4a0', '01a23afd-e8d8-7733-83c3-2441deb3e30c', 'leaf', '2026-12-03T08:20:48.472Z', NULL, '{"type":"leaf","id":"01a23afd-e8d8-7733-83c3-2442fea7a4a0","parentId":"01a23afd-e8d8-7733-83c3-2441deb3e30c","timestamp":"2026-12-03T08:20:48.472Z","targetId":null}');
INSERT INTO "entries" (session_id, seq, id, parent_id, type, timestamp, target_id, body) VALUES ('01a23afd-e8d9-768a-a2a0-019b24e634fa', 0, '01a23afd-e8d7-72e8-a286-44554bd8972d', NULL, 'message', '2026-12-03T08:20:48.471Z', NULL, '{"type":"message","id":"01a23afd-e8d7-72e8-a286-44554bd8972d","parentId":null,"timestamp":"2026-12-03T08:20:48.471Z","message":{"role":"user","content":"Find the Zebra crossing","timestamp":1796286048471}}');
INSERT INTO "entries" (session_id, seq, id, parent_id, type, timestamp, target_id, body) VALUES ('01a23afd-e8d9-768a-a2a0-019b24e634fa', 1, '01a23afd-e8d7-72e8-a286-445674323eb6', '01a23afd-e8d7-72e8-a286-44554bd8972d', 'message', '2026-12-03T08:20:48.471Z', NULL, '{"type":"message","id":"01a23afd-e8d7-72e8-a286-445674323eb6","parentId":"01a23afd-e8d7-72e8-a286-44554bd8972d","timestamp":"2026-12-03T08:20:48.471Z","message":{"role":"assistant","content":[{"type":"text","text":"The zebra crossing is on Elm Street"}],"timestamp":1796286048471}}');
INSERT INTO "entries" (session_id, seq, id, parent_id, type, timestamp, target_id, body) VALUES ('01a23afd-e8d9-768a-a2a0-019b24e634fa', 2, '01a23afd-e8d7-72e8-a286-4457d7c7c347', '01a23afd-e8d7-72e8-a286-445674323eb6', 'message', '2026-12-03T08:20:48.471Z', NULL, '{"type":"message","id":"01a23afd-e8d7-72e8-a286-4457d7c7c347","parentId":"01a23afd-e8d7-72e8-a286-445674323eb6","timestamp":"2026-12-03T08:20:48.471Z","message":{"role":"user","content":"and the bakery?","timestamp":1796286048471}}');
INSERT INTO "entries" (session_id, seq, id, parent_id, type, timestamp, target_id, body) VALUES ('01a23afd-e8d9-768a-a2a0-019b24e634fa', 3, '01a23afd-e8d9-768a-a2a0-019a129830c5', '01a23afd-e8d7-72e8-a286-4457d7c7c347', 'label', '2026-12-03T08:20:48.473Z', '01a23afd-e8d7-72e8-a286-445674323eb6', '{"type":"label","id":"01a23afd-e8d9-768a-a2a0-019a129830c5","parentId":"01a23afd-e8d7-72e8-a286-4457d7c7c347","timestamp":"2026-12-03T08:20:48.473Z","targetId":"01a23afd-e8d7-72e8-a286-445674323eb6","label":"answer"}');
CREATE INDEX entries_labels ON entries (session_id, target_id, seq) WHERE type = 'label';
CREATE INDEX entries_names ON entries (session_id, seq) WHERE type = 'session_info';
CREATE TABLE search_index_state (indexed_upto INTEGER NOT NULL);
INSERT INTO "search_index_state" (indexed_upto) VALUES (0);
CREATE VIRTUAL TABLE entries_fts USING fts5 (text, tokenize = 'trigram case_sensitive 1');
