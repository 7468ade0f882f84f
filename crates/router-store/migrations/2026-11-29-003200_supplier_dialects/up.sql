-- Supplier-only dialects (issue 32): an attempt may go out as Gemini or as
-- Anthropic's Messages body on Bedrock. Requests still arrive only in the
-- client protocols, so only the attempts' check widens.
ALTER TABLE attempts
    DROP CONSTRAINT attempts_upstream_protocol_check,
    ADD CONSTRAINT attempts_upstream_protocol_check
        CHECK (upstream_protocol IN ('chat', 'responses', 'messages', 'completions', 'images', 'videos', 'gemini', 'bedrock_messages')) NOT VALID;
ALTER TABLE attempts VALIDATE CONSTRAINT attempts_upstream_protocol_check;
