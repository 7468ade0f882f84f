-- Background jobs (reaper, expiry, purge, schedulers, outbox) run on every
-- instance; one row per job says which instance may run its next pass and
-- when. Taking a pass is one conditional upsert, so two instances never run
-- the same job's scheduled pass at once; the work inside a pass claims its
-- items with FOR UPDATE SKIP LOCKED, so even overlapping passes (a manual
-- run, a lease that ran out) never process an item twice.
CREATE TABLE job_leases (
    name             text        PRIMARY KEY,
    -- No instance starts a scheduled pass before this.
    leased_until     timestamptz NOT NULL,
    leased_by        text        NOT NULL,
    last_started_at  timestamptz NOT NULL,
    last_finished_at timestamptz,
    last_processed   bigint,
    last_error       text
);
