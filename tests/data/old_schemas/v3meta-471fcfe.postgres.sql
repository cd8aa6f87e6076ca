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
INSERT INTO @SCHEMA@.entries VALUES ('old-a', 0, '01a23b02-5e03-74f4-ba4e-d650d8bb41a9', NULL, 'message', '2026-12-03T08:25:40.611Z', NULL, '{"type":"message","id":"01a23b02-5e03-74f4-ba4e-d650d8bb41a9","parentId":null,"timestamp":"2026-12-03T08:25:40.611Z","message":{"role":"user","content":"Find the Zebra crossing","timestamp":1796286340611}}', '''crossing'':4 ''find'':1 ''the'':2 ''zebra'':3');
INSERT INTO @SCHEMA@.entries VALUES ('old-a', 1, '01a23b02-5e1b-75cb-888e-50f89e70cf04', '01a23b02-5e03-74f4-ba4e-d650d8bb41a9', 'message', '2026-12-03T08:25:40.635Z', NULL, '{"type":"message","id":"01a23b02-5e1b-75cb-888e-50f89e70cf04","parentId":"01a23b02-5e03-74f4-ba4e-d650d8bb41a9","timestamp":"2026-12-03T08:25:40.635Z","message":{"role":"assistant","content":[{"type":"text","text":"The zebra crossing is on Elm Street"}],"timestamp":1796286340635}}', '''crossing'':3 ''elm'':6 ''is'':4 ''on'':5 ''street'':7 ''the'':1 ''zebra'':2');
INSERT INTO @SCHEMA@.entries VALUES ('old-a', 2, '01a23b02-5e1f-752e-a024-d9da85b97a01', '01a23b02-5e1b-75cb-888e-50f89e70cf04', 'message', '2026-12-03T08:25:40.639Z', NULL, '{"type":"message","id":"01a23b02-5e1f-752e-a024-d9da85b97a01","parentId":"01a23b02-5e1b-75cb-888e-50f89e70cf04","timestamp":"2026-12-03T08:25:40.639Z","message":{"role":"user","content":"and the bakery?","timestamp":1796286340639}}', '''and'':1 ''bakery'':3 ''the'':2');
INSERT INTO @SCHEMA@.entries VALUES ('old-a', 3, '01a23b02-5e2b-7529-af61-c7befccdcabf', '01a23b02-5e1f-752e-a024-d9da85b97a01', 'label', '2026-12-03T08:25:40.651Z', '01a23b02-5e1b-75cb-888e-50f89e70cf04', '{"type":"label","id":"01a23b02-5e2b-7529-af61-c7befccdcabf","parentId":"01a23b02-5e1f-752e-a024-d9da85b97a01","timestamp":"2026-12-03T08:25:40.651Z","targetId":"01a23b02-5e1b-75cb-888e-50f89e70cf04","label":"answer"}', NULL);
INSERT INTO @SCHEMA@.entries VALUES ('old-a', 4, '01a23b02-5e37-7638-9023-66bac661538a', '01a23b02-5e1f-752e-a024-d9da85b97a01', 'session_info', '2026-12-03T08:25:40.663Z', NULL, '{"type":"session_info","id":"01a23b02-5e37-7638-9023-66bac661538a","parentId":"01a23b02-5e1f-752e-a024-d9da85b97a01","timestamp":"2026-12-03T08:25:40.663Z","name":"zebra hunt"}', NULL);
INSERT INTO @SCHEMA@.entries VALUES ('old-a', 5, '01a23b02-5e3e-7550-8e7d-3d3486272920', '01a23b02-5e1f-752e-a024-d9da85b97a01', 'leaf', '2026-12-03T08:25:40.670Z', '01a23b02-5e1b-75cb-888e-50f89e70cf04', '{"type":"leaf","id":"01a23b02-5e3e-7550-8e7d-3d3486272920","parentId":"01a23b02-5e1f-752e-a024-d9da85b97a01","timestamp":"2026-12-03T08:25:40.670Z","targetId":"01a23b02-5e1b-75cb-888e-50f89e70cf04"}', NULL);
INSERT INTO @SCHEMA@.entries VALUES ('old-a', 6, '01a23b02-5e51-7733-bec9-7dfe2b0c52af', '01a23b02-5e1b-75cb-888e-50f89e70cf04', 'message', '2026-12-03T08:25:40.689Z', NULL, '{"type":"message","id":"01a23b02-5e51-7733-bec9-7dfe2b0c52af","parentId":"01a23b02-5e1b-75cb-888e-50f89e70cf04","timestamp":"2026-12-03T08:25:40.689Z","message":{"role":"user","content":"Other branch: the museum","timestamp":1796286340689}}', '''branch'':2 ''museum'':4 ''other'':1 ''the'':3');
INSERT INTO @SCHEMA@.entries VALUES ('old-b', 0, '01a23b02-5e6b-74d0-b261-9fb62497af67', NULL, 'message', '2026-12-03T08:25:40.715Z', NULL, '{"type":"message","id":"01a23b02-5e6b-74d0-b261-9fb62497af67","parentId":null,"timestamp":"2026-12-03T08:25:40.715Z","message":{"role":"user","content":"hello b","timestamp":1796286340715}}', '''b'':2 ''hello'':1');
INSERT INTO @SCHEMA@.entries VALUES ('old-b', 1, '01a23b02-5e7f-72f7-8b67-f984a431056c', '01a23b02-5e6b-74d0-b261-9fb62497af67', 'leaf', '2026-12-03T08:25:40.735Z', NULL, '{"type":"leaf","id":"01a23b02-5e7f-72f7-8b67-f984a431056c","parentId":"01a23b02-5e6b-74d0-b261-9fb62497af67","timestamp":"2026-12-03T08:25:40.735Z","targetId":null}', NULL);
INSERT INTO @SCHEMA@.entries VALUES ('01a23b02-5e9c-755d-97b2-f7466dccec76', 0, '01a23b02-5e03-74f4-ba4e-d650d8bb41a9', NULL, 'message', '2026-12-03T08:25:40.611Z', NULL, '{"type":"message","id":"01a23b02-5e03-74f4-ba4e-d650d8bb41a9","parentId":null,"timestamp":"2026-12-03T08:25:40.611Z","message":{"role":"user","content":"Find the Zebra crossing","timestamp":1796286340611}}', '''crossing'':4 ''find'':1 ''the'':2 ''zebra'':3');
INSERT INTO @SCHEMA@.entries VALUES ('01a23b02-5e9c-755d-97b2-f7466dccec76', 1, '01a23b02-5e1b-75cb-888e-50f89e70cf04', '01a23b02-5e03-74f4-ba4e-d650d8bb41a9', 'message', '2026-12-03T08:25:40.635Z', NULL, '{"type":"message","id":"01a23b02-5e1b-75cb-888e-50f89e70cf04","parentId":"01a23b02-5e03-74f4-ba4e-d650d8bb41a9","timestamp":"2026-12-03T08:25:40.635Z","message":{"role":"assistant","content":[{"type":"text","text":"The zebra crossing is on Elm Street"}],"timestamp":1796286340635}}', '''crossing'':3 ''elm'':6 ''is'':4 ''on'':5 ''street'':7 ''the'':1 ''zebra'':2');
INSERT INTO @SCHEMA@.entries VALUES ('01a23b02-5e9c-755d-97b2-f7466dccec76', 2, '01a23b02-5e1f-752e-a024-d9da85b97a01', '01a23b02-5e1b-75cb-888e-50f89e70cf04', 'message', '2026-12-03T08:25:40.639Z', NULL, '{"type":"message","id":"01a23b02-5e1f-752e-a024-d9da85b97a01","parentId":"01a23b02-5e1b-75cb-888e-50f89e70cf04","timestamp":"2026-12-03T08:25:40.639Z","message":{"role":"user","content":"and the bakery?","timestamp":1796286340639}}', '''and'':1 ''bakery'':3 ''the'':2');
INSERT INTO @SCHEMA@.entries VALUES ('01a23b02-5e9c-755d-97b2-f7466dccec76', 3, '01a23b02-5e9c-755d-97b2-f7453e0b7b42', '01a23b02-5e1f-752e-a024-d9da85b97a01', 'label', '2026-12-03T08:25:40.764Z', '01a23b02-5e1b-75cb-888e-50f89e70cf04', '{"type":"label","id":"01a23b02-5e9c-755d-97b2-f7453e0b7b42","parentId":"01a23b02-5e1f-752e-a024-d9da85b97a01","timestamp":"2026-12-03T08:25:40.764Z","targetId":"01a23b02-5e1b-75cb-888e-50f89e70cf04","label":"answer"}', NULL);
INSERT INTO @SCHEMA@.schema_version VALUES ('sessiontree', 1, 1796286340519);
INSERT INTO @SCHEMA@.schema_version VALUES ('sessiontree', 2, 1796286340520);
INSERT INTO @SCHEMA@.schema_version VALUES ('sessiontree', 3, 1796286340558);
INSERT INTO @SCHEMA@.session_meta VALUES ('systemPrompt', '"be brief"', 'old-a');
INSERT INTO @SCHEMA@.session_meta VALUES ('cwd', '"/work"', 'old-a');
INSERT INTO @SCHEMA@.session_meta VALUES ('team', '"blue"', 'old-a');
INSERT INTO @SCHEMA@.session_meta VALUES ('rank', '3', 'old-a');
INSERT INTO @SCHEMA@.session_meta VALUES ('team', '"red"', 'old-b');
INSERT INTO @SCHEMA@.session_meta VALUES ('note', 'sha256:25b73b98a213e7737277f619f825ee23ad1dd9f5d7c1a7a2de3ca5c5c3f8b007', 'old-b');
INSERT INTO @SCHEMA@.session_meta VALUES ('systemPrompt', '"be brief"', '01a23b02-5e9c-755d-97b2-f7466dccec76');
INSERT INTO @SCHEMA@.session_meta VALUES ('cwd', '"/work"', '01a23b02-5e9c-755d-97b2-f7466dccec76');
INSERT INTO @SCHEMA@.session_meta VALUES ('parentSessionId', '"old-a"', '01a23b02-5e9c-755d-97b2-f7466dccec76');
INSERT INTO @SCHEMA@.session_meta VALUES ('forkedFromEntryId', '"01a23b02-5e1f-752e-a024-d9da85b97a01"', '01a23b02-5e9c-755d-97b2-f7466dccec76');
INSERT INTO @SCHEMA@.session_meta VALUES ('team', '"blue"', '01a23b02-5e9c-755d-97b2-f7466dccec76');
INSERT INTO @SCHEMA@.session_meta VALUES ('rank', '3', '01a23b02-5e9c-755d-97b2-f7466dccec76');
INSERT INTO @SCHEMA@.sessions VALUES ('old-a', '{"systemPrompt":"be brief","cwd":"/work","team":"blue","rank":3}', 1796286340381083, 1796286340689789, '01a23b02-5e51-7733-bec9-7dfe2b0c52af', 'zebra hunt', 7, 4, 'Find the Zebra crossing', NULL);
INSERT INTO @SCHEMA@.sessions VALUES ('old-b', '{"team":"red","note":"a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note "}', 1796286340707495, 1796286340735697, NULL, NULL, 2, 1, 'hello b', NULL);
INSERT INTO @SCHEMA@.sessions VALUES ('old-empty', '{}', 1796286340743456, 1796286340743456, NULL, NULL, 0, 0, NULL, NULL);
INSERT INTO @SCHEMA@.sessions VALUES ('01a23b02-5e9c-755d-97b2-f7466dccec76', '{"systemPrompt":"be brief","cwd":"/work","parentSessionId":"old-a","forkedFromEntryId":"01a23b02-5e1f-752e-a024-d9da85b97a01","team":"blue","rank":3}', 1796286340764305, 1796286340772356, '01a23b02-5e1f-752e-a024-d9da85b97a01', NULL, 4, 3, 'Find the Zebra crossing', 'old-a');
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
