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
INSERT INTO @SCHEMA@.entries VALUES ('old-a', 0, '01a23afe-0c61-71f1-aa8a-a4e2a77da5ec', NULL, 'message', '2026-12-03T08:20:57.569Z', NULL, '{"type":"message","id":"01a23afe-0c61-71f1-aa8a-a4e2a77da5ec","parentId":null,"timestamp":"2026-12-03T08:20:57.569Z","message":{"role":"user","content":"Find the Zebra crossing","timestamp":1796286057555}}', 'find the zebra crossing');
INSERT INTO @SCHEMA@.entries VALUES ('old-a', 1, '01a23afe-0c77-7447-b332-f5dc7498873e', '01a23afe-0c61-71f1-aa8a-a4e2a77da5ec', 'message', '2026-12-03T08:20:57.591Z', NULL, '{"type":"message","id":"01a23afe-0c77-7447-b332-f5dc7498873e","parentId":"01a23afe-0c61-71f1-aa8a-a4e2a77da5ec","timestamp":"2026-12-03T08:20:57.591Z","message":{"role":"assistant","content":[{"type":"text","text":"The zebra crossing is on Elm Street"}],"timestamp":1796286057591}}', 'the zebra crossing is on elm street');
INSERT INTO @SCHEMA@.entries VALUES ('old-a', 2, '01a23afe-0c7b-7424-af0a-8e03bb058e2a', '01a23afe-0c77-7447-b332-f5dc7498873e', 'message', '2026-12-03T08:20:57.595Z', NULL, '{"type":"message","id":"01a23afe-0c7b-7424-af0a-8e03bb058e2a","parentId":"01a23afe-0c77-7447-b332-f5dc7498873e","timestamp":"2026-12-03T08:20:57.595Z","message":{"role":"user","content":"and the bakery?","timestamp":1796286057595}}', 'and the bakery?');
INSERT INTO @SCHEMA@.entries VALUES ('old-a', 3, '01a23afe-0c7f-7026-9a80-0bb4d476fce2', '01a23afe-0c7b-7424-af0a-8e03bb058e2a', 'label', '2026-12-03T08:20:57.599Z', '01a23afe-0c77-7447-b332-f5dc7498873e', '{"type":"label","id":"01a23afe-0c7f-7026-9a80-0bb4d476fce2","parentId":"01a23afe-0c7b-7424-af0a-8e03bb058e2a","timestamp":"2026-12-03T08:20:57.599Z","targetId":"01a23afe-0c77-7447-b332-f5dc7498873e","label":"answer"}', NULL);
INSERT INTO @SCHEMA@.entries VALUES ('old-a', 4, '01a23afe-0c97-71db-ba37-8ba1981849fe', '01a23afe-0c7b-7424-af0a-8e03bb058e2a', 'session_info', '2026-12-03T08:20:57.623Z', NULL, '{"type":"session_info","id":"01a23afe-0c97-71db-ba37-8ba1981849fe","parentId":"01a23afe-0c7b-7424-af0a-8e03bb058e2a","timestamp":"2026-12-03T08:20:57.623Z","name":"zebra hunt"}', NULL);
INSERT INTO @SCHEMA@.entries VALUES ('old-a', 5, '01a23afe-0c9f-779b-8447-d87504f35e56', '01a23afe-0c7b-7424-af0a-8e03bb058e2a', 'leaf', '2026-12-03T08:20:57.631Z', '01a23afe-0c77-7447-b332-f5dc7498873e', '{"type":"leaf","id":"01a23afe-0c9f-779b-8447-d87504f35e56","parentId":"01a23afe-0c7b-7424-af0a-8e03bb058e2a","timestamp":"2026-12-03T08:20:57.631Z","targetId":"01a23afe-0c77-7447-b332-f5dc7498873e"}', NULL);
INSERT INTO @SCHEMA@.entries VALUES ('old-a', 6, '01a23afe-0ca3-71a8-aa4c-23dee7d540ac', '01a23afe-0c77-7447-b332-f5dc7498873e', 'message', '2026-12-03T08:20:57.635Z', NULL, '{"type":"message","id":"01a23afe-0ca3-71a8-aa4c-23dee7d540ac","parentId":"01a23afe-0c77-7447-b332-f5dc7498873e","timestamp":"2026-12-03T08:20:57.635Z","message":{"role":"user","content":"Other branch: the museum","timestamp":1796286057635}}', 'other branch: the museum');
INSERT INTO @SCHEMA@.entries VALUES ('old-b', 0, '01a23afe-0cad-7336-a655-e69a65821163', NULL, 'message', '2026-12-03T08:20:57.645Z', NULL, '{"type":"message","id":"01a23afe-0cad-7336-a655-e69a65821163","parentId":null,"timestamp":"2026-12-03T08:20:57.645Z","message":{"role":"user","content":"hello b","timestamp":1796286057645}}', 'hello b');
INSERT INTO @SCHEMA@.entries VALUES ('old-b', 1, '01a23afe-0cb7-76f1-aeb7-923ff7c2aee9', '01a23afe-0cad-7336-a655-e69a65821163', 'leaf', '2026-12-03T08:20:57.655Z', NULL, '{"type":"leaf","id":"01a23afe-0cb7-76f1-aeb7-923ff7c2aee9","parentId":"01a23afe-0cad-7336-a655-e69a65821163","timestamp":"2026-12-03T08:20:57.655Z","targetId":null}', NULL);
INSERT INTO @SCHEMA@.entries VALUES ('01a23afe-0cc8-74f0-8231-71556aacca7b', 3, '01a23afe-0cc8-74f0-8231-71547ce165fe', '01a23afe-0c7b-7424-af0a-8e03bb058e2a', 'label', '2026-12-03T08:20:57.672Z', '01a23afe-0c77-7447-b332-f5dc7498873e', '{"type":"label","id":"01a23afe-0cc8-74f0-8231-71547ce165fe","parentId":"01a23afe-0c7b-7424-af0a-8e03bb058e2a","timestamp":"2026-12-03T08:20:57.672Z","targetId":"01a23afe-0c77-7447-b332-f5dc7498873e","label":"answer"}', NULL);
INSERT INTO @SCHEMA@.entries VALUES ('01a23afe-0cc8-74f0-8231-71556aacca7b', 0, '01a23afe-0c61-71f1-aa8a-a4e2a77da5ec', NULL, 'message', '2026-12-03T08:20:57.569Z', NULL, '{"type":"message","id":"01a23afe-0c61-71f1-aa8a-a4e2a77da5ec","parentId":null,"timestamp":"2026-12-03T08:20:57.569Z","message":{"role":"user","content":"Find the Zebra crossing","timestamp":1796286057555}}', NULL);
INSERT INTO @SCHEMA@.entries VALUES ('01a23afe-0cc8-74f0-8231-71556aacca7b', 1, '01a23afe-0c77-7447-b332-f5dc7498873e', '01a23afe-0c61-71f1-aa8a-a4e2a77da5ec', 'message', '2026-12-03T08:20:57.591Z', NULL, '{"type":"message","id":"01a23afe-0c77-7447-b332-f5dc7498873e","parentId":"01a23afe-0c61-71f1-aa8a-a4e2a77da5ec","timestamp":"2026-12-03T08:20:57.591Z","message":{"role":"assistant","content":[{"type":"text","text":"The zebra crossing is on Elm Street"}],"timestamp":1796286057591}}', NULL);
INSERT INTO @SCHEMA@.entries VALUES ('01a23afe-0cc8-74f0-8231-71556aacca7b', 2, '01a23afe-0c7b-7424-af0a-8e03bb058e2a', '01a23afe-0c77-7447-b332-f5dc7498873e', 'message', '2026-12-03T08:20:57.595Z', NULL, '{"type":"message","id":"01a23afe-0c7b-7424-af0a-8e03bb058e2a","parentId":"01a23afe-0c77-7447-b332-f5dc7498873e","timestamp":"2026-12-03T08:20:57.595Z","message":{"role":"user","content":"and the bakery?","timestamp":1796286057595}}', NULL);
INSERT INTO @SCHEMA@.schema_version VALUES ('sessiontree', 1, 1796286057483);
INSERT INTO @SCHEMA@.schema_version VALUES ('sessiontree', 2, 1796286057488);
INSERT INTO @SCHEMA@.schema_version VALUES ('sessiontree', 3, 1796286057509);
INSERT INTO @SCHEMA@.schema_version VALUES ('sessiontree', 4, 1796286057521);
INSERT INTO @SCHEMA@.schema_version VALUES ('sessiontree', 5, 1796286057535);
INSERT INTO @SCHEMA@.schema_version VALUES ('sessiontree', 6, 1796286057537);
INSERT INTO @SCHEMA@.search_pending VALUES ('01a23afe-0cc8-74f0-8231-71556aacca7b', 'old-a');
INSERT INTO @SCHEMA@.session_meta VALUES ('systemPrompt', '"be brief"', 'old-a');
INSERT INTO @SCHEMA@.session_meta VALUES ('cwd', '"/work"', 'old-a');
INSERT INTO @SCHEMA@.session_meta VALUES ('team', '"blue"', 'old-a');
INSERT INTO @SCHEMA@.session_meta VALUES ('rank', '3', 'old-a');
INSERT INTO @SCHEMA@.session_meta VALUES ('team', '"red"', 'old-b');
INSERT INTO @SCHEMA@.session_meta VALUES ('note', 'sha256:25b73b98a213e7737277f619f825ee23ad1dd9f5d7c1a7a2de3ca5c5c3f8b007', 'old-b');
INSERT INTO @SCHEMA@.session_meta VALUES ('systemPrompt', '"be brief"', '01a23afe-0cc8-74f0-8231-71556aacca7b');
INSERT INTO @SCHEMA@.session_meta VALUES ('cwd', '"/work"', '01a23afe-0cc8-74f0-8231-71556aacca7b');
INSERT INTO @SCHEMA@.session_meta VALUES ('parentSessionId', '"old-a"', '01a23afe-0cc8-74f0-8231-71556aacca7b');
INSERT INTO @SCHEMA@.session_meta VALUES ('forkedFromEntryId', '"01a23afe-0c7b-7424-af0a-8e03bb058e2a"', '01a23afe-0cc8-74f0-8231-71556aacca7b');
INSERT INTO @SCHEMA@.session_meta VALUES ('team', '"blue"', '01a23afe-0cc8-74f0-8231-71556aacca7b');
INSERT INTO @SCHEMA@.session_meta VALUES ('rank', '3', '01a23afe-0cc8-74f0-8231-71556aacca7b');
INSERT INTO @SCHEMA@.sessions VALUES ('old-a', '{"systemPrompt":"be brief","cwd":"/work","team":"blue","rank":3}', 1796286057395863, 1796286057635437, '01a23afe-0ca3-71a8-aa4c-23dee7d540ac', 'zebra hunt', 7, 4, 'Find the Zebra crossing', NULL);
INSERT INTO @SCHEMA@.sessions VALUES ('old-b', '{"team":"red","note":"a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note "}', 1796286057643371, 1796286057655402, NULL, NULL, 2, 1, 'hello b', NULL);
INSERT INTO @SCHEMA@.sessions VALUES ('old-empty', '{}', 1796286057659339, 1796286057659339, NULL, NULL, 0, 0, NULL, NULL);
INSERT INTO @SCHEMA@.sessions VALUES ('01a23afe-0cc8-74f0-8231-71556aacca7b', '{"systemPrompt":"be brief","cwd":"/work","parentSessionId":"old-a","forkedFromEntryId":"01a23afe-0c7b-7424-af0a-8e03bb058e2a","team":"blue","rank":3}', 1796286057672772, 1796286057672772, '01a23afe-0c7b-7424-af0a-8e03bb058e2a', NULL, 4, 3, 'Find the Zebra crossing', 'old-a');
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
ALTER TABLE ONLY @SCHEMA@.search_pending
    ADD CONSTRAINT search_pending_session_id_fkey FOREIGN KEY (session_id) REFERENCES @SCHEMA@.sessions(id) ON DELETE CASCADE;
ALTER TABLE ONLY @SCHEMA@.session_meta
    ADD CONSTRAINT session_meta_session_id_fkey FOREIGN KEY (session_id) REFERENCES @SCHEMA@.sessions(id) ON DELETE CASCADE;
