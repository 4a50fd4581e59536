-- Rule performance's step-ups per hour, rule and mode, rolled up like console_hourly_rule_hits so
-- a month's figures do not read every yellow attempt: the hits that decided a yellow attempt whose
-- decision created a token (started), of those the tokens activated (completed), and each
-- completed one's seconds from the decision to the activation (for the median). An hour is rolled
-- up only once its step-ups have settled (ISSUERD_REVIEW_STEP_UP_WAIT after it ended: a step-up
-- not completed by then is abandoned), so its figures never change afterwards.
CREATE TABLE IF NOT EXISTS console_hourly_stepups (
    hour      timestamptz NOT NULL,
    rule_id   text NOT NULL,
    mode      text NOT NULL,
    started   bigint NOT NULL,
    completed bigint NOT NULL,
    seconds   float8[] NOT NULL,
    PRIMARY KEY (hour, rule_id, mode)
);

-- Every hour in [rolled_from, rolled_until) is in console_hourly_stepups (as console_rollup_state
-- says for the other roll-up). Deleting this row and those rows makes the next reads rebuild them.
CREATE TABLE IF NOT EXISTS console_stepup_rollup_state (
    singleton    boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    history_from timestamptz NOT NULL,
    rolled_from  timestamptz NOT NULL,
    rolled_until timestamptz NOT NULL,
    CHECK (history_from <= rolled_from AND rolled_from <= rolled_until)
);
