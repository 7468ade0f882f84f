-- Credit leases (issue 34): an instance holds part of an account's available
-- balance for itself, and admits that account's requests from it in memory,
-- without a round trip. A lease is an ordinary hold on the wallet: its
-- amount is part of `wallets.held_nano` for as long as it is active, so
-- nobody else can spend it, and `GET /admin/accounts/{id}` shows it as held.
--
-- `amount_nano` is what the lease still holds: its holder lowers it by each
-- charge it settles (and by what it gives back); the wallet's `held_nano`
-- moves with it in the same statement. A lease whose holder died is not
-- renewed, and the reaper releases it after `expires_at`.
CREATE TABLE credit_leases (
    id          uuid        PRIMARY KEY,
    account_id  uuid        NOT NULL REFERENCES wallets (account_id),
    -- A key's own lease (a key whose only limits are on spend): it also
    -- counts against that key's spend limits and monthly budget, as a live
    -- hold of the key does. Null for the account's lease (keys without limits).
    api_key_id  uuid,
    -- The instance that holds it (for operators; never trusted for money).
    holder      text        NOT NULL,
    amount_nano bigint      NOT NULL CHECK (amount_nano >= 0),
    status      text        NOT NULL CHECK (status IN ('active', 'returned', 'expired')),
    expires_at  timestamptz NOT NULL,
    -- When the holder last gave back its unused part because another
    -- instance needed the funds (a recall); null when never recalled.
    recalled_at timestamptz,
    created_at  timestamptz NOT NULL DEFAULT now(),
    ended_at    timestamptz,
    CHECK ((status = 'active') = (ended_at IS NULL)),
    CHECK (status = 'active' OR amount_nano = 0 OR status = 'expired')
) WITH (fillfactor = 70);
-- The reaper's scan and the recall check: only active leases.
CREATE INDEX credit_leases_active ON credit_leases (account_id) WHERE status = 'active';
CREATE INDEX credit_leases_active_expiry ON credit_leases (expires_at) WHERE status = 'active';
CREATE INDEX credit_leases_key_active ON credit_leases (api_key_id)
    WHERE status = 'active' AND api_key_id IS NOT NULL;

-- A request admitted from a lease: its hold row is written with its
-- settlement (or voiding), already settled or released, and names the
-- lease it was taken from. Its amount never entered `held_nano` on its own.
ALTER TABLE holds ADD COLUMN lease_id uuid;
