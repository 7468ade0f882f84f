-- The secret that authenticates router thinking signatures (router-core
-- `thinking_seal`): one row per signature version (`rtr1.` -> 1), written once
-- by the first instance that starts (INSERT ... ON CONFLICT DO NOTHING) and
-- read by every instance, so they all issue and accept the same signatures.
CREATE TABLE thinking_seal_keys (
    version SMALLINT PRIMARY KEY CHECK (version > 0),
    secret BYTEA NOT NULL CHECK (octet_length(secret) = 32),
    created_at TIMESTAMPTZ NOT NULL DEFAULT now()
);
