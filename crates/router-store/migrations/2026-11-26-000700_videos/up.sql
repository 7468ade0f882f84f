-- Asynchronous video jobs (section O). One row per video, created in the
-- same transaction as its hold (the request row of `request_id`), so a video
-- exists exactly when its money is held; the row is the idempotency record
-- (`client_task_id` unique per account for the video's lifetime, GP-26).
--
-- status: `submitting` (held, the supplier submission in flight),
-- `queued` / `in_progress` (polled), `unknown` (the submission was sent but
-- its answer lost, or its process died: held until an operator reconciles,
-- GP-25), `completed` (content in the object store, hold settled) and
-- `failed` (hold released). Terminal rows never change (GP-22).
CREATE TABLE videos (
    id                uuid        PRIMARY KEY,
    account_id        uuid        NOT NULL REFERENCES accounts (id),
    api_key_id        uuid        NOT NULL REFERENCES api_keys (id),
    -- The request whose hold pays for the video. Deferred: the video row
    -- is written first, so that concurrent duplicates queue on the
    -- idempotency index before any money moves.
    request_id        uuid        NOT NULL UNIQUE
        REFERENCES requests (id) DEFERRABLE INITIALLY DEFERRED,
    client_task_id    text        NOT NULL CHECK (length(client_task_id) BETWEEN 1 AND 128),
    -- The normalized request's digest (GP-26): same key, other digest → 409.
    fingerprint       text        NOT NULL,
    -- The logical model as submitted (O-22).
    model             text        NOT NULL,
    route_id          text        NOT NULL,
    supplier_id       text        NOT NULL,
    charge_nano       bigint      NOT NULL CHECK (charge_nano >= 0),
    status            text        NOT NULL CHECK (status IN
        ('submitting', 'queued', 'in_progress', 'unknown', 'completed', 'failed')),
    progress          integer     NOT NULL DEFAULT 0 CHECK (progress BETWEEN 0 AND 100),
    upstream_task_id  text,
    -- The public code the create call answered with when the supplier
    -- refused the submission (a replay answers the same, like Stripe).
    create_error      text,
    -- Public text (O-21) and the supplier's own text (operators only, P-08).
    fail_reason       text,
    supplier_error    text,
    content_key       text,
    content_bytes     bigint      CHECK (content_bytes >= 0),
    content_type      text,
    created_at        timestamptz NOT NULL DEFAULT now(),
    updated_at        timestamptz NOT NULL DEFAULT now(),
    completed_at      timestamptz,
    -- Poll scheduling: the next poll is due then; claiming a row moves it
    -- one interval on, so any number of instances poll a job once per
    -- interval.
    next_poll_at      timestamptz,
    polls             integer     NOT NULL DEFAULT 0,
    reconciled_at     timestamptz,
    UNIQUE (account_id, client_task_id),
    CHECK ((status IN ('completed', 'failed')) = (completed_at IS NOT NULL)),
    CHECK (status <> 'completed' OR (content_key IS NOT NULL AND content_bytes IS NOT NULL AND progress = 100)),
    CHECK (status NOT IN ('queued', 'in_progress') OR upstream_task_id IS NOT NULL)
);
-- The poller's queue.
CREATE INDEX videos_due ON videos (next_poll_at) WHERE status IN ('queued', 'in_progress');
-- Submissions whose process may have died.
CREATE INDEX videos_submitting ON videos (created_at) WHERE status = 'submitting';

-- A video's request is recorded under its own protocol, `videos` (as images
-- are under `images`); the checks are widened the same way.
ALTER TABLE requests
    DROP CONSTRAINT requests_inbound_protocol_check,
    ADD CONSTRAINT requests_inbound_protocol_check
        CHECK (inbound_protocol IN ('chat', 'responses', 'messages', 'completions', 'images', 'videos')) NOT VALID,
    DROP CONSTRAINT requests_recorded_protocol_check,
    ADD CONSTRAINT requests_recorded_protocol_check
        CHECK (recorded_protocol IN ('chat', 'responses', 'messages', 'completions', 'images', 'videos')) NOT VALID;
ALTER TABLE requests VALIDATE CONSTRAINT requests_inbound_protocol_check;
ALTER TABLE requests VALIDATE CONSTRAINT requests_recorded_protocol_check;

ALTER TABLE attempts
    DROP CONSTRAINT attempts_upstream_protocol_check,
    ADD CONSTRAINT attempts_upstream_protocol_check
        CHECK (upstream_protocol IN ('chat', 'responses', 'messages', 'completions', 'images', 'videos')) NOT VALID;
ALTER TABLE attempts VALIDATE CONSTRAINT attempts_upstream_protocol_check;
