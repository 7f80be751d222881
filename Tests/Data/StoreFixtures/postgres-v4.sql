-- A brsyncd PostgreSQL store of schema version 4 (StoreFixtures.swift; never rewritten).


CREATE TABLE public.accounts (
    id bigint NOT NULL,
    name text NOT NULL,
    uid text NOT NULL,
    next_seq bigint DEFAULT 1 NOT NULL,
    purged_through bigint DEFAULT 0 NOT NULL,
    stamp_high bigint DEFAULT 0 NOT NULL,
    created_at bigint NOT NULL,
    encrypted boolean DEFAULT false NOT NULL,
    key_id text DEFAULT ''::text NOT NULL,
    signing_key text DEFAULT ''::text NOT NULL,
    retired_keys text DEFAULT ''::text NOT NULL,
    encryption_reset boolean DEFAULT false NOT NULL
);

CREATE SEQUENCE public.accounts_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

ALTER SEQUENCE public.accounts_id_seq OWNED BY public.accounts.id;

CREATE TABLE public.brsync_meta (
    key text NOT NULL,
    value text NOT NULL
);

CREATE TABLE public.device_streams (
    account_id bigint NOT NULL,
    client_device text NOT NULL,
    last_seq bigint NOT NULL,
    last_digest text NOT NULL
);

CREATE TABLE public.devices (
    id bigint NOT NULL,
    account_id bigint NOT NULL,
    name text NOT NULL,
    token_hash bytea NOT NULL,
    client_device text,
    revoked boolean DEFAULT false NOT NULL,
    created_at bigint NOT NULL,
    last_seen bigint,
    last_device_seq bigint DEFAULT 0 NOT NULL,
    acknowledged_cursor bigint DEFAULT 0 NOT NULL
);

CREATE SEQUENCE public.devices_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

ALTER SEQUENCE public.devices_id_seq OWNED BY public.devices.id;

CREATE TABLE public.enrollments (
    secret_hash bytea NOT NULL,
    device_id bigint NOT NULL,
    expires_at bigint NOT NULL,
    used_at bigint,
    token_hash bytea
);

CREATE TABLE public.records (
    account_id bigint NOT NULL,
    collection text NOT NULL,
    key text NOT NULL,
    fields text NOT NULL,
    versions text NOT NULL,
    seq bigint NOT NULL,
    deleted boolean NOT NULL,
    updated_at bigint NOT NULL,
    known_to text,
    known_after bigint DEFAULT 0 NOT NULL
);

ALTER TABLE ONLY public.accounts ALTER COLUMN id SET DEFAULT nextval('public.accounts_id_seq'::regclass);

ALTER TABLE ONLY public.devices ALTER COLUMN id SET DEFAULT nextval('public.devices_id_seq'::regclass);

INSERT INTO public.accounts VALUES (1, 'alice', '0123456789abcdef', 4, 0, 1790000000003, 1790000000000, false, '', '', '', false);

INSERT INTO public.brsync_meta VALUES ('schema_version', '4');
INSERT INTO public.brsync_meta VALUES ('epoch', 'f1x7e0e90c0000a1');

INSERT INTO public.device_streams VALUES (1, 'laptop-1', 4, '');

INSERT INTO public.devices VALUES (1, 1, 'laptop', '\x894680b8271ffbeaadcd89a290d58de287131249531e11c6b13a7fb155d3b19f', 'laptop-1', false, 1790000000000, 1790000000010, 4, 3);
INSERT INTO public.devices VALUES (2, 1, 'phone', '\x033903013bb126d81d78b7fbe96d5dcea44c3ec564c8c8079245d4a2d139d17d', NULL, false, 1790000000000, NULL, 0, 0);

INSERT INTO public.enrollments VALUES ('\x033903013bb126d81d78b7fbe96d5dcea44c3ec564c8c8079245d4a2d139d17d', 2, 4102444800000, NULL, NULL);

INSERT INTO public.records VALUES (1, 'rules', '*.zoom.us', '{"browser":{"s":"000001a0c4506c01-00000000-laptop-1","v":"chrome"},"deleted":{"s":"000001a0c4506c01-00000000-laptop-1","v":false},"pattern":{"s":"000001a0c4506c01-00000000-laptop-1","v":"*.zoom.us"}}', '{"laptop-1":1}', 1, false, 1790000000000, 'laptop-1', 0);
INSERT INTO public.records VALUES (1, 'rules', 'github.com', '{"deleted":{"s":"000001a0c4506c02-00000000-laptop-1","v":true},"pattern":{"s":"000001a0c4506c02-00000000-laptop-1","v":"github.com"}}', '{"laptop-1":2}', 2, true, 1790000000001, 'laptop-1', 0);
INSERT INTO public.records VALUES (1, 'settings', 'picker', '{"deleted":{"s":"000001a0c4506c03-00000000-laptop-1","v":false},"value":{"s":"000001a0c4506c03-00000000-laptop-1","v":"always"}}', '{"laptop-1":3}', 3, false, 1790000000002, 'laptop-1', 0);

SELECT pg_catalog.setval('public.accounts_id_seq', 1, true);

SELECT pg_catalog.setval('public.devices_id_seq', 2, true);

ALTER TABLE ONLY public.accounts
    ADD CONSTRAINT accounts_name_key UNIQUE (name);

ALTER TABLE ONLY public.accounts
    ADD CONSTRAINT accounts_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.brsync_meta
    ADD CONSTRAINT brsync_meta_pkey PRIMARY KEY (key);

ALTER TABLE ONLY public.device_streams
    ADD CONSTRAINT device_streams_pkey PRIMARY KEY (account_id, client_device);

ALTER TABLE ONLY public.devices
    ADD CONSTRAINT devices_account_id_name_key UNIQUE (account_id, name);

ALTER TABLE ONLY public.devices
    ADD CONSTRAINT devices_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.devices
    ADD CONSTRAINT devices_token_hash_key UNIQUE (token_hash);

ALTER TABLE ONLY public.enrollments
    ADD CONSTRAINT enrollments_pkey PRIMARY KEY (secret_hash);

ALTER TABLE ONLY public.records
    ADD CONSTRAINT records_pkey PRIMARY KEY (account_id, collection, key);

CREATE INDEX enrollments_by_device ON public.enrollments USING btree (device_id);

CREATE UNIQUE INDEX records_by_seq ON public.records USING btree (account_id, seq);

ALTER TABLE ONLY public.device_streams
    ADD CONSTRAINT device_streams_account_id_fkey FOREIGN KEY (account_id) REFERENCES public.accounts(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.devices
    ADD CONSTRAINT devices_account_id_fkey FOREIGN KEY (account_id) REFERENCES public.accounts(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.enrollments
    ADD CONSTRAINT enrollments_device_id_fkey FOREIGN KEY (device_id) REFERENCES public.devices(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.records
    ADD CONSTRAINT records_account_id_fkey FOREIGN KEY (account_id) REFERENCES public.accounts(id) ON DELETE CASCADE;

