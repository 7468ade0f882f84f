-- Catalog releases (issue 17): every catalog an instance loads that differs
-- from the latest release is recorded, with its source text (so other
-- instances can load it when told by NOTIFY `catalog_release`) and a
-- per-model snapshot of public prices and entries (catalog_release_models).
CREATE TABLE catalog_releases (
    release BIGINT PRIMARY KEY CHECK (release > 0),
    observed_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    -- Where the text was read from (for operators; not used to load).
    path TEXT NOT NULL,
    source TEXT NOT NULL,
    -- SHA-256 hex of `source`: an unchanged file is not a new release.
    digest TEXT NOT NULL
);

-- The visible models of a release: their public entry and price object.
CREATE TABLE catalog_release_models (
    release BIGINT NOT NULL REFERENCES catalog_releases (release),
    model_id TEXT NOT NULL,
    entry JSONB NOT NULL,
    pricing JSONB NOT NULL,
    PRIMARY KEY (release, model_id)
);

-- The pricing change feed (L-20..L-30): one row per model whose price
-- changed, appeared (previous NULL) or went away (kind `removed`, model and
-- current NULL) in a release. `position` orders rows of one instant.
CREATE TABLE catalog_price_changes (
    position BIGSERIAL PRIMARY KEY,
    release BIGINT NOT NULL REFERENCES catalog_releases (release),
    model_id TEXT NOT NULL,
    kind TEXT NOT NULL CHECK (kind IN ('updated', 'removed')),
    changed_at TIMESTAMPTZ NOT NULL,
    model JSONB,
    previous JSONB,
    current JSONB,
    CHECK ((kind = 'removed') = (model IS NULL AND current IS NULL))
);
CREATE INDEX catalog_price_changes_model ON catalog_price_changes (model_id, position DESC);

-- The secret that signs pricing-change cursors: one row, written by the
-- first instance that needs it, read by all (so any instance accepts any
-- instance's cursor).
CREATE TABLE catalog_cursor_keys (
    id SMALLINT PRIMARY KEY CHECK (id = 1),
    secret BYTEA NOT NULL CHECK (octet_length(secret) = 32),
    created_at TIMESTAMPTZ NOT NULL DEFAULT now()
);
