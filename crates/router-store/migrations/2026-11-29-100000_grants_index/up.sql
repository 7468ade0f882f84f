-- `/metrics` reads every credit granted so far (`router_credits_granted_nano_usd`,
-- router-store/src/gauges.rs) at each scrape: an index-only read of the
-- few grant rows, never a scan of the ledger.
CREATE INDEX ledger_entries_grants ON ledger_entries (id) INCLUDE (amount_nano)
    WHERE ledger_account = 'grants';
