CREATE TABLE @SCHEMA@.entries (
    session_id text NOT NULL,
    seq bigint NOT NULL,
    id text NOT NULL,
    parent_id text,
    type text NOT NULL,
    "timestamp" text NOT NULL,
    target_id text,
    body json NOT NULL,
    fts tsvector
);
CREATE TABLE @SCHEMA@.schema_version (
    app text NOT NULL,
    version integer NOT NULL,
    applied_at_ms bigint NOT NULL
);
CREATE TABLE @SCHEMA@.session_meta (
    key text NOT NULL,
    value text NOT NULL,
    session_id text NOT NULL
);
CREATE TABLE @SCHEMA@.sessions (
    id text NOT NULL,
    metadata json NOT NULL,
    created_us bigint NOT NULL,
    modified_us bigint NOT NULL,
    leaf_id text,
    name text,
    entry_count bigint DEFAULT 0 NOT NULL,
    message_count bigint DEFAULT 0 NOT NULL,
    first_message text,
    parent_session_id text
);
INSERT INTO @SCHEMA@.entries VALUES ('old-a', 0, '01a23afd-e48f-77c0-9e50-7818b84fb88d', NULL, 'message', '2026-12-03T08:20:47.375Z', NULL, '{"type":"message","id":"01a23afd-e48f-77c0-9e50-7818b84fb88d","parentId":null,"timestamp":"2026-12-03T08:20:47.375Z","message":{"role":"user","content":"Find the Zebra crossing","timestamp":1796286047375}}', '''crossing'':4 ''find'':1 ''the'':2 ''zebra'':3');
INSERT INTO @SCHEMA@.entries VALUES ('old-a', 1, '01a23afd-e49f-7531-a4e3-d90eaab947f5', '01a23afd-e48f-77c0-9e50-7818b84fb88d', 'message', '2026-12-03T08:20:47.391Z', NULL, '{"type":"message","id":"01a23afd-e49f-7531-a4e3-d90eaab947f5","parentId":"01a23afd-e48f-77c0-9e50-7818b84fb88d","timestamp":"2026-12-03T08:20:47.391Z","message":{"role":"assistant","content":[{"type":"text","text":"The zebra crossing is on Elm Street"}],"timestamp":1796286047391}}', '''crossing'':3 ''elm'':6 ''is'':4 ''on'':5 ''street'':7 ''the'':1 ''zebra'':2');
INSERT INTO @SCHEMA@.entries VALUES ('old-a', 2, '01a23afd-e4aa-76e4-adbf-b84ea708d2e0', '01a23afd-e49f-7531-a4e3-d90eaab947f5', 'message', '2026-12-03T08:20:47.402Z', NULL, '{"type":"message","id":"01a23afd-e4aa-76e4-adbf-b84ea708d2e0","parentId":"01a23afd-e49f-7531-a4e3-d90eaab947f5","timestamp":"2026-12-03T08:20:47.402Z","message":{"role":"user","content":"and the bakery?","timestamp":1796286047402}}', '''and'':1 ''bakery'':3 ''the'':2');
INSERT INTO @SCHEMA@.entries VALUES ('old-a', 3, '01a23afd-e4b3-756b-a12c-cddb45c891d4', '01a23afd-e4aa-76e4-adbf-b84ea708d2e0', 'label', '2026-12-03T08:20:47.411Z', '01a23afd-e49f-7531-a4e3-d90eaab947f5', '{"type":"label","id":"01a23afd-e4b3-756b-a12c-cddb45c891d4","parentId":"01a23afd-e4aa-76e4-adbf-b84ea708d2e0","timestamp":"2026-12-03T08:20:47.411Z","targetId":"01a23afd-e49f-7531-a4e3-d90eaab947f5","label":"answer"}', NULL);
INSERT INTO @SCHEMA@.entries VALUES ('old-a', 4, '01a23afd-e4ba-75f0-96b5-a9d7e4ba2465', '01a23afd-e4aa-76e4-adbf-b84ea708d2e0', 'session_info', '2026-12-03T08:20:47.418Z', NULL, '{"type":"session_info","id":"01a23afd-e4ba-75f0-96b5-a9d7e4ba2465","parentId":"01a23afd-e4aa-76e4-adbf-b84ea708d2e0","timestamp":"2026-12-03T08:20:47.418Z","name":"zebra hunt"}', NULL);
INSERT INTO @SCHEMA@.entries VALUES ('old-a', 5, '01a23afd-e4bb-77e4-858e-9f08be35694f', '01a23afd-e4aa-76e4-adbf-b84ea708d2e0', 'leaf', '2026-12-03T08:20:47.419Z', '01a23afd-e49f-7531-a4e3-d90eaab947f5', '{"type":"leaf","id":"01a23afd-e4bb-77e4-858e-9f08be35694f","parentId":"01a23afd-e4aa-76e4-adbf-b84ea708d2e0","timestamp":"2026-12-03T08:20:47.419Z","targetId":"01a23afd-e49f-7531-a4e3-d90eaab947f5"}', NULL);
INSERT INTO @SCHEMA@.entries VALUES ('old-a', 6, '01a23afd-e4c7-7531-8bd3-aaedcb8f8650', '01a23afd-e49f-7531-a4e3-d90eaab947f5', 'message', '2026-12-03T08:20:47.431Z', NULL, '{"type":"message","id":"01a23afd-e4c7-7531-8bd3-aaedcb8f8650","parentId":"01a23afd-e49f-7531-a4e3-d90eaab947f5","timestamp":"2026-12-03T08:20:47.431Z","message":{"role":"user","content":"Other branch: the museum","timestamp":1796286047431}}', '''branch'':2 ''museum'':4 ''other'':1 ''the'':3');
INSERT INTO @SCHEMA@.entries VALUES ('old-b', 0, '01a23afd-e4cc-737e-b50d-7738ea5f2156', NULL, 'message', '2026-12-03T08:20:47.436Z', NULL, '{"type":"message","id":"01a23afd-e4cc-737e-b50d-7738ea5f2156","parentId":null,"timestamp":"2026-12-03T08:20:47.436Z","message":{"role":"user","content":"hello b","timestamp":1796286047436}}', '''b'':2 ''hello'':1');
INSERT INTO @SCHEMA@.entries VALUES ('old-b', 1, '01a23afd-e4d0-70d9-b872-b529a3530d52', '01a23afd-e4cc-737e-b50d-7738ea5f2156', 'leaf', '2026-12-03T08:20:47.440Z', NULL, '{"type":"leaf","id":"01a23afd-e4d0-70d9-b872-b529a3530d52","parentId":"01a23afd-e4cc-737e-b50d-7738ea5f2156","timestamp":"2026-12-03T08:20:47.440Z","targetId":null}', NULL);
INSERT INTO @SCHEMA@.entries VALUES ('01a23afd-e4e3-7176-9c8c-ddb3daeb3a6c', 0, '01a23afd-e48f-77c0-9e50-7818b84fb88d', NULL, 'message', '2026-12-03T08:20:47.375Z', NULL, '{"type":"message","id":"01a23afd-e48f-77c0-9e50-7818b84fb88d","parentId":null,"timestamp":"2026-12-03T08:20:47.375Z","message":{"role":"user","content":"Find the Zebra crossing","timestamp":1796286047375}}', '''crossing'':4 ''find'':1 ''the'':2 ''zebra'':3');
INSERT INTO @SCHEMA@.entries VALUES ('01a23afd-e4e3-7176-9c8c-ddb3daeb3a6c', 1, '01a23afd-e49f-7531-a4e3-d90eaab947f5', '01a23afd-e48f-77c0-9e50-7818b84fb88d', 'message', '2026-12-03T08:20:47.391Z', NULL, '{"type":"message","id":"01a23afd-e49f-7531-a4e3-d90eaab947f5","parentId":"01a23afd-e48f-77c0-9e50-7818b84fb88d","timestamp":"2026-12-03T08:20:47.391Z","message":{"role":"assistant","content":[{"type":"text","text":"The zebra crossing is on Elm Street"}],"timestamp":1796286047391}}', '''crossing'':3 ''elm'':6 ''is'':4 ''on'':5 ''street'':7 ''the'':1 ''zebra'':2');
INSERT INTO @SCHEMA@.entries VALUES ('01a23afd-e4e3-7176-9c8c-ddb3daeb3a6c', 2, '01a23afd-e4aa-76e4-adbf-b84ea708d2e0', '01a23afd-e49f-7531-a4e3-d90eaab947f5', 'message', '2026-12-03T08:20:47.402Z', NULL, '{"type":"message","id":"01a23afd-e4aa-76e4-adbf-b84ea708d2e0","parentId":"01a23afd-e49f-7531-a4e3-d90eaab947f5","timestamp":"2026-12-03T08:20:47.402Z","message":{"role":"user","content":"and the bakery?","timestamp":1796286047402}}', '''and'':1 ''bakery'':3 ''the'':2');
INSERT INTO @SCHEMA@.entries VALUES ('01a23afd-e4e3-7176-9c8c-ddb3daeb3a6c', 3, '01a23afd-e4e3-7176-9c8c-ddb27c496dec', '01a23afd-e4aa-76e4-adbf-b84ea708d2e0', 'label', '2026-12-03T08:20:47.459Z', '01a23afd-e49f-7531-a4e3-d90eaab947f5', '{"type":"label","id":"01a23afd-e4e3-7176-9c8c-ddb27c496dec","parentId":"01a23afd-e4aa-76e4-adbf-b84ea708d2e0","timestamp":"2026-12-03T08:20:47.459Z","targetId":"01a23afd-e49f-7531-a4e3-d90eaab947f5","label":"answer"}', NULL);
INSERT INTO @SCHEMA@.schema_version VALUES ('sessiontree', 1, 1796286047327);
INSERT INTO @SCHEMA@.schema_version VALUES ('sessiontree', 2, 1796286047330);
INSERT INTO @SCHEMA@.schema_version VALUES ('sessiontree', 3, 1796286047355);
INSERT INTO @SCHEMA@.session_meta VALUES ('systemPrompt', '"be brief"', 'old-a');
INSERT INTO @SCHEMA@.session_meta VALUES ('cwd', '"/work"', 'old-a');
INSERT INTO @SCHEMA@.session_meta VALUES ('team', '"blue"', 'old-a');
INSERT INTO @SCHEMA@.session_meta VALUES ('rank', '3', 'old-a');
INSERT INTO @SCHEMA@.session_meta VALUES ('team', '"red"', 'old-b');
INSERT INTO @SCHEMA@.session_meta VALUES ('note', '"a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note "', 'old-b');
INSERT INTO @SCHEMA@.session_meta VALUES ('systemPrompt', '"be brief"', '01a23afd-e4e3-7176-9c8c-ddb3daeb3a6c');
INSERT INTO @SCHEMA@.session_meta VALUES ('cwd', '"/work"', '01a23afd-e4e3-7176-9c8c-ddb3daeb3a6c');
INSERT INTO @SCHEMA@.session_meta VALUES ('parentSessionId', '"old-a"', '01a23afd-e4e3-7176-9c8c-ddb3daeb3a6c');
INSERT INTO @SCHEMA@.session_meta VALUES ('forkedFromEntryId', '"01a23afd-e4aa-76e4-adbf-b84ea708d2e0"', '01a23afd-e4e3-7176-9c8c-ddb3daeb3a6c');
INSERT INTO @SCHEMA@.session_meta VALUES ('team', '"blue"', '01a23afd-e4e3-7176-9c8c-ddb3daeb3a6c');
INSERT INTO @SCHEMA@.session_meta VALUES ('rank', '3', '01a23afd-e4e3-7176-9c8c-ddb3daeb3a6c');
INSERT INTO @SCHEMA@.sessions VALUES ('old-a', '{"systemPrompt":"be brief","cwd":"/work","team":"blue","rank":3}', 1796286047246304, 1796286047431514, '01a23afd-e4c7-7531-8bd3-aaedcb8f8650', 'zebra hunt', 7, 4, 'Find the Zebra crossing', NULL);
INSERT INTO @SCHEMA@.sessions VALUES ('old-b', '{"team":"red","note":"a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note "}', 1796286047432281, 1796286047440316, NULL, NULL, 2, 1, 'hello b', NULL);
INSERT INTO @SCHEMA@.sessions VALUES ('old-empty', '{}', 1796286047447330, 1796286047447330, NULL, NULL, 0, 0, NULL, NULL);
INSERT INTO @SCHEMA@.sessions VALUES ('01a23afd-e4e3-7176-9c8c-ddb3daeb3a6c', '{"systemPrompt":"be brief","cwd":"/work","parentSessionId":"old-a","forkedFromEntryId":"01a23afd-e4aa-76e4-adbf-b84ea708d2e0","team":"blue","rank":3}', 1796286047459925, 1796286047467316, '01a23afd-e4aa-76e4-adbf-b84ea708d2e0', NULL, 4, 3, 'Find the Zebra crossing', 'old-a');
ALTER TABLE ONLY @SCHEMA@.entries
    ADD CONSTRAINT entries_pkey PRIMARY KEY (session_id, seq);
ALTER TABLE ONLY @SCHEMA@.entries
    ADD CONSTRAINT entries_session_id_id_key UNIQUE (session_id, id);
ALTER TABLE ONLY @SCHEMA@.session_meta
    ADD CONSTRAINT session_meta_pkey PRIMARY KEY (key, value, session_id);
ALTER TABLE ONLY @SCHEMA@.sessions
    ADD CONSTRAINT sessions_pkey PRIMARY KEY (id);
CREATE INDEX entries_fts ON @SCHEMA@.entries USING gin (fts) WHERE (fts IS NOT NULL);
CREATE INDEX entries_labels ON @SCHEMA@.entries USING btree (session_id, target_id, seq) WHERE (type = 'label'::text);
CREATE INDEX entries_names ON @SCHEMA@.entries USING btree (session_id, seq) WHERE (type = 'session_info'::text);
CREATE INDEX session_meta_by_session ON @SCHEMA@.session_meta USING btree (session_id);
CREATE INDEX sessions_by_modified ON @SCHEMA@.sessions USING btree (modified_us DESC, id DESC);
ALTER TABLE ONLY @SCHEMA@.entries
    ADD CONSTRAINT entries_session_id_fkey FOREIGN KEY (session_id) REFERENCES @SCHEMA@.sessions(id) ON DELETE CASCADE;
ALTER TABLE ONLY @SCHEMA@.session_meta
    ADD CONSTRAINT session_meta_session_id_fkey FOREIGN KEY (session_id) REFERENCES @SCHEMA@.sessions(id) ON DELETE CASCADE;
