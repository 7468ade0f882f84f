-- The exact-response cache (issue 16; G-20, H-10, J-09). Off unless a key
-- opts in with a TTL. One row per (account, request fingerprint): the
-- SHA-256 of the canonical request (model, body, routing options), the
-- canonical reply as JSON and its usage. Never shared across accounts;
-- account zero data retention deletes the account's rows in one statement.
ALTER TABLE api_keys
    ADD COLUMN response_cache_ttl_seconds integer
        CHECK (response_cache_ttl_seconds BETWEEN 1 AND 86400);

CREATE TABLE response_cache (
    account_id  uuid        NOT NULL REFERENCES accounts (id),
    fingerprint bytea       NOT NULL CHECK (octet_length(fingerprint) = 32),
    response    text        NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (account_id, fingerprint)
);
-- The purge job removes rows older than the longest TTL.
CREATE INDEX response_cache_created ON response_cache (created_at);

-- A request answered from the cache: recorded as succeeded, charged 0,
-- with no hold and no ledger entry.
ALTER TABLE requests ADD COLUMN cache_hit boolean NOT NULL DEFAULT false;
