-- Ledger balance checked once per statement instead of once per entry.
--
-- The balance check was a deferred row-level constraint trigger: at commit it
-- ran one query per inserted entry, so a settlement batch paid two queries
-- per request, about a fifth of PostgreSQL's CPU per request at saturation.
-- Every writer inserts all the entries of a ledger transaction in one
-- statement (a grant's two legs, a batch's charges), so the rule becomes:
-- the entries one statement inserts balance per `txn_id`. That is stricter
-- than balance at commit (the legs may no longer be split over statements),
-- it implies it (sums of zero are zero, and entries are append-only), and it
-- reads nothing but the statement's own rows.
DROP TRIGGER ledger_entries_balanced ON ledger_entries;

CREATE OR REPLACE FUNCTION ledger_entries_check_balanced() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    unbalanced record;
BEGIN
    SELECT txn_id, sum(amount_nano) AS total INTO unbalanced
    FROM inserted
    GROUP BY txn_id
    HAVING sum(amount_nano) <> 0
    LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'ledger transaction % is unbalanced by % nano-USD',
            unbalanced.txn_id, unbalanced.total
            USING ERRCODE = 'check_violation';
    END IF;
    RETURN NULL;
END;
$$;

CREATE TRIGGER ledger_entries_balanced
    AFTER INSERT ON ledger_entries REFERENCING NEW TABLE AS inserted
    FOR EACH STATEMENT EXECUTE FUNCTION ledger_entries_check_balanced();
