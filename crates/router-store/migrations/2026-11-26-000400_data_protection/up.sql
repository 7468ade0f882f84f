-- The account's zero-data-retention switch (section J). Off by default
-- (GP-37); only a signed-in browser session changes it.
ALTER TABLE accounts ADD COLUMN zero_data_retention boolean NOT NULL DEFAULT false;

-- Who changed the switch and when: one row per change, append-only. The
-- session identifies the person (PATCH takes a session only, J-03).
CREATE TABLE data_protection_changes (
    id                  uuid        PRIMARY KEY,
    account_id          uuid        NOT NULL REFERENCES accounts (id),
    zero_data_retention boolean     NOT NULL,
    session_id          uuid        NOT NULL REFERENCES browser_sessions (id),
    changed_at          timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX data_protection_changes_account ON data_protection_changes (account_id, changed_at);

CREATE FUNCTION data_protection_changes_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'data_protection_changes is append-only';
END;
$$;
CREATE TRIGGER data_protection_changes_append_only
    BEFORE UPDATE OR DELETE ON data_protection_changes
    FOR EACH ROW EXECUTE FUNCTION data_protection_changes_append_only();

-- Every key record carries its account's switch (`ApiKeyRecord::account_zdr`),
-- so a flip must reach every instance's key cache at once: notify the hash
-- of each of the account's keys on the channel the caches listen on.
CREATE FUNCTION accounts_notify_zdr_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('router_api_key_changed', encode(k.key_hash, 'hex'))
        FROM api_keys k
        WHERE k.account_id = NEW.id AND k.deleted_at IS NULL;
    RETURN NULL;
END;
$$;
CREATE TRIGGER accounts_zdr_changed
    AFTER UPDATE OF zero_data_retention ON accounts
    FOR EACH ROW
    WHEN (OLD.zero_data_retention IS DISTINCT FROM NEW.zero_data_retention)
    EXECUTE FUNCTION accounts_notify_zdr_changed();
