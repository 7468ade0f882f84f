-- Keep the request lifecycle's statements on primary-key lookups as the
-- tables grow.
--
-- The reaper's index was partial on `status = 'held'`. Settle and void look
-- a hold up by request_id AND `status = 'held'`, which let the planner pick
-- that small index (few live holds) and hash-join it instead of probing the
-- primary key. But every settled hold leaves a dead entry in that index until
-- vacuum, and bitmap scans never mark entries dead, so each settlement walked
-- all of them: PostgreSQL's cost per request grew with the traffic since the
-- last vacuum. The same set of rows is `released_at IS NULL` (a CHECK ties
-- the two), a predicate only the reaper states.
DROP INDEX holds_live_expiry;
CREATE INDEX holds_live_expiry ON holds (expires_at) WHERE released_at IS NULL;

-- Settlement updates the request row in place (status, usage, charge: no
-- indexed column). Room on the page lets that be a HOT update, which writes
-- no new index entries. Applies to pages written from now on.
ALTER TABLE requests SET (fillfactor = 70);

-- References of the per-request rows, checked once per statement instead of
-- once per row.
--
-- A foreign key checks each inserted row with its own query, which locks the
-- parent row (FOR KEY SHARE). A request's rows are written by batch
-- statements (group commit), so that was eight checks and eight row locks
-- per request, on rows the same statements write, and it cost PostgreSQL
-- more CPU than the rest of the request's writes. The checks below keep the
-- same guarantee: every inserted reference must exist when the statement
-- ends (one primary-key probe per new row, one query per statement), a
-- reference is never rewritten, and a parent row is never deleted, so it
-- cannot vanish later.
-- The parents are never deleted by the service anyway: keys are revoked by
-- `deleted_at`, requests and accounts are history.
ALTER TABLE requests
    DROP CONSTRAINT requests_account_id_fkey,
    DROP CONSTRAINT requests_api_key_id_fkey;
ALTER TABLE holds
    DROP CONSTRAINT holds_request_id_fkey,
    DROP CONSTRAINT holds_account_id_fkey;
ALTER TABLE attempts
    DROP CONSTRAINT attempts_request_id_fkey;
ALTER TABLE ledger_entries
    DROP CONSTRAINT ledger_entries_request_id_fkey,
    DROP CONSTRAINT ledger_entries_account_id_fkey;

-- The probes are LATERAL subqueries with LIMIT, which the planner cannot
-- turn into a join: as plain NOT EXISTS, a plan cached while `requests` was
-- small merge-joined the new rows against the whole primary key, a cost
-- that grew with every request.
CREATE FUNCTION requests_check_references() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM inserted i
               LEFT JOIN LATERAL (SELECT 1 AS found FROM accounts a
                                  WHERE a.id = i.account_id LIMIT 1) a ON true
               WHERE a.found IS NULL) THEN
        RAISE EXCEPTION 'insert into requests references a missing account'
            USING ERRCODE = 'foreign_key_violation';
    END IF;
    IF EXISTS (SELECT 1 FROM inserted i
               LEFT JOIN LATERAL (SELECT 1 AS found FROM api_keys k
                                  WHERE k.id = i.api_key_id LIMIT 1) k ON true
               WHERE k.found IS NULL) THEN
        RAISE EXCEPTION 'insert into requests references a missing api key'
            USING ERRCODE = 'foreign_key_violation';
    END IF;
    RETURN NULL;
END;
$$;
CREATE TRIGGER requests_references
    AFTER INSERT ON requests REFERENCING NEW TABLE AS inserted
    FOR EACH STATEMENT EXECUTE FUNCTION requests_check_references();

CREATE FUNCTION holds_check_references() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM inserted i
               LEFT JOIN LATERAL (SELECT 1 AS found FROM requests r
                                  WHERE r.id = i.request_id LIMIT 1) r ON true
               WHERE r.found IS NULL) THEN
        RAISE EXCEPTION 'insert into holds references a missing request'
            USING ERRCODE = 'foreign_key_violation';
    END IF;
    -- Checked against accounts, not against the wallet row it names: every
    -- account gets its wallet in the transaction that creates it, neither is
    -- ever deleted, and the wallet row is the hottest row of the database,
    -- with a chain of recent versions that each lookup would walk.
    IF EXISTS (SELECT 1 FROM inserted i
               LEFT JOIN LATERAL (SELECT 1 AS found FROM accounts a
                                  WHERE a.id = i.account_id LIMIT 1) a ON true
               WHERE a.found IS NULL) THEN
        RAISE EXCEPTION 'insert into holds references a missing account'
            USING ERRCODE = 'foreign_key_violation';
    END IF;
    RETURN NULL;
END;
$$;
CREATE TRIGGER holds_references
    AFTER INSERT ON holds REFERENCING NEW TABLE AS inserted
    FOR EACH STATEMENT EXECUTE FUNCTION holds_check_references();

CREATE FUNCTION attempts_check_references() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM inserted i
               LEFT JOIN LATERAL (SELECT 1 AS found FROM requests r
                                  WHERE r.id = i.request_id LIMIT 1) r ON true
               WHERE r.found IS NULL) THEN
        RAISE EXCEPTION 'insert into attempts references a missing request'
            USING ERRCODE = 'foreign_key_violation';
    END IF;
    RETURN NULL;
END;
$$;
CREATE TRIGGER attempts_references
    AFTER INSERT ON attempts REFERENCING NEW TABLE AS inserted
    FOR EACH STATEMENT EXECUTE FUNCTION attempts_check_references();

CREATE FUNCTION ledger_entries_check_references() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM inserted i
               LEFT JOIN LATERAL (SELECT 1 AS found FROM requests r
                                  WHERE r.id = i.request_id LIMIT 1) r ON true
               WHERE i.request_id IS NOT NULL AND r.found IS NULL) THEN
        RAISE EXCEPTION 'insert into ledger_entries references a missing request'
            USING ERRCODE = 'foreign_key_violation';
    END IF;
    IF EXISTS (SELECT 1 FROM inserted i
               LEFT JOIN LATERAL (SELECT 1 AS found FROM accounts a
                                  WHERE a.id = i.account_id LIMIT 1) a ON true
               WHERE i.account_id IS NOT NULL AND a.found IS NULL) THEN
        RAISE EXCEPTION 'insert into ledger_entries references a missing account'
            USING ERRCODE = 'foreign_key_violation';
    END IF;
    RETURN NULL;
END;
$$;
CREATE TRIGGER ledger_entries_references
    AFTER INSERT ON ledger_entries REFERENCING NEW TABLE AS inserted
    FOR EACH STATEMENT EXECUTE FUNCTION ledger_entries_check_references();

-- A reference, once written, is never rewritten (ledger_entries is
-- append-only already), and a referenced row is never deleted nor re-keyed.
-- `UPDATE OF` fires only for statements that set those columns, so the
-- lifecycle's own updates do not pay for these.
CREATE FUNCTION reject_reference_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION '%: % rejected (%)', TG_TABLE_NAME, TG_OP, TG_ARGV[0]
        USING ERRCODE = 'restrict_violation';
END;
$$;
CREATE TRIGGER requests_references_fixed
    BEFORE UPDATE OF account_id, api_key_id ON requests
    FOR EACH ROW EXECUTE FUNCTION reject_reference_change('references are fixed');
CREATE TRIGGER holds_references_fixed
    BEFORE UPDATE OF request_id, account_id ON holds
    FOR EACH ROW EXECUTE FUNCTION reject_reference_change('references are fixed');
CREATE TRIGGER attempts_references_fixed
    BEFORE UPDATE OF request_id ON attempts
    FOR EACH ROW EXECUTE FUNCTION reject_reference_change('references are fixed');

CREATE TRIGGER accounts_kept
    BEFORE DELETE OR UPDATE OF id ON accounts
    FOR EACH ROW EXECUTE FUNCTION reject_reference_change('accounts are kept');
CREATE TRIGGER api_keys_kept
    BEFORE DELETE OR UPDATE OF id ON api_keys
    FOR EACH ROW EXECUTE FUNCTION reject_reference_change('keys are revoked, not deleted');
CREATE TRIGGER wallets_kept
    BEFORE DELETE OR UPDATE OF account_id ON wallets
    FOR EACH ROW EXECUTE FUNCTION reject_reference_change('wallets are kept');
CREATE TRIGGER requests_kept
    BEFORE DELETE OR UPDATE OF id ON requests
    FOR EACH ROW EXECUTE FUNCTION reject_reference_change('requests are history');

CREATE TRIGGER accounts_no_truncate BEFORE TRUNCATE ON accounts
    FOR EACH STATEMENT EXECUTE FUNCTION reject_reference_change('accounts are kept');
CREATE TRIGGER api_keys_no_truncate BEFORE TRUNCATE ON api_keys
    FOR EACH STATEMENT EXECUTE FUNCTION reject_reference_change('keys are revoked, not deleted');
CREATE TRIGGER wallets_no_truncate BEFORE TRUNCATE ON wallets
    FOR EACH STATEMENT EXECUTE FUNCTION reject_reference_change('wallets are kept');
CREATE TRIGGER requests_no_truncate BEFORE TRUNCATE ON requests
    FOR EACH STATEMENT EXECUTE FUNCTION reject_reference_change('requests are history');
