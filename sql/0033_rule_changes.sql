-- Rule changes under maker-checker (ISSUERD_RULES_APPROVAL=required): each version of the rules
-- directory is proposed with its files, its rule-level diff and its example results, then
-- approved or rejected by a second person. Every instance serves the newest approved change
-- (highest seq), compiled from the files stored here, so an approval reaches all of them
-- whatever their own directories hold.
CREATE TABLE IF NOT EXISTS rule_changes (
    seq               bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
    change_id         uuid PRIMARY KEY,
    version           text NOT NULL,
    previous_version  text,
    status            text NOT NULL
                      CHECK (status IN ('proposed', 'approved', 'rejected', 'superseded', 'failed')),
    proposed_by       text NOT NULL,
    proposed_at       timestamptz NOT NULL,
    decided_by        text,
    decided_at        timestamptz,
    note              text,
    git_commit        text,
    files             jsonb NOT NULL,
    diff              jsonb NOT NULL,
    tests             jsonb NOT NULL,
    -- The ordering of approvals: the serving version is the approved change with the highest.
    approved_seq      bigint UNIQUE
);
CREATE SEQUENCE IF NOT EXISTS rule_changes_approved_seq;
-- One open proposal per version, so instances watching the same directory propose it once.
CREATE UNIQUE INDEX IF NOT EXISTS rule_changes_one_proposal ON rule_changes (version) WHERE status = 'proposed';
CREATE INDEX IF NOT EXISTS rule_changes_recent ON rule_changes (seq DESC);
