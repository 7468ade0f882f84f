-- Accounts, keys, wallets, holds, the double-entry ledger, requests and attempts.
--
-- Forward-only: a shipped migration is never edited; change the schema with a
-- new one. Money is integer nano-USD (BIGINT), never a float.

CREATE TABLE accounts (
    id             uuid        PRIMARY KEY,
    email          text        NOT NULL UNIQUE,
    email_verified boolean     NOT NULL DEFAULT false,
    created_at     timestamptz NOT NULL DEFAULT now()
);

-- One wallet per account. `held_nano` is the sum of the account's live holds;
-- the available balance is `balance_nano - held_nano`. Reservations update the
-- row in place, so leave room for HOT updates.
CREATE TABLE wallets (
    account_id   uuid        PRIMARY KEY REFERENCES accounts (id),
    balance_nano bigint      NOT NULL DEFAULT 0,
    held_nano    bigint      NOT NULL DEFAULT 0 CHECK (held_nano >= 0),
    updated_at   timestamptz NOT NULL DEFAULT now()
) WITH (fillfactor = 70);

-- Only the SHA-256 of a key's secret is stored, never the secret.
CREATE TABLE api_keys (
    id             uuid        PRIMARY KEY,
    account_id     uuid        NOT NULL REFERENCES accounts (id),
    key_hash       bytea       NOT NULL UNIQUE CHECK (octet_length(key_hash) = 32),
    display_prefix text        NOT NULL,
    scopes         text[]      NOT NULL DEFAULT '{}',
    created_at     timestamptz NOT NULL DEFAULT now(),
    expires_at     timestamptz,
    deleted_at     timestamptz
);
CREATE INDEX api_keys_account_id ON api_keys (account_id);

-- Key caches in router processes listen on this channel; the payload is the
-- hex SHA-256 of the key whose deletion, expiry or scopes changed.
CREATE FUNCTION api_keys_notify_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('router_api_key_changed', encode(NEW.key_hash, 'hex'));
    RETURN NULL;
END;
$$;
CREATE TRIGGER api_keys_changed
    AFTER UPDATE OF deleted_at, expires_at, scopes ON api_keys
    FOR EACH ROW EXECUTE FUNCTION api_keys_notify_changed();

CREATE TABLE requests (
    id                 uuid        PRIMARY KEY,
    account_id         uuid        NOT NULL REFERENCES accounts (id),
    api_key_id         uuid        NOT NULL REFERENCES api_keys (id),
    model              text        NOT NULL,
    inbound_protocol   text        NOT NULL
        CHECK (inbound_protocol IN ('chat', 'responses', 'messages', 'completions')),
    recorded_protocol  text        NOT NULL
        CHECK (recorded_protocol IN ('chat', 'responses', 'messages', 'completions')),
    stream             boolean     NOT NULL,
    status             text        NOT NULL CHECK (status IN ('reserved', 'succeeded', 'failed')),
    reserved_nano      bigint      NOT NULL CHECK (reserved_nano >= 0),
    charged_nano       bigint      CHECK (charged_nano >= 0),
    input_tokens       bigint,
    output_tokens      bigint,
    cache_read_tokens  bigint,
    cache_write_tokens bigint,
    reasoning_tokens   bigint,
    route_id           text,
    error_reason       text,
    created_at         timestamptz NOT NULL DEFAULT now(),
    finished_at        timestamptz,
    CHECK ((status = 'reserved') = (finished_at IS NULL)),
    CHECK ((status = 'succeeded') = (charged_nano IS NOT NULL))
);
CREATE INDEX requests_account_created ON requests (account_id, created_at DESC);

-- The funds held for one request. `released_at` is when the hold left `held`
-- (settled or released).
CREATE TABLE holds (
    request_id  uuid        PRIMARY KEY REFERENCES requests (id),
    account_id  uuid        NOT NULL REFERENCES wallets (account_id),
    amount_nano bigint      NOT NULL CHECK (amount_nano >= 0),
    status      text        NOT NULL CHECK (status IN ('held', 'settled', 'released')),
    expires_at  timestamptz NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    released_at timestamptz,
    CHECK ((status = 'held') = (released_at IS NULL))
) WITH (fillfactor = 80);
-- The reaper's scan: only live holds, oldest expiry first.
CREATE INDEX holds_live_expiry ON holds (expires_at) WHERE status = 'held';

-- Double entry: the entries of one `txn_id` sum to zero. House accounts
-- (`revenue`, `grants`) have no account_id; wallet entries always do.
CREATE TABLE ledger_entries (
    id             bigserial   PRIMARY KEY,
    txn_id         uuid        NOT NULL,
    request_id     uuid        REFERENCES requests (id),
    account_id     uuid        REFERENCES accounts (id),
    ledger_account text        NOT NULL CHECK (ledger_account IN ('wallet', 'revenue', 'grants')),
    amount_nano    bigint      NOT NULL CHECK (amount_nano <> 0),
    kind           text        NOT NULL CHECK (kind IN ('grant', 'charge')),
    created_at     timestamptz NOT NULL DEFAULT now(),
    CHECK ((ledger_account = 'wallet') = (account_id IS NOT NULL))
);
CREATE INDEX ledger_entries_txn ON ledger_entries (txn_id);
CREATE INDEX ledger_entries_request ON ledger_entries (request_id) WHERE request_id IS NOT NULL;
CREATE INDEX ledger_entries_account ON ledger_entries (account_id, id) WHERE account_id IS NOT NULL;

-- Balanced: checked at commit, once every entry of the transaction is in.
CREATE FUNCTION ledger_entries_check_balanced() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    total numeric;
BEGIN
    SELECT sum(amount_nano) INTO total FROM ledger_entries WHERE txn_id = NEW.txn_id;
    IF total <> 0 THEN
        RAISE EXCEPTION 'ledger transaction % is unbalanced by % nano-USD', NEW.txn_id, total
            USING ERRCODE = 'check_violation';
    END IF;
    RETURN NULL;
END;
$$;
CREATE CONSTRAINT TRIGGER ledger_entries_balanced
    AFTER INSERT ON ledger_entries
    DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW EXECUTE FUNCTION ledger_entries_check_balanced();

-- Append-only: history is corrected by new entries, never rewritten.
CREATE FUNCTION ledger_entries_reject_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'ledger_entries is append-only (% rejected)', TG_OP
        USING ERRCODE = 'restrict_violation';
END;
$$;
CREATE TRIGGER ledger_entries_append_only
    BEFORE UPDATE OR DELETE ON ledger_entries
    FOR EACH ROW EXECUTE FUNCTION ledger_entries_reject_change();
CREATE TRIGGER ledger_entries_no_truncate
    BEFORE TRUNCATE ON ledger_entries
    FOR EACH STATEMENT EXECUTE FUNCTION ledger_entries_reject_change();

CREATE TABLE attempts (
    request_id        uuid        NOT NULL REFERENCES requests (id),
    attempt_no        integer     NOT NULL CHECK (attempt_no >= 1),
    route_id          text        NOT NULL,
    supplier_id       text        NOT NULL,
    upstream_protocol text        NOT NULL
        CHECK (upstream_protocol IN ('chat', 'responses', 'messages', 'completions')),
    started_at        timestamptz NOT NULL,
    duration_ms       bigint      NOT NULL CHECK (duration_ms >= 0),
    outcome           text        NOT NULL CHECK (outcome IN ('succeeded', 'failed')),
    upstream_status   integer,
    failure_kind      text,
    retryable         boolean,
    PRIMARY KEY (request_id, attempt_no),
    CHECK ((outcome = 'failed') = (failure_kind IS NOT NULL AND retryable IS NOT NULL))
);
