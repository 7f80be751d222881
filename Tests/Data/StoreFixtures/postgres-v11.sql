-- A brsyncd PostgreSQL store of schema version 11 (StoreFixtures.swift; never rewritten).


CREATE FUNCTION public.brsync_account_id_kept() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    IF NEW.id <> OLD.id AND EXISTS (SELECT 1 FROM records WHERE account_id = OLD.id) THEN
        RAISE EXCEPTION 'an account with records keeps its id' USING ERRCODE = 'foreign_key_violation';
    END IF;
    RETURN NEW;
END $$;

CREATE FUNCTION public.brsync_count_records() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        UPDATE accounts a SET record_count = a.record_count + d.records, byte_count = a.byte_count + d.bytes
        FROM (SELECT account_id, count(*) AS records, sum(octet_length(fields) + octet_length(versions)) AS bytes
              FROM new_rows WHERE collection <> 'ledger' GROUP BY account_id) d
        WHERE a.id = d.account_id;
    ELSIF TG_OP = 'DELETE' THEN
        UPDATE accounts a SET record_count = a.record_count - d.records, byte_count = a.byte_count - d.bytes
        FROM (SELECT account_id, count(*) AS records, sum(octet_length(fields) + octet_length(versions)) AS bytes
              FROM old_rows WHERE collection <> 'ledger' GROUP BY account_id) d
        WHERE a.id = d.account_id;
    ELSE
        UPDATE accounts a SET byte_count = a.byte_count + d.bytes
        FROM (SELECT account_id, sum(bytes) AS bytes FROM (
                  SELECT account_id, octet_length(fields) + octet_length(versions) AS bytes FROM new_rows
                  WHERE collection <> 'ledger'
                  UNION ALL
                  SELECT account_id, -(octet_length(fields) + octet_length(versions)) FROM old_rows
                  WHERE collection <> 'ledger') changed
              GROUP BY account_id) d
        WHERE a.id = d.account_id;
    END IF;
    RETURN NULL;
END $$;

CREATE FUNCTION public.brsync_delete_account_records() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    DELETE FROM records r USING old_rows o WHERE r.account_id = o.id;
    RETURN NULL;
END $$;

CREATE FUNCTION public.brsync_records_have_accounts() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
DECLARE named bigint; held bigint;
BEGIN
    SELECT count(DISTINCT account_id) INTO named FROM new_rows;
    SELECT count(*) INTO held FROM (
        SELECT a.id FROM accounts a WHERE a.id IN (SELECT account_id FROM new_rows) FOR KEY SHARE OF a
    ) locked;
    IF held < named THEN
        RAISE EXCEPTION 'a record of an account that does not exist' USING ERRCODE = 'foreign_key_violation';
    END IF;
    RETURN NULL;
END $$;

CREATE FUNCTION public.brsync_truncate_records() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    BEGIN
        TRUNCATE records;
    EXCEPTION WHEN object_in_use THEN
        -- A TRUNCATE naming both tables holds records open.
        DELETE FROM records;
    END;
    RETURN NULL;
END $$;

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
    encryption_reset boolean DEFAULT false NOT NULL,
    epoch text DEFAULT ''::text NOT NULL,
    record_count bigint DEFAULT 0 NOT NULL,
    byte_count bigint DEFAULT 0 NOT NULL,
    max_records bigint DEFAULT 100000 NOT NULL,
    max_bytes bigint DEFAULT 134217728 NOT NULL,
    max_devices bigint DEFAULT 64 NOT NULL,
    sealed_format integer DEFAULT 1 NOT NULL,
    sealed_format_since bigint
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
    acknowledged_cursor bigint DEFAULT 0 NOT NULL,
    protocol integer DEFAULT 0 NOT NULL
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
    known_after bigint DEFAULT 0 NOT NULL,
    writer text
);

CREATE TABLE public.refusals (
    account_id bigint NOT NULL,
    client_device text NOT NULL,
    seq bigint NOT NULL,
    collection text NOT NULL,
    key bytea NOT NULL,
    reason bytea NOT NULL
);

ALTER TABLE ONLY public.accounts ALTER COLUMN id SET DEFAULT nextval('public.accounts_id_seq'::regclass);

ALTER TABLE ONLY public.devices ALTER COLUMN id SET DEFAULT nextval('public.devices_id_seq'::regclass);

INSERT INTO public.accounts VALUES (1, 'alice', '0123456789abcdef', 4, 0, 1790000000003, 1790000000000, false, '', '', '', false, 'f1x7e0e90c0000a1', 3, 502, 100000, 134217728, 64, 1, NULL);

INSERT INTO public.brsync_meta VALUES ('schema_version', '11');
INSERT INTO public.brsync_meta VALUES ('epoch', 'f1x7e0e90c0000a1');

INSERT INTO public.device_streams VALUES (1, 'laptop-1', 4, '');

INSERT INTO public.devices VALUES (1, 1, 'laptop', '\x894680b8271ffbeaadcd89a290d58de287131249531e11c6b13a7fb155d3b19f', 'laptop-1', false, 1790000000000, 1790000000010, 4, 3, 0);
INSERT INTO public.devices VALUES (2, 1, 'phone', '\x033903013bb126d81d78b7fbe96d5dcea44c3ec564c8c8079245d4a2d139d17d', NULL, false, 1790000000000, NULL, 0, 0, 0);

INSERT INTO public.enrollments VALUES ('\x033903013bb126d81d78b7fbe96d5dcea44c3ec564c8c8079245d4a2d139d17d', 2, 4102444800000, NULL, NULL);

INSERT INTO public.records VALUES (1, 'rules', '*.zoom.us', '{"browser":{"s":"000001a0c4506c01-00000000-laptop-1","v":"chrome"},"deleted":{"s":"000001a0c4506c01-00000000-laptop-1","v":false},"pattern":{"s":"000001a0c4506c01-00000000-laptop-1","v":"*.zoom.us"}}', '{"laptop-1":1}', 1, false, 1790000000000, 'laptop-1', 0, NULL);
INSERT INTO public.records VALUES (1, 'rules', 'github.com', '{"deleted":{"s":"000001a0c4506c02-00000000-laptop-1","v":true},"pattern":{"s":"000001a0c4506c02-00000000-laptop-1","v":"github.com"}}', '{"laptop-1":2}', 2, true, 1790000000001, 'laptop-1', 0, NULL);
INSERT INTO public.records VALUES (1, 'settings', 'picker', '{"deleted":{"s":"000001a0c4506c03-00000000-laptop-1","v":false},"value":{"s":"000001a0c4506c03-00000000-laptop-1","v":"always"}}', '{"laptop-1":3}', 3, false, 1790000000002, 'laptop-1', 0, NULL);

INSERT INTO public.refusals VALUES (1, 'laptop-1', 4, 'rules', '\x626164006b6579', '\x61206b657920686f6c6473204e554c');

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

ALTER TABLE ONLY public.refusals
    ADD CONSTRAINT refusals_pkey PRIMARY KEY (account_id, client_device, seq);

CREATE INDEX enrollments_by_device ON public.enrollments USING btree (device_id);

CREATE UNIQUE INDEX records_by_seq ON public.records USING btree (account_id, seq);

CREATE TRIGGER accounts_delete_records AFTER DELETE ON public.accounts REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION public.brsync_delete_account_records();

CREATE TRIGGER accounts_id_kept BEFORE UPDATE OF id ON public.accounts FOR EACH ROW EXECUTE FUNCTION public.brsync_account_id_kept();

CREATE TRIGGER accounts_truncate_records AFTER TRUNCATE ON public.accounts FOR EACH STATEMENT EXECUTE FUNCTION public.brsync_truncate_records();

CREATE TRIGGER records_counted_delete AFTER DELETE ON public.records REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION public.brsync_count_records();

CREATE TRIGGER records_counted_insert AFTER INSERT ON public.records REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION public.brsync_count_records();

CREATE TRIGGER records_counted_update AFTER UPDATE ON public.records REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION public.brsync_count_records();

CREATE TRIGGER records_have_accounts_insert AFTER INSERT ON public.records REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION public.brsync_records_have_accounts();

CREATE TRIGGER records_have_accounts_update AFTER UPDATE ON public.records REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION public.brsync_records_have_accounts();

ALTER TABLE ONLY public.device_streams
    ADD CONSTRAINT device_streams_account_id_fkey FOREIGN KEY (account_id) REFERENCES public.accounts(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.devices
    ADD CONSTRAINT devices_account_id_fkey FOREIGN KEY (account_id) REFERENCES public.accounts(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.enrollments
    ADD CONSTRAINT enrollments_device_id_fkey FOREIGN KEY (device_id) REFERENCES public.devices(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.refusals
    ADD CONSTRAINT refusals_account_id_fkey FOREIGN KEY (account_id) REFERENCES public.accounts(id) ON DELETE CASCADE;

