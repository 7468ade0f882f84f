-- Digest channels (section M): where an account hears about its usage.
-- One channel per account and platform; disconnecting keeps the row, so a
-- reconnect gets the same id, saved events and send-report counters
-- (M-19, M-34, GP-64).
CREATE TABLE channels (
    id              uuid        PRIMARY KEY,
    account_id      uuid        NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    platform        text        NOT NULL CHECK (platform IN ('email', 'slack', 'discord', 'telegram')),
    frequency       text        NOT NULL CHECK (frequency IN ('off', 'daily', 'weekly', 'monthly')),
    events          text[]      NOT NULL DEFAULT '{}',
    -- email: the verified address; slack/discord: the webhook URL (a
    -- secret: never logged, never shown); telegram: the chat id.
    destination     text        NOT NULL,
    -- Telegram only: the Bot API base for this channel (else the router's).
    api_base        text,
    -- Read-only, set by the service: the hour (UTC) a digest is due after
    -- its period ends.
    report_hour_utc smallint    NOT NULL CHECK (report_hour_utc BETWEEN 0 AND 23),
    status          text        NOT NULL CHECK (status IN ('connected', 'disconnected')),
    -- When the channel was (re)connected: its first digest covers the
    -- first complete period that ends after this instant.
    connected_at    timestamptz NOT NULL DEFAULT now(),
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now(),
    UNIQUE (account_id, platform)
);
CREATE INDEX channels_connected ON channels (id) WHERE status = 'connected';

-- Admitted `send-report` attempts (M-16..M-19, GP-65): keyed by channel,
-- so reconnecting resets nothing; 429-refused calls are not rows.
CREATE TABLE channel_report_attempts (
    channel_id   uuid        NOT NULL REFERENCES channels (id) ON DELETE CASCADE,
    attempted_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX channel_report_attempts_channel ON channel_report_attempts (channel_id, attempted_at DESC);

-- The outbox: every message a channel is to receive (scheduled digest,
-- event, a manual report awaiting retry), written in the transaction that
-- caused it and relayed by the `outbox` job. `dedup_key` makes each digest
-- period and each event occurrence one row per channel, whichever instance
-- writes it first.
CREATE TABLE channel_deliveries (
    id              uuid        PRIMARY KEY,
    channel_id      uuid        NOT NULL REFERENCES channels (id) ON DELETE CASCADE,
    kind            text        NOT NULL CHECK (kind IN ('digest', 'event', 'manual')),
    dedup_key       text        NOT NULL,
    event           text,
    period_start    timestamptz,
    period_end      timestamptz,
    -- The event's details (JSON text), rendered at delivery.
    payload         text        NOT NULL DEFAULT '{}',
    -- pending: to send (at next_attempt_at); sending: handed to a worker
    -- (a crash here leaves it for the operator: it may have been sent);
    -- delivered; skipped (a digest with no activity: nothing sent); failed (certainly not delivered, no more tries);
    -- ambiguous (may have been delivered: never resent, M-22).
    status          text        NOT NULL CHECK (status IN ('pending', 'sending', 'delivered', 'skipped', 'failed', 'ambiguous')),
    attempts        integer     NOT NULL DEFAULT 0,
    next_attempt_at timestamptz NOT NULL DEFAULT now(),
    last_error      text,
    created_at      timestamptz NOT NULL DEFAULT now(),
    finished_at     timestamptz,
    UNIQUE (channel_id, dedup_key)
);
CREATE INDEX channel_deliveries_due ON channel_deliveries (next_attempt_at) WHERE status = 'pending';
