# Starts and stops a private PostgreSQL cluster in a folder, as root or as a normal user.
# shellcheck shell=bash
#
# PostgreSQL refuses to run as root, so as root every path the server writes is owned by the
# `postgres` user and the binaries run through runuser. The server listens on a Unix socket
# only (listen_addresses=''), so nothing else on the machine can reach it.

pg_bindir() {
    local dir
    dir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
    [ -n "$dir" ] || die "PostgreSQL server binaries not found under /usr/lib/postgresql"
    echo "$dir"
}

pg_as_owner() {
    if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

# pg_start DIR PORT: initialises DIR/data on first use, starts the server, exports PGHOST/PGPORT.
pg_start() {
    local dir="$1" port="$2" bin
    bin=$(pg_bindir)
    mkdir -p "$dir/sock"
    dir=$(cd "$dir" && pwd)  # absolute: the parent walk below and the socket path need it
    if [ "$(id -u)" -eq 0 ]; then
        # The postgres user must be able to reach the folder through every parent.
        local parent="$dir"
        while [ "$parent" != "/" ]; do parent=$(dirname "$parent"); chmod o+x "$parent" 2>/dev/null || true; done
        chown -R postgres:postgres "$dir"
    fi
    if [ ! -f "$dir/data/PG_VERSION" ]; then
        mkdir -p "$dir/data"
        [ "$(id -u)" -eq 0 ] && chown postgres:postgres "$dir/data"
        chmod 700 "$dir/data"
        pg_as_owner "$bin/initdb" -D "$dir/data" -U postgres --auth=trust -E UTF8 --no-locale >"$dir/initdb.log" 2>&1 \
            || { cat "$dir/initdb.log" >&2; die "initdb failed"; }
    fi
    if ! pg_as_owner "$bin/pg_ctl" -D "$dir/data" status >/dev/null 2>&1; then
        pg_as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 30 \
            -o "-k $dir/sock -p $port -c listen_addresses='' -c max_connections=200 -c fsync=${ISSUERD_PG_FSYNC:-on} ${ISSUERD_PG_OPTIONS:-}" start >/dev/null \
            || { tail -n 20 "$dir/server.log" >&2; die "PostgreSQL did not start (log: $dir/server.log)"; }
    fi
    export PGHOST="$dir/sock" PGPORT="$port" PGUSER=postgres
}

# pg_stop DIR: fast shutdown (rolls back open transactions, keeps committed data).
pg_stop() {
    local dir="$1" bin
    bin=$(pg_bindir)
    [ -f "$dir/data/PG_VERSION" ] || return 0
    dir=$(cd "$dir" && pwd)
    pg_as_owner "$bin/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null 2>&1 || true
}

# pg_ensure_database NAME: creates the database if it does not exist.
pg_ensure_database() {
    local name="$1"
    if ! psql -X -q -d postgres -tAc "SELECT 1 FROM pg_database WHERE datname = '$name'" | grep -q 1; then
        psql -X -q -d postgres -c "CREATE DATABASE \"$name\"" >/dev/null || die "could not create database $name"
    fi
}

# pg_ensure_roles DATABASE OWNER SERVICE: the two roles of docs/configuration.md ("Database
# roles"), both logging in over the socket. OWNER owns DATABASE and everything in its schema
# public (taken over from a setup that predates the two roles, where the superuser owned it);
# SERVICE exists and owns nothing there. `issuerd migrate` then `issuerd db grant --role SERVICE`,
# as OWNER, complete the setup.
pg_ensure_roles() {
    local db="$1" owner="$2" service="$3"
    psql -X -q -v ON_ERROR_STOP=1 -d postgres >/dev/null <<SQL || die "could not create the roles $owner and $service"
DO \$\$ BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '$owner') THEN CREATE ROLE "$owner" LOGIN; END IF;
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '$service') THEN CREATE ROLE "$service" LOGIN; END IF;
END \$\$;
SQL
    pg_ensure_database "$db"
    psql -X -q -v ON_ERROR_STOP=1 -d "$db" >/dev/null <<SQL || die "could not give $db to $owner"
ALTER DATABASE "$db" OWNER TO "$owner";
DO \$\$ DECLARE o record; BEGIN
    -- Tables and views (their sequences follow), then the functions (the audit trigger's).
    FOR o IN SELECT format('ALTER %s %I OWNER TO %I', CASE c.relkind WHEN 'v' THEN 'VIEW' WHEN 'm' THEN 'MATERIALIZED VIEW' ELSE 'TABLE' END, c.relname, '$owner') AS sql
             FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
             WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p', 'v', 'm') AND c.relowner <> '$owner'::regrole
               AND NOT c.relispartition
    LOOP EXECUTE o.sql; END LOOP;
    FOR o IN SELECT format('ALTER FUNCTION %s OWNER TO %I', p.oid::regprocedure, '$owner') AS sql
             FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
             WHERE n.nspname = 'public' AND p.proowner <> '$owner'::regrole
    LOOP EXECUTE o.sql; END LOOP;
END \$\$;
SQL
}
