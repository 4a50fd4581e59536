-- The audit chain is sealed after the fact (docs/architecture.md, "Audit log"): an entry is
-- inserted unchained in its caller's transaction (no lock, `seq`, `prev_hash` and `hash` NULL,
-- `id` in order of arrival), and a sealer chains committed entries in one short transaction
-- under the audit advisory lock. So audited writes no longer commit one at a time.
-- Rows chained before this migration keep their sequence numbers and hashes unchanged.
ALTER TABLE audit_log ADD COLUMN id bigint GENERATED ALWAYS AS IDENTITY;
ALTER TABLE audit_log DROP CONSTRAINT audit_log_pkey;
ALTER TABLE audit_log ADD PRIMARY KEY (id);
ALTER TABLE audit_log
    ALTER COLUMN seq DROP NOT NULL,
    ALTER COLUMN prev_hash DROP NOT NULL,
    ALTER COLUMN hash DROP NOT NULL;
ALTER TABLE audit_log ADD CONSTRAINT audit_log_seq_key UNIQUE (seq);
-- Sealed means all three chain columns, never part of them.
ALTER TABLE audit_log ADD CONSTRAINT audit_log_sealed_whole
    CHECK ((seq IS NULL) = (prev_hash IS NULL) AND (seq IS NULL) = (hash IS NULL));
-- What the sealer reads: the unsealed entries in order of arrival.
CREATE INDEX audit_log_unsealed ON audit_log (id) WHERE seq IS NULL;

-- Still append-only: the one change allowed is sealing, once, an unsealed entry (setting its
-- chain columns and nothing else). A sealed entry can neither change nor go; an unsealed one
-- cannot be edited or deleted. The chain catches whoever bypasses the trigger.
CREATE OR REPLACE FUNCTION audit_log_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'UPDATE' AND OLD.seq IS NULL AND NEW.seq IS NOT NULL
        AND NEW.id = OLD.id AND NEW.at_ms = OLD.at_ms AND NEW.actor = OLD.actor AND NEW.action = OLD.action
        AND NEW.subject = OLD.subject AND NEW.details = OLD.details THEN
        RETURN NEW;
    END IF;
    RAISE EXCEPTION 'audit_log is append-only' USING ERRCODE = 'insufficient_privilege';
END;
$$;
