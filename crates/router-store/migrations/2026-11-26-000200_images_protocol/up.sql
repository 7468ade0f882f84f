-- Image generation (section N) is recorded in the request history under its
-- own protocol, `images`: a request's inbound and recorded protocol, and the
-- upstream protocol of its attempt on an `images` route. Widen the three
-- protocol checks; every existing row satisfies the wider set.
--
-- Each new check is added NOT VALID (no scan under the ACCESS EXCLUSIVE
-- lock) and then validated, which scans under a lock that lets reads and
-- writes continue.

ALTER TABLE requests
    DROP CONSTRAINT requests_inbound_protocol_check,
    ADD CONSTRAINT requests_inbound_protocol_check
        CHECK (inbound_protocol IN ('chat', 'responses', 'messages', 'completions', 'images')) NOT VALID,
    DROP CONSTRAINT requests_recorded_protocol_check,
    ADD CONSTRAINT requests_recorded_protocol_check
        CHECK (recorded_protocol IN ('chat', 'responses', 'messages', 'completions', 'images')) NOT VALID;
ALTER TABLE requests VALIDATE CONSTRAINT requests_inbound_protocol_check;
ALTER TABLE requests VALIDATE CONSTRAINT requests_recorded_protocol_check;

ALTER TABLE attempts
    DROP CONSTRAINT attempts_upstream_protocol_check,
    ADD CONSTRAINT attempts_upstream_protocol_check
        CHECK (upstream_protocol IN ('chat', 'responses', 'messages', 'completions', 'images')) NOT VALID;
ALTER TABLE attempts VALIDATE CONSTRAINT attempts_upstream_protocol_check;
