-- Temporary image uploads (section I). One row per admitted upload; the row
-- outlives its object as a tombstone so the rate counters stay honest after
-- a deletion (I-21, CF-23).
--
-- status: `writing` (admitted, bytes going to the object store), `retained`
-- (readable until `expires_at`), `failed` (the store failed: counts toward
-- the rate, not the quota), `deleting` (DELETE, account ZDR or expiry: no
-- longer readable, still counted by the quota until removed, I-17),
-- `removed` (object gone; the tombstone is purged `removed_at` + 24 h).
CREATE TABLE uploads (
    id          uuid        PRIMARY KEY,
    account_id  uuid        NOT NULL REFERENCES accounts (id),
    -- Random and unguessable; never derived from the client's file name.
    object_key  text        NOT NULL UNIQUE,
    filename    text,
    bytes       bigint      NOT NULL CHECK (bytes BETWEEN 1 AND 10485760),
    mime_type   text        NOT NULL
        CHECK (mime_type IN ('image/png', 'image/jpeg', 'image/webp', 'image/gif')),
    width       integer     NOT NULL CHECK (width > 0),
    height      integer     NOT NULL CHECK (height > 0),
    status      text        NOT NULL
        CHECK (status IN ('writing', 'retained', 'failed', 'deleting', 'removed')),
    created_at  timestamptz NOT NULL,
    -- Recorded at admission and never recomputed (CF-24).
    expires_at  timestamptz NOT NULL CHECK (expires_at > created_at),
    deleted_at  timestamptz,
    removed_at  timestamptz,
    CHECK ((status IN ('deleting', 'removed')) = (deleted_at IS NOT NULL) OR status = 'failed'),
    CHECK ((status IN ('removed', 'failed')) = (removed_at IS NOT NULL))
);
-- Rate windows and quota of one account.
CREATE INDEX uploads_account_created ON uploads (account_id, created_at);
-- The expiry job's queue.
CREATE INDEX uploads_live_expiry ON uploads (expires_at) WHERE status IN ('writing', 'retained');
-- The purge job's queue.
CREATE INDEX uploads_deleting ON uploads (deleted_at) WHERE status = 'deleting';
-- Tombstones to drop.
CREATE INDEX uploads_tombstones ON uploads (removed_at) WHERE status IN ('removed', 'failed');
