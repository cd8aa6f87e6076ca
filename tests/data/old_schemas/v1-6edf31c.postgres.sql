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
INSERT INTO @SCHEMA@.entries VALUES ('old-a', 0, '01a23afd-d71b-73c1-bb87-8ff55b2f5fc8', NULL, 'message', '2026-12-03T08:20:43.931Z', NULL, '{"type":"message","id":"01a23afd-d71b-73c1-bb87-8ff55b2f5fc8","parentId":null,"timestamp":"2026-12-03T08:20:43.931Z","message":{"role":"user","content":"Find the Zebra crossing","timestamp":1796286043931}}', '''crossing'':4 ''find'':1 ''the'':2 ''zebra'':3');
INSERT INTO @SCHEMA@.entries VALUES ('old-a', 1, '01a23afd-d720-7449-b6ea-6a8e260336f0', '01a23afd-d71b-73c1-bb87-8ff55b2f5fc8', 'message', '2026-12-03T08:20:43.936Z', NULL, '{"type":"message","id":"01a23afd-d720-7449-b6ea-6a8e260336f0","parentId":"01a23afd-d71b-73c1-bb87-8ff55b2f5fc8","timestamp":"2026-12-03T08:20:43.936Z","message":{"role":"assistant","content":[{"type":"text","text":"The zebra crossing is on Elm Street"}],"timestamp":1796286043936}}', '''crossing'':3 ''elm'':6 ''is'':4 ''on'':5 ''street'':7 ''the'':1 ''zebra'':2');
INSERT INTO @SCHEMA@.entries VALUES ('old-a', 2, '01a23afd-d723-77b0-a621-cadce525003a', '01a23afd-d720-7449-b6ea-6a8e260336f0', 'message', '2026-12-03T08:20:43.939Z', NULL, '{"type":"message","id":"01a23afd-d723-77b0-a621-cadce525003a","parentId":"01a23afd-d720-7449-b6ea-6a8e260336f0","timestamp":"2026-12-03T08:20:43.939Z","message":{"role":"user","content":"and the bakery?","timestamp":1796286043939}}', '''and'':1 ''bakery'':3 ''the'':2');
INSERT INTO @SCHEMA@.entries VALUES ('old-a', 3, '01a23afd-d727-76cf-a0c3-ec08112ae380', '01a23afd-d723-77b0-a621-cadce525003a', 'label', '2026-12-03T08:20:43.943Z', '01a23afd-d720-7449-b6ea-6a8e260336f0', '{"type":"label","id":"01a23afd-d727-76cf-a0c3-ec08112ae380","parentId":"01a23afd-d723-77b0-a621-cadce525003a","timestamp":"2026-12-03T08:20:43.943Z","targetId":"01a23afd-d720-7449-b6ea-6a8e260336f0","label":"answer"}', NULL);
INSERT INTO @SCHEMA@.entries VALUES ('old-a', 4, '01a23afd-d72e-745b-946a-fb652068d4de', '01a23afd-d723-77b0-a621-cadce525003a', 'session_info', '2026-12-03T08:20:43.950Z', NULL, '{"type":"session_info","id":"01a23afd-d72e-745b-946a-fb652068d4de","parentId":"01a23afd-d723-77b0-a621-cadce525003a","timestamp":"2026-12-03T08:20:43.950Z","name":"zebra hunt"}', NULL);
INSERT INTO @SCHEMA@.entries VALUES ('old-a', 5, '01a23afd-d72f-7414-bb29-7d05f5e0e499', '01a23afd-d723-77b0-a621-cadce525003a', 'leaf', '2026-12-03T08:20:43.951Z', '01a23afd-d720-7449-b6ea-6a8e260336f0', '{"type":"leaf","id":"01a23afd-d72f-7414-bb29-7d05f5e0e499","parentId":"01a23afd-d723-77b0-a621-cadce525003a","timestamp":"2026-12-03T08:20:43.951Z","targetId":"01a23afd-d720-7449-b6ea-6a8e260336f0"}', NULL);
INSERT INTO @SCHEMA@.entries VALUES ('old-a', 6, '01a23afd-d737-73df-86a0-82eeb5a854ea', '01a23afd-d720-7449-b6ea-6a8e260336f0', 'message', '2026-12-03T08:20:43.959Z', NULL, '{"type":"message","id":"01a23afd-d737-73df-86a0-82eeb5a854ea","parentId":"01a23afd-d720-7449-b6ea-6a8e260336f0","timestamp":"2026-12-03T08:20:43.959Z","message":{"role":"user","content":"Other branch: the museum","timestamp":1796286043959}}', '''branch'':2 ''museum'':4 ''other'':1 ''the'':3');
INSERT INTO @SCHEMA@.entries VALUES ('old-b', 0, '01a23afd-d73f-762e-927e-7855953d739b', NULL, 'message', '2026-12-03T08:20:43.967Z', NULL, '{"type":"message","id":"01a23afd-d73f-762e-927e-7855953d739b","parentId":null,"timestamp":"2026-12-03T08:20:43.967Z","message":{"role":"user","content":"hello b","timestamp":1796286043967}}', '''b'':2 ''hello'':1');
INSERT INTO @SCHEMA@.entries VALUES ('old-b', 1, '01a23afd-d740-7719-adef-f432ec86c484', '01a23afd-d73f-762e-927e-7855953d739b', 'leaf', '2026-12-03T08:20:43.968Z', NULL, '{"type":"leaf","id":"01a23afd-d740-7719-adef-f432ec86c484","parentId":"01a23afd-d73f-762e-927e-7855953d739b","timestamp":"2026-12-03T08:20:43.968Z","targetId":null}', NULL);
INSERT INTO @SCHEMA@.entries VALUES ('01a23afd-d749-7048-a8bb-903512d68a82', 0, '01a23afd-d71b-73c1-bb87-8ff55b2f5fc8', NULL, 'message', '2026-12-03T08:20:43.931Z', NULL, '{"type":"message","id":"01a23afd-d71b-73c1-bb87-8ff55b2f5fc8","parentId":null,"timestamp":"2026-12-03T08:20:43.931Z","message":{"role":"user","content":"Find the Zebra crossing","timestamp":1796286043931}}', '''crossing'':4 ''find'':1 ''the'':2 ''zebra'':3');
INSERT INTO @SCHEMA@.entries VALUES ('01a23afd-d749-7048-a8bb-903512d68a82', 1, '01a23afd-d720-7449-b6ea-6a8e260336f0', '01a23afd-d71b-73c1-bb87-8ff55b2f5fc8', 'message', '2026-12-03T08:20:43.936Z', NULL, '{"type":"message","id":"01a23afd-d720-7449-b6ea-6a8e260336f0","parentId":"01a23afd-d71b-73c1-bb87-8ff55b2f5fc8","timestamp":"2026-12-03T08:20:43.936Z","message":{"role":"assistant","content":[{"type":"text","text":"The zebra crossing is on Elm Street"}],"timestamp":1796286043936}}', '''crossing'':3 ''elm'':6 ''is'':4 ''on'':5 ''street'':7 ''the'':1 ''zebra'':2');
INSERT INTO @SCHEMA@.entries VALUES ('01a23afd-d749-7048-a8bb-903512d68a82', 2, '01a23afd-d723-77b0-a621-cadce525003a', '01a23afd-d720-7449-b6ea-6a8e260336f0', 'message', '2026-12-03T08:20:43.939Z', NULL, '{"type":"message","id":"01a23afd-d723-77b0-a621-cadce525003a","parentId":"01a23afd-d720-7449-b6ea-6a8e260336f0","timestamp":"2026-12-03T08:20:43.939Z","message":{"role":"user","content":"and the bakery?","timestamp":1796286043939}}', '''and'':1 ''bakery'':3 ''the'':2');
INSERT INTO @SCHEMA@.entries VALUES ('01a23afd-d749-7048-a8bb-903512d68a82', 3, '01a23afd-d749-7048-a8bb-9034d2eeb9fc', '01a23afd-d723-77b0-a621-cadce525003a', 'label', '2026-12-03T08:20:43.977Z', '01a23afd-d720-7449-b6ea-6a8e260336f0', '{"type":"label","id":"01a23afd-d749-7048-a8bb-9034d2eeb9fc","parentId":"01a23afd-d723-77b0-a621-cadce525003a","timestamp":"2026-12-03T08:20:43.977Z","targetId":"01a23afd-d720-7449-b6ea-6a8e260336f0","label":"answer"}', NULL);
INSERT INTO @SCHEMA@.schema_version VALUES ('sessiontree', 1, 1796286043911);
INSERT INTO @SCHEMA@.sessions VALUES ('old-a', '{"systemPrompt":"be brief","cwd":"/work","team":"blue","rank":3}', 1796286043858057, 1796286043959813, '01a23afd-d737-73df-86a0-82eeb5a854ea', 'zebra hunt', 7, 4, 'Find the Zebra crossing', NULL);
INSERT INTO @SCHEMA@.sessions VALUES ('old-b', '{"team":"red","note":"a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note "}', 1796286043960507, 1796286043968838, NULL, NULL, 2, 1, 'hello b', NULL);
INSERT INTO @SCHEMA@.sessions VALUES ('old-empty', '{}', 1796286043971389, 1796286043971389, NULL, NULL, 0, 0, NULL, NULL);
INSERT INTO @SCHEMA@.sessions VALUES ('01a23afd-d749-7048-a8bb-903512d68a82', '{"systemPrompt":"be brief","cwd":"/work","parentSessionId":"old-a","forkedFromEntryId":"01a23afd-d723-77b0-a621-cadce525003a","team":"blue","rank":3}', 1796286043977308, 1796286043978132, '01a23afd-d723-77b0-a621-cadce525003a', NULL, 4, 3, 'Find the Zebra crossing', 'old-a');
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
