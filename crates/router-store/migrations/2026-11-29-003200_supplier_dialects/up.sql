-- Supplier-only dialects (issue 32): an attempt may go out as Gemini, as
-- Anthropic's Messages body on Bedrock or as Bedrock Converse. Requests still arrive only in the
-- client protocols, so only the attempts' check widens.
ALTER TABLE attempts
    DROP CONSTRAINT attempts_upstream_protocol_check,
    ADD CONSTRAINT attempts_upstream_protocol_check
        CHECK (upstream_protocol IN ('chat', 'responses', 'messages', 'completions', 'images', 'videos', 'gemini', 'bedrock_messages', 'bedrock_converse')) NOT VALID;
ALTER TABLE attempts VALIDATE CONSTRAINT attempts_upstream_protocol_check;
