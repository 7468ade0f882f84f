-- A/B experiments of an account (issue 16; F-01..F-06). The variants are
-- one JSON array validated by the server ({name, weight, system?,
-- system_mode, model?}); they change only while the experiment is a draft.
CREATE TABLE experiments (
    id         uuid        PRIMARY KEY,
    account_id uuid        NOT NULL REFERENCES accounts (id),
    slug       text        NOT NULL,
    status     text        NOT NULL DEFAULT 'draft'
        CHECK (status IN ('draft', 'running', 'paused', 'completed', 'promoted')),
    variants   jsonb       NOT NULL CHECK (jsonb_typeof(variants) = 'array'),
    winner     text,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT experiments_account_slug UNIQUE (account_id, slug),
    CHECK ((status = 'promoted') = (winner IS NOT NULL))
);

-- The request history records which experiment and variant a request was
-- assigned. Nullable columns without a default: no table rewrite.
ALTER TABLE requests
    ADD COLUMN experiment_id uuid REFERENCES experiments (id),
    ADD COLUMN experiment_variant text;
-- Assignment counts per variant read only the experiment's own rows.
CREATE INDEX requests_experiment ON requests (experiment_id, experiment_variant)
    WHERE experiment_id IS NOT NULL;
