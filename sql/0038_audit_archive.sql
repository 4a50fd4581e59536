-- Audit entries past retention may leave the table, but only as a verified archive segment:
-- `issuerd history archive` writes the segment, reads it back, then in one transaction records
-- an anchor (the segment's last sequence number and hash) and deletes the entries the anchor
-- covers. The first entry left links to the anchor's hash, so the chain stays checkable from
-- the anchor (and from its start with the segments, `issuerd audit verify --archive DIR`).
CREATE TABLE audit_log_archives (
    through_seq bigint PRIMARY KEY,
    first_seq bigint NOT NULL,
    through_hash bytea NOT NULL CHECK (length(through_hash) = 32),
    file text NOT NULL,
    sha256 text NOT NULL CHECK (sha256 ~ '^[0-9a-f]{64}$'),
    archived_at timestamptz NOT NULL DEFAULT now(),
    CHECK (first_seq BETWEEN 1 AND through_seq)
);

-- Anchors are written once and never changed or removed, by anyone.
CREATE FUNCTION audit_log_archives_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'audit_log_archives is append-only' USING ERRCODE = 'insufficient_privilege';
END;
$$;
CREATE TRIGGER audit_log_archives_no_update BEFORE UPDATE OR DELETE ON audit_log_archives
    FOR EACH ROW EXECUTE FUNCTION audit_log_archives_append_only();

-- Still append-only, with one more exception: a sealed entry an anchor covers may be deleted
-- (the service role holds no DELETE on the table, so only the owner's archive run does).
CREATE OR REPLACE FUNCTION audit_log_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'UPDATE' AND OLD.seq IS NULL AND NEW.seq IS NOT NULL
        AND NEW.id = OLD.id AND NEW.at_ms = OLD.at_ms AND NEW.actor = OLD.actor AND NEW.action = OLD.action
        AND NEW.subject = OLD.subject AND NEW.details = OLD.details THEN
        RETURN NEW;
    END IF;
    IF TG_OP = 'DELETE' AND OLD.seq IS NOT NULL
        AND OLD.seq <= (SELECT max(through_seq) FROM audit_log_archives) THEN
        RETURN OLD;
    END IF;
    RAISE EXCEPTION 'audit_log is append-only' USING ERRCODE = 'insufficient_privilege';
END;
$$;

-- The service role reads anchors (its sealer continues the chain from one when every sealed entry
-- was archived) and never writes them: take back what default privileges gave any other role.
DO $$
DECLARE
    grantee_name name;
BEGIN
    FOR grantee_name IN
        SELECT DISTINCT r.rolname FROM pg_class c, aclexplode(c.relacl) a JOIN pg_roles r ON r.oid = a.grantee
        WHERE c.oid = 'audit_log_archives'::regclass AND a.grantee <> c.relowner
    LOOP
        EXECUTE format('REVOKE INSERT, UPDATE, DELETE, TRUNCATE ON audit_log_archives FROM %I', grantee_name);
    END LOOP;
END;
$$;
