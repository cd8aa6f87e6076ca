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
INSERT INTO @SCHEMA@.entries VALUES ('old-a', 0, '01a23afd-dd83-72d8-90a3-77b47678a103', NULL, 'message', '2026-12-03T08:20:45.571Z', NULL, '{"type":"message","id":"01a23afd-dd83-72d8-90a3-77b47678a103","parentId":null,"timestamp":"2026-12-03T08:20:45.571Z","message":{"role":"user","content":"Find the Zebra crossing","timestamp":1796286045571}}', '''crossing'':4 ''find'':1 ''the'':2 ''zebra'':3');
INSERT INTO @SCHEMA@.entries VALUES ('old-a', 1, '01a23afd-dd99-7559-8e63-8d228719e614', '01a23afd-dd83-72d8-90a3-77b47678a103', 'message', '2026-12-03T08:20:45.593Z', NULL, '{"type":"message","id":"01a23afd-dd99-7559-8e63-8d228719e614","parentId":"01a23afd-dd83-72d8-90a3-77b47678a103","timestamp":"2026-12-03T08:20:45.593Z","message":{"role":"assistant","content":[{"type":"text","text":"The zebra crossing is on Elm Street"}],"timestamp":1796286045593}}', '''crossing'':3 ''elm'':6 ''is'':4 ''on'':5 ''street'':7 ''the'':1 ''zebra'':2');
INSERT INTO @SCHEMA@.entries VALUES ('old-a', 2, '01a23afd-dda3-7696-90f0-43c25cec9c0f', '01a23afd-dd99-7559-8e63-8d228719e614', 'message', '2026-12-03T08:20:45.603Z', NULL, '{"type":"message","id":"01a23afd-dda3-7696-90f0-43c25cec9c0f","parentId":"01a23afd-dd99-7559-8e63-8d228719e614","timestamp":"2026-12-03T08:20:45.603Z","message":{"role":"user","content":"and the bakery?","timestamp":1796286045603}}', '''and'':1 ''bakery'':3 ''the'':2');
INSERT INTO @SCHEMA@.entries VALUES ('old-a', 3, '01a23afd-ddaf-733e-9afa-a759da96ae2c', '01a23afd-dda3-7696-90f0-43c25cec9c0f', 'label', '2026-12-03T08:20:45.615Z', '01a23afd-dd99-7559-8e63-8d228719e614', '{"type":"label","id":"01a23afd-ddaf-733e-9afa-a759da96ae2c","parentId":"01a23afd-dda3-7696-90f0-43c25cec9c0f","timestamp":"2026-12-03T08:20:45.615Z","targetId":"01a23afd-dd99-7559-8e63-8d228719e614","label":"answer"}', NULL);
INSERT INTO @SCHEMA@.entries VALUES ('old-a', 4, '01a23afd-ddb7-7144-b7a1-cb641bf64339', '01a23afd-dda3-7696-90f0-43c25cec9c0f', 'session_info', '2026-12-03T08:20:45.623Z', NULL, '{"type":"session_info","id":"01a23afd-ddb7-7144-b7a1-cb641bf64339","parentId":"01a23afd-dda3-7696-90f0-43c25cec9c0f","timestamp":"2026-12-03T08:20:45.623Z","name":"zebra hunt"}', NULL);
INSERT INTO @SCHEMA@.entries VALUES ('old-a', 5, '01a23afd-ddc3-704e-8e61-434d7d6440bb', '01a23afd-dda3-7696-90f0-43c25cec9c0f', 'leaf', '2026-12-03T08:20:45.635Z', '01a23afd-dd99-7559-8e63-8d228719e614', '{"type":"leaf","id":"01a23afd-ddc3-704e-8e61-434d7d6440bb","parentId":"01a23afd-dda3-7696-90f0-43c25cec9c0f","timestamp":"2026-12-03T08:20:45.635Z","targetId":"01a23afd-dd99-7559-8e63-8d228719e614"}', NULL);
INSERT INTO @SCHEMA@.entries VALUES ('old-a', 6, '01a23afd-ddcf-73a3-942a-e6bd7a22a549', '01a23afd-dd99-7559-8e63-8d228719e614', 'message', '2026-12-03T08:20:45.647Z', NULL, '{"type":"message","id":"01a23afd-ddcf-73a3-942a-e6bd7a22a549","parentId":"01a23afd-dd99-7559-8e63-8d228719e614","timestamp":"2026-12-03T08:20:45.647Z","message":{"role":"user","content":"Other branch: the museum","timestamp":1796286045647}}', '''branch'':2 ''museum'':4 ''other'':1 ''the'':3');
INSERT INTO @SCHEMA@.entries VALUES ('old-b', 0, '01a23afd-dddf-7205-b4f4-d0f3fdf7f9d7', NULL, 'message', '2026-12-03T08:20:45.663Z', NULL, '{"type":"message","id":"01a23afd-dddf-7205-b4f4-d0f3fdf7f9d7","parentId":null,"timestamp":"2026-12-03T08:20:45.663Z","message":{"role":"user","content":"hello b","timestamp":1796286045663}}', '''b'':2 ''hello'':1');
INSERT INTO @SCHEMA@.entries VALUES ('old-b', 1, '01a23afd-ddea-75be-ae6c-d907eaf67e66', '01a23afd-dddf-7205-b4f4-d0f3fdf7f9d7', 'leaf', '2026-12-03T08:20:45.674Z', NULL, '{"type":"leaf","id":"01a23afd-ddea-75be-ae6c-d907eaf67e66","parentId":"01a23afd-dddf-7205-b4f4-d0f3fdf7f9d7","timestamp":"2026-12-03T08:20:45.674Z","targetId":null}', NULL);
INSERT INTO @SCHEMA@.entries VALUES ('01a23afd-ddfd-707d-852b-1c5c49f65a88', 0, '01a23afd-dd83-72d8-90a3-77b47678a103', NULL, 'message', '2026-12-03T08:20:45.571Z', NULL, '{"type":"message","id":"01a23afd-dd83-72d8-90a3-77b47678a103","parentId":null,"timestamp":"2026-12-03T08:20:45.571Z","message":{"role":"user","content":"Find the Zebra crossing","timestamp":1796286045571}}', '''crossing'':4 ''find'':1 ''the'':2 ''zebra'':3');
INSERT INTO @SCHEMA@.entries VALUES ('01a23afd-ddfd-707d-852b-1c5c49f65a88', 1, '01a23afd-dd99-7559-8e63-8d228719e614', '01a23afd-dd83-72d8-90a3-77b47678a103', 'message', '2026-12-03T08:20:45.593Z', NULL, '{"type":"message","id":"01a23afd-dd99-7559-8e63-8d228719e614","parentId":"01a23afd-dd83-72d8-90a3-77b47678a103","timestamp":"2026-12-03T08:20:45.593Z","message":{"role":"assistant","content":[{"type":"text","text":"The zebra crossing is on Elm Street"}],"timestamp":1796286045593}}', '''crossing'':3 ''elm'':6 ''is'':4 ''on'':5 ''street'':7 ''the'':1 ''zebra'':2');
INSERT INTO @SCHEMA@.entries VALUES ('01a23afd-ddfd-707d-852b-1c5c49f65a88', 2, '01a23afd-dda3-7696-90f0-43c25cec9c0f', '01a23afd-dd99-7559-8e63-8d228719e614', 'message', '2026-12-03T08:20:45.603Z', NULL, '{"type":"message","id":"01a23afd-dda3-7696-90f0-43c25cec9c0f","parentId":"01a23afd-dd99-7559-8e63-8d228719e614","timestamp":"2026-12-03T08:20:45.603Z","message":{"role":"user","content":"and the bakery?","timestamp":1796286045603}}', '''and'':1 ''bakery'':3 ''the'':2');
INSERT INTO @SCHEMA@.entries VALUES ('01a23afd-ddfd-707d-852b-1c5c49f65a88', 3, '01a23afd-ddfd-707d-852b-1c5ba841d5ce', '01a23afd-dda3-7696-90f0-43c25cec9c0f', 'label', '2026-12-03T08:20:45.693Z', '01a23afd-dd99-7559-8e63-8d228719e614', '{"type":"label","id":"01a23afd-ddfd-707d-852b-1c5ba841d5ce","parentId":"01a23afd-dda3-7696-90f0-43c25cec9c0f","timestamp":"2026-12-03T08:20:45.693Z","targetId":"01a23afd-dd99-7559-8e63-8d228719e614","label":"answer"}', NULL);
INSERT INTO @SCHEMA@.schema_version VALUES ('sessiontree', 1, 1796286045535);
INSERT INTO @SCHEMA@.schema_version VALUES ('sessiontree', 2, 1796286045536);
INSERT INTO @SCHEMA@.sessions VALUES ('old-a', '{"systemPrompt":"be brief","cwd":"/work","team":"blue","rank":3}', 1796286045461895, 1796286045647500, '01a23afd-ddcf-73a3-942a-e6bd7a22a549', 'zebra hunt', 7, 4, 'Find the Zebra crossing', NULL);
INSERT INTO @SCHEMA@.sessions VALUES ('old-b', '{"team":"red","note":"a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note "}', 1796286045653950, 1796286045674722, NULL, NULL, 2, 1, 'hello b', NULL);
INSERT INTO @SCHEMA@.sessions VALUES ('old-empty', '{}', 1796286045683379, 1796286045683379, NULL, NULL, 0, 0, NULL, NULL);
INSERT INTO @SCHEMA@.sessions VALUES ('01a23afd-ddfd-707d-852b-1c5c49f65a88', '{"systemPrompt":"be brief","cwd":"/work","parentSessionId":"old-a","forkedFromEntryId":"01a23afd-dda3-7696-90f0-43c25cec9c0f","team":"blue","rank":3}', 1796286045693329, 1796286045711413, '01a23afd-dda3-7696-90f0-43c25cec9c0f', NULL, 4, 3, 'Find the Zebra crossing', 'old-a');
ALTER TABLE ONLY @SCHEMA@.entries
    ADD CONSTRAINT entries_pkey PRIMARY KEY (session_id, seq);
ALTER TABLE ONLY @SCHEMA@.entries
    ADD CONSTRAINT entries_session_id_id_key UNIQUE (session_id, id);
ALTER TABLE ONLY @SCHEMA@.sessions
    ADD CONSTRAINT sessions_pkey PRIMARY KEY (id);
CREATE INDEX entries_fts ON @SCHEMA@.entries USING gin (fts) WHERE (fts IS NOT NULL);
CREATE INDEX entries_labels ON @SCHEMA@.entries USING btree (session_id, target_id, seq) WHERE (type = 'label'::text);
CREATE INDEX entries_names ON @SCHEMA@.entries USING btree (session_id, seq) WHERE (type = 'session_info'::text);
CREATE INDEX sessions_by_modified ON @SCHEMA@.sessions USING btree (modified_us DESC, id DESC);
ALTER TABLE ONLY @SCHEMA@.entries
    ADD CONSTRAINT entries_session_id_fkey FOREIGN KEY (session_id) REFERENCES @SCHEMA@.sessions(id) ON DELETE CASCADE;
