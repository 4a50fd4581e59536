-- The analyst console (docs/console.md).
--
-- Sessions live in PostgreSQL, not in one instance's memory, so a session signed in through
-- one instance is honoured (and signed out, and expires) on every instance behind the proxy.
-- Only the SHA-256 of the cookie is stored: a database dump holds no usable session.
CREATE TABLE console_sessions (
    session_hash bytea PRIMARY KEY CHECK (length(session_hash) = 32),
    key_id       text NOT NULL REFERENCES api_keys (key_id),
    csrf_token   text NOT NULL CHECK (length(csrf_token) BETWEEN 32 AND 64),
    created_at   timestamptz NOT NULL,
    expires_at   timestamptz NOT NULL
);
CREATE INDEX console_sessions_expiry ON console_sessions (expires_at);

-- Hourly roll-ups for the Decisions and Rule hits pages, filled when those pages are read
-- (ConsoleRollup): the provisioning INSERT path stays exactly as it was (no trigger, no new
-- index on provisioning_attempts), and a page over weeks reads a few thousand rows instead of
-- expanding the hits of every attempt. Only hours that ended more than five minutes ago are
-- rolled up; the rest is read from provisioning_attempts through its BRIN time index.
CREATE TABLE console_hourly_decisions (
    hour     timestamptz NOT NULL,
    channel  text NOT NULL,
    network  text NOT NULL,
    flow     text NOT NULL,
    attempts bigint NOT NULL,
    PRIMARY KEY (hour, channel, network, flow)
);

-- One row per hour, rule, mode, outcome, final flow and whether the hit decided the flow
-- (a live hit whose outcome is the flow and that no other live hit of that outcome joined).
CREATE TABLE console_hourly_rule_hits (
    hour            timestamptz NOT NULL,
    rule_id         text NOT NULL,
    mode            text NOT NULL,
    outcome         text NOT NULL,
    flow            text NOT NULL,
    decisive        boolean NOT NULL,
    ruleset_version text NOT NULL,
    hits            bigint NOT NULL,
    PRIMARY KEY (hour, rule_id, mode, outcome, flow, decisive, ruleset_version)
);

-- Every hour in [rolled_from, rolled_until) is in the two tables above. New hours are appended
-- at rolled_until first; older history, back to history_from (the oldest attempt's hour when the
-- roll-up began), is filled backwards after, so recent periods are fast soonest. Deleting this
-- row (and the rows above) makes the next page views rebuild them, e.g. after importing
-- back-dated attempts.
CREATE TABLE console_rollup_state (
    singleton    boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    history_from timestamptz NOT NULL,
    rolled_from  timestamptz NOT NULL,
    rolled_until timestamptz NOT NULL,
    CHECK (history_from <= rolled_from AND rolled_from <= rolled_until)
);

-- The Attempts page searches by a card's last four digits; cards are written by operators,
-- never on the provisioning path.
CREATE INDEX cards_last_four ON cards (last_four);
