-- One account per address whatever its case (issue 33): the magic link
-- looks an address up by lower(email), and with `A@x.com` and `a@x.com`
-- both present it picked one arbitrarily. Existing case-only duplicates
-- keep the oldest account's address; each later one gets a tag in its
-- local part (`A+duplicate-5f0e9c3b2a71@x.com`, the last twelve characters of
-- its id), so nothing is lost, mail still reaches the same mailbox at most
-- providers, and the operator can merge or re-address them.
UPDATE accounts AS a
SET email = CASE
        WHEN position('@' IN a.email) > 0
            THEN regexp_replace(a.email, '@([^@]*)$', '+duplicate-' || right(a.id::text, 12) || '@\1')
        ELSE a.email || '+duplicate-' || right(a.id::text, 12)
    END
FROM (
    SELECT id, row_number() OVER (PARTITION BY lower(email) ORDER BY created_at, id) AS n
    FROM accounts
) AS ranked
WHERE ranked.id = a.id AND ranked.n > 1;

CREATE UNIQUE INDEX accounts_email_lower_key ON accounts (lower(email));
