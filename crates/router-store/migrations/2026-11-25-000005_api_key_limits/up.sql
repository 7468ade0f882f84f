-- Key limits (issue 15; A-21, G-21, GP-08): rolling spend windows, a UTC
-- calendar-month budget, requests per minute and per day, and concurrent
-- requests. NULL means "unlimited": there are no built-in numbers.
--
-- Enforced by the reservation of a key that sets any of them, in one
-- transaction that first locks the key row FOR UPDATE (serialising that
-- key's admissions), then counts from `requests`, then takes the hold. No
-- counters are kept: what a key spent and how many requests it made are
-- read from its own request and hold rows through the two indexes below.
ALTER TABLE api_keys
    -- Rolling spend windows, paired by position: amount in nano-USD over
    -- the last `seconds`.
    ADD COLUMN spend_limit_nano        bigint[],
    ADD COLUMN spend_limit_seconds     bigint[],
    ADD COLUMN monthly_budget_nano     bigint CHECK (monthly_budget_nano >= 0),
    ADD COLUMN requests_per_minute     bigint CHECK (requests_per_minute >= 0),
    ADD COLUMN requests_per_day        bigint CHECK (requests_per_day >= 0),
    ADD COLUMN max_concurrent_requests bigint CHECK (max_concurrent_requests >= 0),
    ADD CONSTRAINT api_keys_spend_limits_paired CHECK (
        (spend_limit_nano IS NULL) = (spend_limit_seconds IS NULL)
        AND coalesce(cardinality(spend_limit_nano), 0)
            = coalesce(cardinality(spend_limit_seconds), 0));

-- A key's requests by admission time: requests per minute/day and the
-- charges of a spend window or of the month (a request's charge counts at
-- its admission time, when its hold was taken).
CREATE INDEX requests_key_created ON requests (api_key_id, created_at);
-- A key's live requests (concurrency, and the live holds every spend check
-- adds) are its unreleased holds: small, only requests in flight. Indexed on holds, whose
-- settlement already changes an indexed column (released_at), rather than
-- on requests by status, which would make every settlement of a request a
-- non-HOT update.
ALTER TABLE holds ADD COLUMN api_key_id uuid;
CREATE INDEX holds_key_live ON holds (api_key_id) WHERE released_at IS NULL;

-- Caches must hear of limit changes too (the payload stays the key hash).
DROP TRIGGER api_keys_changed ON api_keys;
CREATE TRIGGER api_keys_changed
    AFTER UPDATE OF deleted_at, expires_at, scopes, allowed_models, ip_allowlist,
                    prompt_cache_mode, policy_version, spend_limit_nano,
                    spend_limit_seconds, monthly_budget_nano, requests_per_minute,
                    requests_per_day, max_concurrent_requests ON api_keys
    FOR EACH ROW EXECUTE FUNCTION api_keys_notify_changed();
