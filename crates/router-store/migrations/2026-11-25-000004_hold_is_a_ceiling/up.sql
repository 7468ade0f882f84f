-- The hold is a ceiling (RELIABILITY.md I4): a settlement debits at most the
-- hold it posts. A supplier that reports more usage than the reservation
-- bounded (more output than `max_tokens`, more input than the bound) costs
-- the wallet exactly the hold; the rest is a shortfall the operator absorbs,
-- recorded on the request and counted on the wallet.
--
-- The settle statement caps the debit itself (`least(reported, hold)`); the
-- constraints below make any other writer that tries to post more fail.

-- What the reported usage cost at the route's rates, before the cap. Null
-- for requests settled before this migration (and for unsettled ones): the
-- charge of those was the reported cost.
ALTER TABLE requests
    ADD COLUMN reported_nano bigint,
    ADD CONSTRAINT requests_reported_covers_charge
        CHECK (reported_nano IS NULL OR reported_nano >= charged_nano);
-- NOT VALID: requests settled before this migration may have been charged
-- above their reservation (that is the bug this fixes); history is kept as
-- it was, and every row written from now on is checked.
ALTER TABLE requests
    ADD CONSTRAINT requests_charge_within_reservation
        CHECK (charged_nano <= reserved_nano) NOT VALID;

-- Per wallet: how many settlements were capped, and the nano-USD they did
-- not collect. Written by the settle statement's existing wallet update (no
-- extra row, no extra round trip); not indexed, so the update stays HOT.
ALTER TABLE wallets
    ADD COLUMN shortfall_count bigint NOT NULL DEFAULT 0 CHECK (shortfall_count >= 0),
    ADD COLUMN shortfall_nano  bigint NOT NULL DEFAULT 0 CHECK (shortfall_nano >= 0);

-- A hold's amount is fixed once taken: raising it would raise the ceiling.
CREATE TRIGGER holds_amount_fixed
    BEFORE UPDATE OF amount_nano ON holds
    FOR EACH ROW EXECUTE FUNCTION reject_reference_change('hold amounts are fixed');

-- Every wallet charge names its request, whose hold is settled and covers
-- all of the request's wallet charges together. Checked once per statement
-- over the statement's own new rows: per charged request, one probe of the
-- request's ledger entries (index `ledger_entries_request`) and one primary-
-- key probe of its hold. Runs after the whole statement, so the settle
-- statement's own hold update is visible.
CREATE FUNCTION ledger_entries_check_within_hold() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    over record;
BEGIN
    IF EXISTS (SELECT 1 FROM inserted i
               WHERE i.kind = 'charge' AND i.ledger_account = 'wallet'
                 AND i.request_id IS NULL) THEN
        RAISE EXCEPTION 'a wallet charge must name its request'
            USING ERRCODE = 'check_violation';
    END IF;
    SELECT n.request_id, c.debit, h.amount_nano, h.status INTO over
    FROM (SELECT DISTINCT i.request_id FROM inserted i
          WHERE i.kind = 'charge' AND i.ledger_account = 'wallet') n
    CROSS JOIN LATERAL (SELECT -sum(l.amount_nano) AS debit FROM ledger_entries l
                        WHERE l.request_id = n.request_id AND l.kind = 'charge'
                          AND l.ledger_account = 'wallet') c
    LEFT JOIN LATERAL (SELECT h.amount_nano, h.status FROM holds h
                       WHERE h.request_id = n.request_id LIMIT 1) h ON true
    WHERE h.amount_nano IS NULL OR h.status <> 'settled' OR c.debit > h.amount_nano
    LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'request % charged % nano-USD against a % hold of % (the hold is a ceiling)',
            over.request_id, over.debit, coalesce(over.status, 'missing'),
            coalesce(over.amount_nano, 0)
            USING ERRCODE = 'check_violation';
    END IF;
    RETURN NULL;
END;
$$;
CREATE TRIGGER ledger_entries_within_hold
    AFTER INSERT ON ledger_entries REFERENCING NEW TABLE AS inserted
    FOR EACH STATEMENT EXECUTE FUNCTION ledger_entries_check_within_hold();
