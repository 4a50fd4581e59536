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
