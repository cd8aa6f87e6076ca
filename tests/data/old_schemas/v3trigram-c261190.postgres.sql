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
INSERT INTO @SCHEMA@.entries VALUES ('old-a', 0, '01a23afd-eb23-703c-ac09-3175e237fac5', NULL, 'message', '2026-12-03T08:20:49.059Z', NULL, '{"type":"message","id":"01a23afd-eb23-703c-ac09-3175e237fac5","parentId":null,"timestamp":"2026-12-03T08:20:49.059Z","message":{"role":"user","content":"Find the Zebra crossing","timestamp":1796286049059}}', 'find the zebra crossing');
INSERT INTO @SCHEMA@.entries VALUES ('old-a', 1, '01a23afd-eb33-714b-acea-5899087ac865', '01a23afd-eb23-703c-ac09-3175e237fac5', 'message', '2026-12-03T08:20:49.075Z', NULL, '{"type":"message","id":"01a23afd-eb33-714b-acea-5899087ac865","parentId":"01a23afd-eb23-703c-ac09-3175e237fac5","timestamp":"2026-12-03T08:20:49.075Z","message":{"role":"assistant","content":[{"type":"text","text":"The zebra crossing is on Elm Street"}],"timestamp":1796286049075}}', 'the zebra crossing is on elm street');
INSERT INTO @SCHEMA@.entries VALUES ('old-a', 2, '01a23afd-eb35-7784-bcd7-1ee4e0e10b38', '01a23afd-eb33-714b-acea-5899087ac865', 'message', '2026-12-03T08:20:49.077Z', NULL, '{"type":"message","id":"01a23afd-eb35-7784-bcd7-1ee4e0e10b38","parentId":"01a23afd-eb33-714b-acea-5899087ac865","timestamp":"2026-12-03T08:20:49.077Z","message":{"role":"user","content":"and the bakery?","timestamp":1796286049077}}', 'and the bakery?');
INSERT INTO @SCHEMA@.entries VALUES ('old-a', 3, '01a23afd-eb38-756a-aa44-cd7caf2f151d', '01a23afd-eb35-7784-bcd7-1ee4e0e10b38', 'label', '2026-12-03T08:20:49.080Z', '01a23afd-eb33-714b-acea-5899087ac865', '{"type":"label","id":"01a23afd-eb38-756a-aa44-cd7caf2f151d","parentId":"01a23afd-eb35-7784-bcd7-1ee4e0e10b38","timestamp":"2026-12-03T08:20:49.080Z","targetId":"01a23afd-eb33-714b-acea-5899087ac865","label":"answer"}', NULL);
INSERT INTO @SCHEMA@.entries VALUES ('old-a', 4, '01a23afd-eb3b-76e2-a304-dc4fdf7c67bc', '01a23afd-eb35-7784-bcd7-1ee4e0e10b38', 'session_info', '2026-12-03T08:20:49.083Z', NULL, '{"type":"session_info","id":"01a23afd-eb3b-76e2-a304-dc4fdf7c67bc","parentId":"01a23afd-eb35-7784-bcd7-1ee4e0e10b38","timestamp":"2026-12-03T08:20:49.083Z","name":"zebra hunt"}', NULL);
INSERT INTO @SCHEMA@.entries VALUES ('old-a', 5, '01a23afd-eb3c-71cc-9d72-37cc700a1e67', '01a23afd-eb35-7784-bcd7-1ee4e0e10b38', 'leaf', '2026-12-03T08:20:49.084Z', '01a23afd-eb33-714b-acea-5899087ac865', '{"type":"leaf","id":"01a23afd-eb3c-71cc-9d72-37cc700a1e67","parentId":"01a23afd-eb35-7784-bcd7-1ee4e0e10b38","timestamp":"2026-12-03T08:20:49.084Z","targetId":"01a23afd-eb33-714b-acea-5899087ac865"}', NULL);
INSERT INTO @SCHEMA@.entries VALUES ('old-a', 6, '01a23afd-eb4b-7790-9955-37cb2e7d04ec', '01a23afd-eb33-714b-acea-5899087ac865', 'message', '2026-12-03T08:20:49.099Z', NULL, '{"type":"message","id":"01a23afd-eb4b-7790-9955-37cb2e7d04ec","parentId":"01a23afd-eb33-714b-acea-5899087ac865","timestamp":"2026-12-03T08:20:49.099Z","message":{"role":"user","content":"Other branch: the museum","timestamp":1796286049099}}', 'other branch: the museum');
INSERT INTO @SCHEMA@.entries VALUES ('old-b', 0, '01a23afd-eb5a-727e-b321-e44f63f80ad6', NULL, 'message', '2026-12-03T08:20:49.114Z', NULL, '{"type":"message","id":"01a23afd-eb5a-727e-b321-e44f63f80ad6","parentId":null,"timestamp":"2026-12-03T08:20:49.114Z","message":{"role":"user","content":"hello b","timestamp":1796286049114}}', 'hello b');
INSERT INTO @SCHEMA@.entries VALUES ('old-b', 1, '01a23afd-eb61-7275-8f53-0d5ce3ab73e4', '01a23afd-eb5a-727e-b321-e44f63f80ad6', 'leaf', '2026-12-03T08:20:49.121Z', NULL, '{"type":"leaf","id":"01a23afd-eb61-7275-8f53-0d5ce3ab73e4","parentId":"01a23afd-eb5a-727e-b321-e44f63f80ad6","timestamp":"2026-12-03T08:20:49.121Z","targetId":null}', NULL);
INSERT INTO @SCHEMA@.entries VALUES ('01a23afd-eb68-70b4-b64f-864ad08d10a8', 0, '01a23afd-eb23-703c-ac09-3175e237fac5', NULL, 'message', '2026-12-03T08:20:49.059Z', NULL, '{"type":"message","id":"01a23afd-eb23-703c-ac09-3175e237fac5","parentId":null,"timestamp":"2026-12-03T08:20:49.059Z","message":{"role":"user","content":"Find the Zebra crossing","timestamp":1796286049059}}', 'find the zebra crossing');
INSERT INTO @SCHEMA@.entries VALUES ('01a23afd-eb68-70b4-b64f-864ad08d10a8', 1, '01a23afd-eb33-714b-acea-5899087ac865', '01a23afd-eb23-703c-ac09-3175e237fac5', 'message', '2026-12-03T08:20:49.075Z', NULL, '{"type":"message","id":"01a23afd-eb33-714b-acea-5899087ac865","parentId":"01a23afd-eb23-703c-ac09-3175e237fac5","timestamp":"2026-12-03T08:20:49.075Z","message":{"role":"assistant","content":[{"type":"text","text":"The zebra crossing is on Elm Street"}],"timestamp":1796286049075}}', 'the zebra crossing is on elm street');
INSERT INTO @SCHEMA@.entries VALUES ('01a23afd-eb68-70b4-b64f-864ad08d10a8', 2, '01a23afd-eb35-7784-bcd7-1ee4e0e10b38', '01a23afd-eb33-714b-acea-5899087ac865', 'message', '2026-12-03T08:20:49.077Z', NULL, '{"type":"message","id":"01a23afd-eb35-7784-bcd7-1ee4e0e10b38","parentId":"01a23afd-eb33-714b-acea-5899087ac865","timestamp":"2026-12-03T08:20:49.077Z","message":{"role":"user","content":"and the bakery?","timestamp":1796286049077}}', 'and the bakery?');
INSERT INTO @SCHEMA@.entries VALUES ('01a23afd-eb68-70b4-b64f-864ad08d10a8', 3, '01a23afd-eb68-70b4-b64f-8649f7fca951', '01a23afd-eb35-7784-bcd7-1ee4e0e10b38', 'label', '2026-12-03T08:20:49.128Z', '01a23afd-eb33-714b-acea-5899087ac865', '{"type":"label","id":"01a23afd-eb68-70b4-b64f-8649f7fca951","parentId":"01a23afd-eb35-7784-bcd7-1ee4e0e10b38","timestamp":"2026-12-03T08:20:49.128Z","targetId":"01a23afd-eb33-714b-acea-5899087ac865","label":"answer"}', NULL);
INSERT INTO @SCHEMA@.schema_version VALUES ('sessiontree', 1, 1796286049019);
INSERT INTO @SCHEMA@.schema_version VALUES ('sessiontree', 2, 1796286049020);
INSERT INTO @SCHEMA@.schema_version VALUES ('sessiontree', 3, 1796286049039);
INSERT INTO @SCHEMA@.sessions VALUES ('old-a', '{"systemPrompt":"be brief","cwd":"/work","team":"blue","rank":3}', 1796286048923714, 1796286049099517, '01a23afd-eb4b-7790-9955-37cb2e7d04ec', 'zebra hunt', 7, 4, 'Find the Zebra crossing', NULL);
INSERT INTO @SCHEMA@.sessions VALUES ('old-b', '{"team":"red","note":"a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note a long note "}', 1796286049103560, 1796286049121897, NULL, NULL, 2, 1, 'hello b', NULL);
INSERT INTO @SCHEMA@.sessions VALUES ('old-empty', '{}', 1796286049123700, 1796286049123700, NULL, NULL, 0, 0, NULL, NULL);
INSERT INTO @SCHEMA@.sessions VALUES ('01a23afd-eb68-70b4-b64f-864ad08d10a8', '{"systemPrompt":"be brief","cwd":"/work","parentSessionId":"old-a","forkedFromEntryId":"01a23afd-eb35-7784-bcd7-1ee4e0e10b38","team":"blue","rank":3}', 1796286049128923, 1796286049140527, '01a23afd-eb35-7784-bcd7-1ee4e0e10b38', NULL, 4, 3, 'Find the Zebra crossing', 'old-a');
ALTER TABLE ONLY @SCHEMA@.entries
    ADD CONSTRAINT entries_pkey PRIMARY KEY (session_id, seq);
ALTER TABLE ONLY @SCHEMA@.entries
    ADD CONSTRAINT entries_session_id_id_key UNIQUE (session_id, id);
ALTER TABLE ONLY @SCHEMA@.sessions
    ADD CONSTRAINT sessions_pkey PRIMARY KEY (id);
CREATE INDEX entries_labels ON @SCHEMA@.entries USING btree (session_id, target_id, seq) WHERE (type = 'label'::text);
CREATE INDEX entries_names ON @SCHEMA@.entries USING btree (session_id, seq) WHERE (type = 'session_info'::text);
CREATE INDEX entries_search ON @SCHEMA@.entries USING gin (search_text public.gin_trgm_ops) WHERE (search_text IS NOT NULL);
CREATE INDEX sessions_by_modified ON @SCHEMA@.sessions USING btree (modified_us DESC, id DESC);
ALTER TABLE ONLY @SCHEMA@.entries
    ADD CONSTRAINT entries_session_id_fkey FOREIGN KEY (session_id) REFERENCES @SCHEMA@.sessions(id) ON DELETE CASCADE;
