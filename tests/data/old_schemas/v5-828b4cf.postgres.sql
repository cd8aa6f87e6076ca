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
CREATE TABLE @SCHEMA@.search_pending (
    session_id text NOT NULL,
    source_id text NOT NULL
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
INSERT INTO @SCHEMA@.entries VALUES ('old-a', 0, '01a23afe-04e1-74d3-849b-a50966f83298', NULL, 'message', '2026-12-03T08:20:55.649Z', NULL, '{"type":"message","id":"01a23afe-04e1-74d3-849b-a50966f83298","parentId":null,"timestamp":"2026-12-03T08:20:55.649Z","message":{"role":"user","content":"Find the Zebra crossing","timestamp":1796286055637}}', 'find the zebra crossing');
INSERT INTO @SCHEMA@.entries VALUES ('old-a', 1, '01a23afe-0507-7385-a3eb-a8d9effe9aa0', '01a23afe-04e1-74d3-849b-a50966f83298', 'message', '2026-12-03T08:20:55.687Z', NULL, '{"type":"message","id":"01a23afe-0507-7385-a3eb-a8d9effe9aa0","parentId":"01a23afe-04e1-74d3-849b-a50966f83298","timestamp":"2026-12-03T08:20:55.687Z","message":{"role":"assistant","content":[{"type":"text","text":"The zebra crossing is on Elm Street"}],"timestamp":1796286055687}}', 'the zebra crossing is on elm street');
INSERT INTO @SCHEMA@.entries VALUES ('old-a', 2, '01a23afe-050f-7798-960e-af9a6b8395bc', '01a23afe-0507-7385-a3eb-a8d9effe9aa0', 'message', '2026-12-03T08:20:55.695Z', NULL, '{"type":"message","id":"01a23afe-050f-7798-960e-af9a6b8395bc","parentId":"01a23afe-0507-7385-a3eb-a8d9effe9aa0","timestamp":"2026-12-03T08:20:55.695Z","message":{"role":"user","content":"and the bakery?","timestamp":1796286055695}}', 'and the bakery?');
INSERT INTO @SCHEMA@.entries VALUES ('old-a', 3, '01a23afe-051b-7184-8bab-b1e2581def4d', '01a23afe-050f-7798-960e-af9a6b8395bc', 'label', '2026-12-03T08:20:55.707Z', '01a23afe-0507-7385-a3eb-a8d9effe9aa0', '{"type":"label","id":"01a23afe-051b-7184-8bab-b1e2581def4d","parentId":"01a23afe-050f-7798-960e-af9a6b8395bc","timestamp":"2026-12-03T08:20:55.707Z","targetId":"01a23afe-0507-7385-a3eb-a8d9effe9aa0","label":"answer"}', NULL);
INSERT INTO @SCHEMA@.entries VALUES ('old-a', 4, '01a23afe-051f-7043-9f57-b5fc57fdd8a5', '01a23afe-050f-7798-960e-af9a6b8395bc', 'session_info', '2026-12-03T08:20:55.711Z', NULL, '{"type":"session_info","id":"01a23afe-051f-7043-9f57-b5fc57fdd8a5","parentId":"01a23afe-050f-7798-960e-af9a6b8395bc","timestamp":"2026-12-03T08:20:55.711Z","name":"zebra hunt"}', NULL);
INSERT INTO @SCHEMA@.entries VALUES ('old-a', 5, '01a23afe-052b-7430-beb1-e10fc290a3d9', '01a23afe-050f-7798-960e-af9a6b8395bc', 'leaf', '2026-12-03T08:20:55.723Z', '01a23afe-0507-7385-a3eb-a8d9effe9aa0', '{"type":"leaf","id":"01a23afe-052b-7430-beb1-e10fc290a3d9","parentId":"01a23afe-050f-7798-960e-af9a6b8395bc","timestamp":"2026-12-03T08:20:55.723Z","targetId":"01a23afe-0507-7385-a3eb-a8d9effe9aa0"}', NULL);
INSERT INTO @SCHEMA@.entries VALUES ('old-a', 6, '01a23afe-0537-7454-823b-8dcf82e975f7', '01a23afe-0507-7385-a3eb-a8d9effe9aa0', 'message', '2026-12-03T08:20:55.735Z', NULL, '{"type":"message","id":"01a23afe-0537-7454-823b-8dcf82e975f7","parentId":"01a23afe-0507-7385-a3eb-a8d9effe9aa0","timestamp":"2026-12-03T08:20:55.735Z","message":{"role":"user","content":"Other branch: the museum","timestamp":1796286055735}}', 'other branch: the museum');
INSERT INTO @SCHEMA@.entries VALUES ('old-b', 0, '01a23afe-0547-773f-8c25-55bd53218cf3', NULL, 'message', '2026-12-03T08:20:55.751Z', NULL, '{"type":"message","id":"01a23afe-0547-773f-8c25-55bd53218cf3","parentId":null,"timestamp":"2026-12-03T08:20:55.751Z","message":{"role":"user","content":"hello b","timestamp":1796286055751}}', 'hello b');
INSERT INTO @SCHEMA@.entries VALUES ('old-b', 1, '01a23afe-054f-70a1-948c-73066b71fe64', '01a23afe-0547-773f-8c25-55bd53218cf3', 'leaf', '2026-12-03T08:20:55.759Z', NULL, '{"type":"leaf","id":"01a23afe-054f-70a1-948c-73066b71fe64","parentId":"01a23afe-0547-773f-8c25-55bd53218cf3","timestamp":"2026-12-03T08:20:55.759Z","targetId":null}', NULL);
INSERT INTO @SCHEMA@.entries VALUES ('01a23afe-0564-750d-a88a-742c0f8d7b05', 3, '01a23afe-0564-750d-a88a-742b28725b63', '01a23afe-050f-7798-960e-af9a6b8395bc', 'label', '2026-12-03T08:20:55.780Z', '01a23afe-0507-7385-a3eb-a8d9effe9aa0', '{"type":"label","id":"01a23afe-0564-750d-a88a-742b28725b63","parentId":"01a23afe-050f-7798-960e-af9a6b8395bc","timestamp":"2026-12-03T08:20:55.780Z","targetId":"01a23afe-0507-7385-a3eb-a8d9effe9aa0","label":"answer"}', NULL);
INSERT INTO @SCHEMA@.entries VALUES ('01a23afe-0564-750d-a88a-742c0f8d7b05', 0, '01a23afe-04e1-74d3-849b-a50966f83298', NULL, 'message', '2026-12-03T08:20:55.649Z', NULL, '{"type":"message","id":"01a23afe-04e1-74d3-849b-a50966f83298","parentId":null,"timestamp":"2026-12-03T08:20:55.649Z","message":{"role":"user","content":"Find the Zebra crossing","timestamp":1796286055637}}', NULL);
INSERT INTO @SCHEMA@.entries VALUES ('01a23afe-0564-750d-a88a-742c0f8d7b05', 1, '01a23afe-0507-7385-a3eb-a8d9effe9aa0', '01a23afe-04e1-74d3-849b-a50966f83298', 'message', '2026-12-03T08:20:55.687Z', NULL, '{"type":"message","id":"01a23afe-0507-7385-a3eb-a8d9effe9aa0","parentId":"01a23afe-04e1-74d3-849b-a50966f83298","timestamp":"2026-12-03T08:20:55.687Z","message":{"role":"assistant","content":[{"type":"text","text":"The zebra crossing is on Elm Street"}],"timestamp":1796286055687}}', NULL);
INSERT INTO @SCHEMA@.entries VALUES ('01a23afe-0564-750d-a88a-742c0f8d7b05', 2, '01a23afe-050f-7798-960e-af9a6b8395bc', '01a23afe-0507-7385-a3eb-a8d9effe9aa0', 'message', '2026-12-03T08:20:55.695Z', NULL, '{"type":"message","id":"01a23afe-050f-7798-960e-af9a6b8395bc","parentId":"01a23afe-0507-7385-a3eb-a8d9effe9aa0","timestamp":"2026-12-03T08:20:55.695Z","message":{"role":"user","content":"and the bakery?","timestamp":1796286055695}}', NULL);
INSERT INTO @SCHEMA@.schema_version VALUES ('sessiontree', 1, 1796286055551);
INSERT INTO @SCHEMA@.schema_version VALUES ('sessiontree', 2, 1796286055552);
INSERT INTO @SCHEMA@.schema_version VALUES ('sessiontree', 3, 1796286055565);
INSERT INTO @SCHEMA@.schema_version VALUES ('sessiontree', 4, 1796286055577);
INSERT INTO @SCHEMA@.schema_version VALUES ('sessiontree', 5, 1796286055595);
INSERT INTO @SCHEMA@.search_pending VALUES ('01a23afe-0564-750d-a88a-742c0f8d7b05', 'old-a');
INSERT INTO @SCHEMA@.session_meta VALUES ('systemPrompt', '"be brief"', 'old-a');
INSERT INTO @SCHEMA@.session_meta VALUES ('cwd', '"/work"', 'old-a');
INSERT INTO @SCHEMA@.session_meta VALUES ('team', '"blue"', 'old-a');
INSERT INTO @SCHEMA@.session_meta VALUES ('rank', '3', 'old-a');
INSERT INTO @SCHEMA@.session_meta VALUES ('team', '"red"', 'old-b');
INSERT INTO @SCHEMA@.session_meta VALUES ('note', 'sha256:25b73b98a213e7737277f619f825ee23ad1dd9f5d7c1a7a2de3ca5c5c3f8b007', 'old-b');
INSERT INTO @SCHEMA@.session_meta VALUES ('systemPrompt', '"be brief"', '01a23afe-0564-750d-a88a-742c0f8d7b05');
INSERT INTO @SCHEMA@.session_meta VALUES ('cwd', '"/work"', '01a23afe-0564-750d-a88a-742c0f8d7b05');
INSERT INTO @SCHEMA@.session_meta VALUES ('parentSessionId', '"old-a"', '01a23afe-0564-750d-a88a-742c0f8d7b05');
INSERT INTO @SCHEMA@.session_meta VALUES ('forkedFromEntryId', '"01a23afe-050f-7798-960e-af9a6b8395bc"', '01a23afe-0564-750d-a88a-742c0f8d7b05');
INSERT INTO @SCHEMA@.session_meta VALUES ('team', '"blue"', '01a23afe-0564-750d-a88a-742c0f8d7b05');
INSERT INTO @SCHEMA@.session_meta VALUES ('rank', '3', '01a23afe-0564-750d-a88a-742c0f8d7b05');
INSERT INTO @SCHEMA@.sessions VALUES ('old-a', '{"systemPrompt":"be brief","cwd":"/work","team":"blue","rank":3}', 1796286055466457, 1796286055735469, '01a23afe-0537-7454-823b-8dcf82e975f7', 'zebra hunt', 7, 4, 'Find the Zebra crossing', NULL);
INSERT INTO @SCHEMA@.sessions VALUES ('old-b', '{"team":"red","note":"a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note "}', 1796286055736860, 1796286055759414, NULL, NULL, 2, 1, 'hello b', NULL);
INSERT INTO @SCHEMA@.sessions VALUES ('old-empty', '{}', 1796286055767363, 1796286055767363, NULL, NULL, 0, 0, NULL, NULL);
INSERT INTO @SCHEMA@.sessions VALUES ('01a23afe-0564-750d-a88a-742c0f8d7b05', '{"systemPrompt":"be brief","cwd":"/work","parentSessionId":"old-a","forkedFromEntryId":"01a23afe-050f-7798-960e-af9a6b8395bc","team":"blue","rank":3}', 1796286055780098, 1796286055780098, '01a23afe-050f-7798-960e-af9a6b8395bc', NULL, 4, 3, 'Find the Zebra crossing', 'old-a');
ALTER TABLE ONLY @SCHEMA@.entries
    ADD CONSTRAINT entries_pkey PRIMARY KEY (session_id, seq);
ALTER TABLE ONLY @SCHEMA@.entries
    ADD CONSTRAINT entries_session_id_id_key UNIQUE (session_id, id);
ALTER TABLE ONLY @SCHEMA@.search_pending
    ADD CONSTRAINT search_pending_pkey PRIMARY KEY (session_id);
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
ALTER TABLE ONLY @SCHEMA@.search_pending
    ADD CONSTRAINT search_pending_session_id_fkey FOREIGN KEY (session_id) REFERENCES @SCHEMA@.sessions(id) ON DELETE CASCADE;
ALTER TABLE ONLY @SCHEMA@.session_meta
    ADD CONSTRAINT session_meta_session_id_fkey FOREIGN KEY (session_id) REFERENCES @SCHEMA@.sessions(id) ON DELETE CASCADE;
