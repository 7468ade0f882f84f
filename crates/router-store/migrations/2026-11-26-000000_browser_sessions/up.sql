-- Browser sessions (the spec's SessionAuth) and the magic links that open
-- them. Only SHA-256 of a cookie value or link token is stored, so a copy of
-- the database opens no session. Every instance reads the same rows, so a
-- session signed in through one is accepted by all.
CREATE TABLE browser_sessions (
    id          uuid        PRIMARY KEY,
    account_id  uuid        NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    token_hash  bytea       NOT NULL UNIQUE,
    created_at  timestamptz NOT NULL DEFAULT now(),
    expires_at  timestamptz NOT NULL,
    -- Set by sign-out or the operator; a revoked session never opens again.
    revoked_at  timestamptz
);
CREATE INDEX browser_sessions_account ON browser_sessions (account_id);

-- A sign-in link sent by email: single use (`used_at`), short-lived.
CREATE TABLE magic_links (
    token_hash  bytea       PRIMARY KEY,
    account_id  uuid        NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    created_at  timestamptz NOT NULL DEFAULT now(),
    expires_at  timestamptz NOT NULL,
    used_at     timestamptz
);
-- The newest link of an account (the resend throttle reads it).
CREATE INDEX magic_links_account_created ON magic_links (account_id, created_at DESC);

-- Accounts are found by the address a person types, in any letter case.
CREATE INDEX accounts_email_lower ON accounts (lower(email));
