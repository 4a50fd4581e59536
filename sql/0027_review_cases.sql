-- The review queue: orange decisions, and yellow ones whose step-up was not completed in time
-- (ISSUERD_REVIEW_STEP_UP_WAIT), one case per attempt, queued to the owners of the rules that
-- decided it. A case is held by one analyst at a time: taking it is one conditional UPDATE, so
-- two instances cannot both hand it out.
CREATE TABLE IF NOT EXISTS review_cases (
    case_id      bigserial PRIMARY KEY,
    attempt_id   uuid NOT NULL UNIQUE REFERENCES provisioning_attempts (attempt_id),
    reason       text NOT NULL CHECK (reason IN ('orange', 'step_up_not_completed')),
    owners       text[] NOT NULL,
    status       text NOT NULL DEFAULT 'open' CHECK (status IN ('open', 'closed')),
    opened_at    timestamptz NOT NULL,
    assignee     text,
    assigned_at  timestamptz,
    closed_at    timestamptz,
    closed_by    text,
    outcome      text CHECK (outcome IN ('fraud', 'legitimate')),
    note         text
);
CREATE INDEX IF NOT EXISTS review_cases_open ON review_cases (opened_at) WHERE status = 'open';
CREATE INDEX IF NOT EXISTS review_cases_owners ON review_cases USING gin (owners);

-- How far each kind of decision has been looked at for new cases (one row).
CREATE TABLE IF NOT EXISTS review_queue_state (
    id              boolean PRIMARY KEY DEFAULT true CHECK (id),
    orange_until    timestamptz NOT NULL,
    yellow_until    timestamptz NOT NULL
);
INSERT INTO review_queue_state (orange_until, yellow_until)
VALUES (now() - interval '30 days', now() - interval '30 days') ON CONFLICT DO NOTHING;
