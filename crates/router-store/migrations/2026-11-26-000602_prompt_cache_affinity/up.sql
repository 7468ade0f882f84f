-- Prompt-cache routing affinity (issue 16; F-14, F-16): which route last
-- served a cacheable prefix in a scope (session, user or org), so every
-- instance prefers it while the preference lasts. The key is the SHA-256
-- of (scope, model, prefix): no prompt text is stored.
CREATE TABLE prompt_cache_affinity (
    fingerprint bytea       PRIMARY KEY CHECK (octet_length(fingerprint) = 32),
    route_id    text        NOT NULL,
    expires_at  timestamptz NOT NULL
);
-- The purge job removes expired preferences.
CREATE INDEX prompt_cache_affinity_expiry ON prompt_cache_affinity (expires_at);
