-- A settlement that committed although its answer was lost, for a request
-- whose client was answered with an error (the database went away between
-- the commit and its answer): the charge is given back by a `reversal`,
-- the wallet entry's opposite, once the database answers again
-- (RELIABILITY.md D1: the client saw success exactly when it was charged).
ALTER TABLE ledger_entries DROP CONSTRAINT ledger_entries_kind_check;
ALTER TABLE ledger_entries ADD CONSTRAINT ledger_entries_kind_check
    CHECK (kind IN ('grant', 'charge', 'reversal'));
