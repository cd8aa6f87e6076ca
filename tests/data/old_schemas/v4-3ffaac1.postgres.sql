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
INSERT INTO @SCHEMA@.entries VALUES ('old-a', 0, '01a23afd-fbf6-705c-8650-3e6b464b0d7d', NULL, 'message', '2026-12-03T08:20:53.366Z', NULL, '{"type":"message","id":"01a23afd-fbf6-705c-8650-3e6b464b0d7d","parentId":null,"timestamp":"2026-12-03T08:20:53.366Z","message":{"role":"user","content":"Find the Zebra crossing","timestamp":1796286053363}}', 'find the zebra crossing');
INSERT INTO @SCHEMA@.entries VALUES ('old-a', 1, '01a23afd-fc33-74aa-8cdd-2d31053af05a', '01a23afd-fbf6-705c-8650-3e6b464b0d7d', 'message', '2026-12-03T08:20:53.427Z', NULL, '{"type":"message","id":"01a23afd-fc33-74aa-8cdd-2d31053af05a","parentId":"01a23afd-fbf6-705c-8650-3e6b464b0d7d","timestamp":"2026-12-03T08:20:53.427Z","message":{"role":"assistant","content":[{"type":"text","text":"The zebra crossing is on Elm Street"}],"timestamp":1796286053427}}', 'the zebra crossing is on elm street');
INSERT INTO @SCHEMA@.entries VALUES ('old-a', 2, '01a23afd-fc3f-74b1-a94c-29b0495eea5b', '01a23afd-fc33-74aa-8cdd-2d31053af05a', 'message', '2026-12-03T08:20:53.439Z', NULL, '{"type":"message","id":"01a23afd-fc3f-74b1-a94c-29b0495eea5b","parentId":"01a23afd-fc33-74aa-8cdd-2d31053af05a","timestamp":"2026-12-03T08:20:53.439Z","message":{"role":"user","content":"and the bakery?","timestamp":1796286053439}}', 'and the bakery?');
INSERT INTO @SCHEMA@.entries VALUES ('old-a', 3, '01a23afd-fc47-77ef-a026-116d566ecdd9', '01a23afd-fc3f-74b1-a94c-29b0495eea5b', 'label', '2026-12-03T08:20:53.447Z', '01a23afd-fc33-74aa-8cdd-2d31053af05a', '{"type":"label","id":"01a23afd-fc47-77ef-a026-116d566ecdd9","parentId":"01a23afd-fc3f-74b1-a94c-29b0495eea5b","timestamp":"2026-12-03T08:20:53.447Z","targetId":"01a23afd-fc33-74aa-8cdd-2d31053af05a","label":"answer"}', NULL);
INSERT INTO @SCHEMA@.entries VALUES ('old-a', 4, '01a23afd-fc52-727d-a0ec-9535c0b6d3e2', '01a23afd-fc3f-74b1-a94c-29b0495eea5b', 'session_info', '2026-12-03T08:20:53.458Z', NULL, '{"type":"session_info","id":"01a23afd-fc52-727d-a0ec-9535c0b6d3e2","parentId":"01a23afd-fc3f-74b1-a94c-29b0495eea5b","timestamp":"2026-12-03T08:20:53.458Z","name":"zebra hunt"}', NULL);
INSERT INTO @SCHEMA@.entries VALUES ('old-a', 5, '01a23afd-fc5b-73c4-8e47-00205938e4b0', '01a23afd-fc3f-74b1-a94c-29b0495eea5b', 'leaf', '2026-12-03T08:20:53.467Z', '01a23afd-fc33-74aa-8cdd-2d31053af05a', '{"type":"leaf","id":"01a23afd-fc5b-73c4-8e47-00205938e4b0","parentId":"01a23afd-fc3f-74b1-a94c-29b0495eea5b","timestamp":"2026-12-03T08:20:53.467Z","targetId":"01a23afd-fc33-74aa-8cdd-2d31053af05a"}', NULL);
INSERT INTO @SCHEMA@.entries VALUES ('old-a', 6, '01a23afd-fc62-700d-b086-1a91c7bbb431', '01a23afd-fc33-74aa-8cdd-2d31053af05a', 'message', '2026-12-03T08:20:53.474Z', NULL, '{"type":"message","id":"01a23afd-fc62-700d-b086-1a91c7bbb431","parentId":"01a23afd-fc33-74aa-8cdd-2d31053af05a","timestamp":"2026-12-03T08:20:53.474Z","message":{"role":"user","content":"Other branch: the museum","timestamp":1796286053474}}', 'other branch: the museum');
INSERT INTO @SCHEMA@.entries VALUES ('old-b', 0, '01a23afd-fc73-76b9-b2c8-096ee2489e8a', NULL, 'message', '2026-12-03T08:20:53.491Z', NULL, '{"type":"message","id":"01a23afd-fc73-76b9-b2c8-096ee2489e8a","parentId":null,"timestamp":"2026-12-03T08:20:53.491Z","message":{"role":"user","content":"hello b","timestamp":1796286053491}}', 'hello b');
INSERT INTO @SCHEMA@.entries VALUES ('old-b', 1, '01a23afd-fc77-70f1-8dcc-41196a28fbd4', '01a23afd-fc73-76b9-b2c8-096ee2489e8a', 'leaf', '2026-12-03T08:20:53.495Z', NULL, '{"type":"leaf","id":"01a23afd-fc77-70f1-8dcc-41196a28fbd4","parentId":"01a23afd-fc73-76b9-b2c8-096ee2489e8a","timestamp":"2026-12-03T08:20:53.495Z","targetId":null}', NULL);
INSERT INTO @SCHEMA@.entries VALUES ('01a23afd-fc87-740c-bfd7-b07805a7a15a', 0, '01a23afd-fbf6-705c-8650-3e6b464b0d7d', NULL, 'message', '2026-12-03T08:20:53.366Z', NULL, '{"type":"message","id":"01a23afd-fbf6-705c-8650-3e6b464b0d7d","parentId":null,"timestamp":"2026-12-03T08:20:53.366Z","message":{"role":"user","content":"Find the Zebra crossing","timestamp":1796286053363}}', 'find the zebra crossing');
INSERT INTO @SCHEMA@.entries VALUES ('01a23afd-fc87-740c-bfd7-b07805a7a15a', 1, '01a23afd-fc33-74aa-8cdd-2d31053af05a', '01a23afd-fbf6-705c-8650-3e6b464b0d7d', 'message', '2026-12-03T08:20:53.427Z', NULL, '{"type":"message","id":"01a23afd-fc33-74aa-8cdd-2d31053af05a","parentId":"01a23afd-fbf6-705c-8650-3e6b464b0d7d","timestamp":"2026-12-03T08:20:53.427Z","message":{"role":"assistant","content":[{"type":"text","text":"The zebra crossing is on Elm Street"}],"timestamp":1796286053427}}', 'the zebra crossing is on elm street');
INSERT INTO @SCHEMA@.entries VALUES ('01a23afd-fc87-740c-bfd7-b07805a7a15a', 2, '01a23afd-fc3f-74b1-a94c-29b0495eea5b', '01a23afd-fc33-74aa-8cdd-2d31053af05a', 'message', '2026-12-03T08:20:53.439Z', NULL, '{"type":"message","id":"01a23afd-fc3f-74b1-a94c-29b0495eea5b","parentId":"01a23afd-fc33-74aa-8cdd-2d31053af05a","timestamp":"2026-12-03T08:20:53.439Z","message":{"role":"user","content":"and the bakery?","timestamp":1796286053439}}', 'and the bakery?');
INSERT INTO @SCHEMA@.entries VALUES ('01a23afd-fc87-740c-bfd7-b07805a7a15a', 3, '01a23afd-fc87-740c-bfd7-b077f3246d21', '01a23afd-fc3f-74b1-a94c-29b0495eea5b', 'label', '2026-12-03T08:20:53.511Z', '01a23afd-fc33-74aa-8cdd-2d31053af05a', '{"type":"label","id":"01a23afd-fc87-740c-bfd7-b077f3246d21","parentId":"01a23afd-fc3f-74b1-a94c-29b0495eea5b","timestamp":"2026-12-03T08:20:53.511Z","targetId":"01a23afd-fc33-74aa-8cdd-2d31053af05a","label":"answer"}', NULL);
INSERT INTO @SCHEMA@.schema_version VALUES ('sessiontree', 1, 1796286053261);
INSERT INTO @SCHEMA@.schema_version VALUES ('sessiontree', 2, 1796286053262);
INSERT INTO @SCHEMA@.schema_version VALUES ('sessiontree', 3, 1796286053292);
INSERT INTO @SCHEMA@.schema_version VALUES ('sessiontree', 4, 1796286053303);
INSERT INTO @SCHEMA@.session_meta VALUES ('systemPrompt', '"be brief"', 'old-a');
INSERT INTO @SCHEMA@.session_meta VALUES ('cwd', '"/work"', 'old-a');
INSERT INTO @SCHEMA@.session_meta VALUES ('team', '"blue"', 'old-a');
INSERT INTO @SCHEMA@.session_meta VALUES ('rank', '3', 'old-a');
INSERT INTO @SCHEMA@.session_meta VALUES ('team', '"red"', 'old-b');
INSERT INTO @SCHEMA@.session_meta VALUES ('note', 'sha256:25b73b98a213e7737277f619f825ee23ad1dd9f5d7c1a7a2de3ca5c5c3f8b007', 'old-b');
INSERT INTO @SCHEMA@.session_meta VALUES ('systemPrompt', '"be brief"', '01a23afd-fc87-740c-bfd7-b07805a7a15a');
INSERT INTO @SCHEMA@.session_meta VALUES ('cwd', '"/work"', '01a23afd-fc87-740c-bfd7-b07805a7a15a');
INSERT INTO @SCHEMA@.session_meta VALUES ('parentSessionId', '"old-a"', '01a23afd-fc87-740c-bfd7-b07805a7a15a');
INSERT INTO @SCHEMA@.session_meta VALUES ('forkedFromEntryId', '"01a23afd-fc3f-74b1-a94c-29b0495eea5b"', '01a23afd-fc87-740c-bfd7-b07805a7a15a');
INSERT INTO @SCHEMA@.session_meta VALUES ('team', '"blue"', '01a23afd-fc87-740c-bfd7-b07805a7a15a');
INSERT INTO @SCHEMA@.session_meta VALUES ('rank', '3', '01a23afd-fc87-740c-bfd7-b07805a7a15a');
INSERT INTO @SCHEMA@.sessions VALUES ('old-a', '{"systemPrompt":"be brief","cwd":"/work","team":"blue","rank":3}', 1796286053182648, 1796286053475046, '01a23afd-fc62-700d-b086-1a91c7bbb431', 'zebra hunt', 7, 4, 'Find the Zebra crossing', NULL);
INSERT INTO @SCHEMA@.sessions VALUES ('old-b', '{"team":"red","note":"a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note "}', 1796286053487372, 1796286053495437, NULL, NULL, 2, 1, 'hello b', NULL);
INSERT INTO @SCHEMA@.sessions VALUES ('old-empty', '{}', 1796286053499341, 1796286053499341, NULL, NULL, 0, 0, NULL, NULL);
INSERT INTO @SCHEMA@.sessions VALUES ('01a23afd-fc87-740c-bfd7-b07805a7a15a', '{"systemPrompt":"be brief","cwd":"/work","parentSessionId":"old-a","forkedFromEntryId":"01a23afd-fc3f-74b1-a94c-29b0495eea5b","team":"blue","rank":3}', 1796286053511562, 1796286053514881, '01a23afd-fc3f-74b1-a94c-29b0495eea5b', NULL, 4, 3, 'Find the Zebra crossing', 'old-a');
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
