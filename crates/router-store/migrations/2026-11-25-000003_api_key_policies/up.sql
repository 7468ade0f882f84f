-- Key policies (issue 15; A-18, A-19, A-20, F-07): which models a key may
-- use, from which client networks, and its default prompt-cache mode. NULL
-- means "no restriction" (the mode: passthrough). Kept in the key's row so
-- the cached key record carries them and checking costs no query.
ALTER TABLE api_keys
    ADD COLUMN allowed_models    text[],
    ADD COLUMN ip_allowlist      text[],
    ADD COLUMN prompt_cache_mode text
        CHECK (prompt_cache_mode IN ('on', 'off', 'passthrough')),
    -- Bumped by every policy change; a reservation names the version it was
    -- admitted under and is refused when that is no longer current.
    ADD COLUMN policy_version    bigint NOT NULL DEFAULT 0;

-- Caches must also hear of policy changes (the payload stays the key hash).
DROP TRIGGER api_keys_changed ON api_keys;
CREATE TRIGGER api_keys_changed
    AFTER UPDATE OF deleted_at, expires_at, scopes, allowed_models, ip_allowlist,
                    prompt_cache_mode, policy_version ON api_keys
    FOR EACH ROW EXECUTE FUNCTION api_keys_notify_changed();
