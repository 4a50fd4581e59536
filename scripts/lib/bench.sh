# The setup scripts/bench-import and scripts/bench-reissue share: a release build (unless one is
# given), a private PostgreSQL with durable commits, a migrated template database, fresh copies
# of it, and a timed command with its peak memory and its backend's CPU. Source it after
# common.sh and postgres.sh; do not run it.
# shellcheck shell=bash

# bench_binary BIN: sets $bin to BIN, or to a release build of this checkout when BIN is empty.
bench_binary() {
    bin="$1"
    if [ -z "$bin" ]; then
        say "building issuerd (release)"
        swift build -c release --product issuerd >&2
        bin="$ISSUERD_ROOT/.build/release/issuerd"
    fi
    [ -x "$bin" ] || die "$bin is not an executable"
}

# bench_start NAME PORT: $work (.local/NAME-PID, removed on exit with the cluster and every pid
# in $bench_pids), PostgreSQL on PORT with durable commits, issuerd_template migrated by $bin,
# ISSUERD_MASTER_KEY, $postmaster (for the backends' CPU). $bench_pg_options adds server options.
bench_pids=()
bench_start() {
    work="$ISSUERD_ROOT/.local/$1-$$"
    mkdir -p "$work"
    chmod 755 "$work"
    trap bench_cleanup EXIT
    say "starting PostgreSQL (durable commits) in $work/pg"
    export ISSUERD_PG_OPTIONS="-c max_wal_size=8GB -c checkpoint_timeout=30min${bench_pg_options:+ $bench_pg_options}"
    pg_start "$work/pg" "$2"
    postmaster=$(head -n 1 "$work/pg/data/postmaster.pid")
    pg_ensure_database issuerd_template
    export ISSUERD_MASTER_KEY="$(openssl rand -base64 32)"
    ISSUERD_DATABASE_URL="host=$PGHOST port=$PGPORT user=postgres dbname=issuerd_template" "$bin" migrate >/dev/null
    psql -X -q -d postgres -tAc "SHOW fsync; SHOW synchronous_commit" | tr '\n' ' ' \
        | sed 's/^/fsync, synchronous_commit: /; s/$/\n/' >&2
}
bench_cleanup() {
    if [ -n "${poller:-}" ]; then kill "$poller" 2>/dev/null || true; fi
    local pid
    for pid in "${bench_pids[@]}"; do
        kill -TERM "$pid" 2>/dev/null && wait "$pid" 2>/dev/null || true
    done
    pg_stop "$work/pg"
    rm -rf "$work"
}

# fresh_database NAME: a new database with the schema, and ISSUERD_DATABASE_URL pointing at it.
fresh_database() {
    psql -X -q -d postgres -c "CREATE DATABASE $1 TEMPLATE issuerd_template" >/dev/null
    export ISSUERD_DATABASE_URL="host=$PGHOST port=$PGPORT user=postgres dbname=$1"
    database="$1"
}

# The CPU seconds of this cluster's client backends while a step runs: /proc of every child of
# the postmaster whose title is a client connection ("postgres: USER DB …"), sampled every
# 0.1 s, the last sample of each kept (a backend's last 0.1 s before it exits is missed).
start_poller() {  # OUT
    python3 "$ISSUERD_ROOT/scripts/lib/bench_import.py" backend-cpu "$postmaster" "$1" &
    poller=$!
}
stop_poller() {  # OUT: sets $cpu to the CPU seconds (not in a subshell: it waits for its child)
    kill "$poller"
    wait "$poller" 2>/dev/null || true
    poller=""
    cpu=$(cat "$1" 2>/dev/null || echo 0)  # 0: a step so short the sampler was stopped before it began
}

# run_timed LOG COMMAND...: runs COMMAND (stdout to LOG.out, stderr to LOG.err) after a
# checkpoint; sets $seconds (wall), $status, $client_cpu, $backend_cpu and $rss (peak, MiB).
run_timed() {
    local log="$1" start end
    shift
    psql -X -q -d postgres -c "CHECKPOINT" >/dev/null
    start_poller "$log.backend"
    start=$(date +%s.%N)
    set +e
    /usr/bin/time -f "%U %S %M" -o "$log.time" "$@" >"$log.out" 2>"$log.err"
    status=$?
    set -e
    end=$(date +%s.%N)
    stop_poller "$log.backend"
    backend_cpu=$cpu
    seconds=$(python3 -c "print(f'{$end - $start:.2f}')")
    client_cpu=$(awk 'END { printf "%.2f", $1 + $2 }' "$log.time")
    rss=$(awk 'END { printf "%d", $3 / 1024 }' "$log.time")
}
count() { psql -X -q -d "$database" -tAc "SELECT count(*) FROM $1"; }
per_card() { python3 -c "print(f'{$1 * 1e6 / $cards:.1f}')"; }  # CPU seconds -> µs per card

# run_import BIN FILE LOG: run_timed of one `cards import` (with --workers $workers when set).
run_import() {
    run_timed "$3" "$1" cards import --progress-every 100000 ${workers:+--workers "$workers"} "$2"
}

# import_once LABEL BIN NAME FILE: FILE's $cards cards imported into a fresh database NAME, timed;
# prints one line and sets $rate (cards/s) besides run_timed's figures.
import_once() {
    fresh_database "$3"
    run_import "$2" "$4" "$work/$3"
    [ "$status" -eq 0 ] || { cat "$work/$3.err" >&2; die "the import ($1) failed"; }
    [ "$(count cards)" -eq "$cards" ] || die "expected $cards cards, found $(count cards)"
    rate=$(python3 -c "print(round($cards / $seconds))")
    echo "$1: $cards cards in $seconds s = $rate cards/s; CPU per card: issuerd $(per_card "$client_cpu") µs, its backend $(per_card "$backend_cpu") µs; peak RSS $rss MiB ($(tail -n 1 "$work/$3.out"))"
}
