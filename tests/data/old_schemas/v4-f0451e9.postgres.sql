CREATE TABLE @SCHEMA@.entries (
    session_id text NOT NULL,
    seq bigint NOT NULL,
    id text NOT NULL,
    parent_id text,
    type text NOT NULL,
    "timestamp" text NOT NULL,
    target_id text,
    body json NOT NULL,
    search_text text
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
INSERT INTO @SCHEMA@.entries VALUES ('old-a', 0, '01a23afd-f2a2-7148-8041-a88a996284ff', NULL, 'message', '2026-12-03T08:20:50.978Z', NULL, '{"type":"message","id":"01a23afd-f2a2-7148-8041-a88a996284ff","parentId":null,"timestamp":"2026-12-03T08:20:50.978Z","message":{"role":"user","content":"Find the Zebra crossing","timestamp":1796286050978}}', 'find the zebra crossing');
INSERT INTO @SCHEMA@.entries VALUES ('old-a', 1, '01a23afd-f2b3-74a4-9efc-20b43f36faa1', '01a23afd-f2a2-7148-8041-a88a996284ff', 'message', '2026-12-03T08:20:50.995Z', NULL, '{"type":"message","id":"01a23afd-f2b3-74a4-9efc-20b43f36faa1","parentId":"01a23afd-f2a2-7148-8041-a88a996284ff","timestamp":"2026-12-03T08:20:50.995Z","message":{"role":"assistant","content":[{"type":"text","text":"The zebra crossing is on Elm Street"}],"timestamp":1796286050995}}', 'the zebra crossing is on elm street');
INSERT INTO @SCHEMA@.entries VALUES ('old-a', 2, '01a23afd-f2bc-7080-b219-0f7241fa61fa', '01a23afd-f2b3-74a4-9efc-20b43f36faa1', 'message', '2026-12-03T08:20:51.004Z', NULL, '{"type":"message","id":"01a23afd-f2bc-7080-b219-0f7241fa61fa","parentId":"01a23afd-f2b3-74a4-9efc-20b43f36faa1","timestamp":"2026-12-03T08:20:51.004Z","message":{"role":"user","content":"and the bakery?","timestamp":1796286051004}}', 'and the bakery?');
INSERT INTO @SCHEMA@.entries VALUES ('old-a', 3, '01a23afd-f2c4-7432-9e3c-fb6dadeaeee8', '01a23afd-f2bc-7080-b219-0f7241fa61fa', 'label', '2026-12-03T08:20:51.012Z', '01a23afd-f2b3-74a4-9efc-20b43f36faa1', '{"type":"label","id":"01a23afd-f2c4-7432-9e3c-fb6dadeaeee8","parentId":"01a23afd-f2bc-7080-b219-0f7241fa61fa","timestamp":"2026-12-03T08:20:51.012Z","targetId":"01a23afd-f2b3-74a4-9efc-20b43f36faa1","label":"answer"}', NULL);
INSERT INTO @SCHEMA@.entries VALUES ('old-a', 4, '01a23afd-f2ce-73e4-9dc0-c5237881c53e', '01a23afd-f2bc-7080-b219-0f7241fa61fa', 'session_info', '2026-12-03T08:20:51.022Z', NULL, '{"type":"session_info","id":"01a23afd-f2ce-73e4-9dc0-c5237881c53e","parentId":"01a23afd-f2bc-7080-b219-0f7241fa61fa","timestamp":"2026-12-03T08:20:51.022Z","name":"zebra hunt"}', NULL);
INSERT INTO @SCHEMA@.entries VALUES ('old-a', 5, '01a23afd-f2d7-7380-b3b2-6b0833fac653', '01a23afd-f2bc-7080-b219-0f7241fa61fa', 'leaf', '2026-12-03T08:20:51.031Z', '01a23afd-f2b3-74a4-9efc-20b43f36faa1', '{"type":"leaf","id":"01a23afd-f2d7-7380-b3b2-6b0833fac653","parentId":"01a23afd-f2bc-7080-b219-0f7241fa61fa","timestamp":"2026-12-03T08:20:51.031Z","targetId":"01a23afd-f2b3-74a4-9efc-20b43f36faa1"}', NULL);
INSERT INTO @SCHEMA@.entries VALUES ('old-a', 6, '01a23afd-f2e3-73bb-88a5-37d9f041dc82', '01a23afd-f2b3-74a4-9efc-20b43f36faa1', 'message', '2026-12-03T08:20:51.043Z', NULL, '{"type":"message","id":"01a23afd-f2e3-73bb-88a5-37d9f041dc82","parentId":"01a23afd-f2b3-74a4-9efc-20b43f36faa1","timestamp":"2026-12-03T08:20:51.043Z","message":{"role":"user","content":"Other branch: the museum","timestamp":1796286051043}}', 'other branch: the museum');
INSERT INTO @SCHEMA@.entries VALUES ('old-b', 0, '01a23afd-f2f6-716e-a5ab-93fc772b744b', NULL, 'message', '2026-12-03T08:20:51.062Z', NULL, '{"type":"message","id":"01a23afd-f2f6-716e-a5ab-93fc772b744b","parentId":null,"timestamp":"2026-12-03T08:20:51.062Z","message":{"role":"user","content":"hello b","timestamp":1796286051062}}', 'hello b');
INSERT INTO @SCHEMA@.entries VALUES ('old-b', 1, '01a23afd-f2f7-70de-9c10-b53a70efbec7', '01a23afd-f2f6-716e-a5ab-93fc772b744b', 'leaf', '2026-12-03T08:20:51.063Z', NULL, '{"type":"leaf","id":"01a23afd-f2f7-70de-9c10-b53a70efbec7","parentId":"01a23afd-f2f6-716e-a5ab-93fc772b744b","timestamp":"2026-12-03T08:20:51.063Z","targetId":null}', NULL);
INSERT INTO @SCHEMA@.entries VALUES ('01a23afd-f317-7225-9109-485bbe20f665', 0, '01a23afd-f2a2-7148-8041-a88a996284ff', NULL, 'message', '2026-12-03T08:20:50.978Z', NULL, '{"type":"message","id":"01a23afd-f2a2-7148-8041-a88a996284ff","parentId":null,"timestamp":"2026-12-03T08:20:50.978Z","message":{"role":"user","content":"Find the Zebra crossing","timestamp":1796286050978}}', 'find the zebra crossing');
INSERT INTO @SCHEMA@.entries VALUES ('01a23afd-f317-7225-9109-485bbe20f665', 1, '01a23afd-f2b3-74a4-9efc-20b43f36faa1', '01a23afd-f2a2-7148-8041-a88a996284ff', 'message', '2026-12-03T08:20:50.995Z', NULL, '{"type":"message","id":"01a23afd-f2b3-74a4-9efc-20b43f36faa1","parentId":"01a23afd-f2a2-7148-8041-a88a996284ff","timestamp":"2026-12-03T08:20:50.995Z","message":{"role":"assistant","content":[{"type":"text","text":"The zebra crossing is on Elm Street"}],"timestamp":1796286050995}}', 'the zebra crossing is on elm street');
INSERT INTO @SCHEMA@.entries VALUES ('01a23afd-f317-7225-9109-485bbe20f665', 2, '01a23afd-f2bc-7080-b219-0f7241fa61fa', '01a23afd-f2b3-74a4-9efc-20b43f36faa1', 'message', '2026-12-03T08:20:51.004Z', NULL, '{"type":"message","id":"01a23afd-f2bc-7080-b219-0f7241fa61fa","parentId":"01a23afd-f2b3-74a4-9efc-20b43f36faa1","timestamp":"2026-12-03T08:20:51.004Z","message":{"role":"user","content":"and the bakery?","timestamp":1796286051004}}', 'and the bakery?');
INSERT INTO @SCHEMA@.entries VALUES ('01a23afd-f317-7225-9109-485bbe20f665', 3, '01a23afd-f317-7225-9109-485a7bff2c91', '01a23afd-f2bc-7080-b219-0f7241fa61fa', 'label', '2026-12-03T08:20:51.095Z', '01a23afd-f2b3-74a4-9efc-20b43f36faa1', '{"type":"label","id":"01a23afd-f317-7225-9109-485a7bff2c91","parentId":"01a23afd-f2bc-7080-b219-0f7241fa61fa","timestamp":"2026-12-03T08:20:51.095Z","targetId":"01a23afd-f2b3-74a4-9efc-20b43f36faa1","label":"answer"}', NULL);
INSERT INTO @SCHEMA@.schema_version VALUES ('sessiontree', 1, 1796286050931);
INSERT INTO @SCHEMA@.schema_version VALUES ('sessiontree', 2, 1796286050932);
INSERT INTO @SCHEMA@.schema_version VALUES ('sessiontree', 3, 1796286050944);
INSERT INTO @SCHEMA@.schema_version VALUES ('sessiontree', 4, 1796286050946);
INSERT INTO @SCHEMA@.session_meta VALUES ('systemPrompt', '"be brief"', 'old-a');
INSERT INTO @SCHEMA@.session_meta VALUES ('cwd', '"/work"', 'old-a');
INSERT INTO @SCHEMA@.session_meta VALUES ('team', '"blue"', 'old-a');
INSERT INTO @SCHEMA@.session_meta VALUES ('rank', '3', 'old-a');
INSERT INTO @SCHEMA@.session_meta VALUES ('team', '"red"', 'old-b');
INSERT INTO @SCHEMA@.session_meta VALUES ('note', '"a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note "', 'old-b');
INSERT INTO @SCHEMA@.session_meta VALUES ('systemPrompt', '"be brief"', '01a23afd-f317-7225-9109-485bbe20f665');
INSERT INTO @SCHEMA@.session_meta VALUES ('cwd', '"/work"', '01a23afd-f317-7225-9109-485bbe20f665');
INSERT INTO @SCHEMA@.session_meta VALUES ('parentSessionId', '"old-a"', '01a23afd-f317-7225-9109-485bbe20f665');
INSERT INTO @SCHEMA@.session_meta VALUES ('forkedFromEntryId', '"01a23afd-f2bc-7080-b219-0f7241fa61fa"', '01a23afd-f317-7225-9109-485bbe20f665');
INSERT INTO @SCHEMA@.session_meta VALUES ('team', '"blue"', '01a23afd-f317-7225-9109-485bbe20f665');
INSERT INTO @SCHEMA@.session_meta VALUES ('rank', '3', '01a23afd-f317-7225-9109-485bbe20f665');
INSERT INTO @SCHEMA@.sessions VALUES ('old-a', '{"systemPrompt":"be brief","cwd":"/work","team":"blue","rank":3}', 1796286050887728, 1796286051043651, '01a23afd-f2e3-73bb-88a5-37d9f041dc82', 'zebra hunt', 7, 4, 'Find the Zebra crossing', NULL);
INSERT INTO @SCHEMA@.sessions VALUES ('old-b', '{"team":"red","note":"a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note "}', 1796286051055500, 1796286051063550, NULL, NULL, 2, 1, 'hello b', NULL);
INSERT INTO @SCHEMA@.sessions VALUES ('old-empty', '{}', 1796286051072021, 1796286051072021, NULL, NULL, 0, 0, NULL, NULL);
INSERT INTO @SCHEMA@.sessions VALUES ('01a23afd-f317-7225-9109-485bbe20f665', '{"systemPrompt":"be brief","cwd":"/work","parentSessionId":"old-a","forkedFromEntryId":"01a23afd-f2bc-7080-b219-0f7241fa61fa","team":"blue","rank":3}', 1796286051095962, 1796286051104854, '01a23afd-f2bc-7080-b219-0f7241fa61fa', NULL, 4, 3, 'Find the Zebra crossing', 'old-a');
ALTER TABLE ONLY @SCHEMA@.entries
    ADD CONSTRAINT entries_pkey PRIMARY KEY (session_id, seq);
ALTER TABLE ONLY @SCHEMA@.entries
    ADD CONSTRAINT entries_session_id_id_key UNIQUE (session_id, id);
ALTER TABLE ONLY @SCHEMA@.session_meta
    ADD CONSTRAINT session_meta_pkey PRIMARY KEY (key, value, session_id);
ALTER TABLE ONLY @SCHEMA@.sessions
    ADD CONSTRAINT sessions_pkey PRIMARY KEY (id);
CREATE INDEX entries_labels ON @SCHEMA@.entries USING btree (session_id, target_id, seq) WHERE (type = 'label'::text);
CREATE INDEX entries_names ON @SCHEMA@.entries USING btree (session_id, seq) WHERE (type = 'session_info'::text);
CREATE INDEX entries_search ON @SCHEMA@.entries USING gin (search_text public.gin_trgm_ops) WHERE (search_text IS NOT NULL);
CREATE INDEX session_meta_by_session ON @SCHEMA@.session_meta USING btree (session_id);
CREATE INDEX sessions_by_modified ON @SCHEMA@.sessions USING btree (modified_us DESC, id DESC);
ALTER TABLE ONLY @SCHEMA@.entries
    ADD CONSTRAINT entries_session_id_fkey FOREIGN KEY (session_id) REFERENCES @SCHEMA@.sessions(id) ON DELETE CASCADE;
ALTER TABLE ONLY @SCHEMA@.session_meta
    ADD CONSTRAINT session_meta_session_id_fkey FOREIGN KEY (session_id) REFERENCES @SCHEMA@.sessions(id) ON DELETE CASCADE;
