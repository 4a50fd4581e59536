"""`python3 scripts/lib/failover up|run|down WORK`; see __init__.py."""

import os
import secrets
import time
import shlex
import sys

if not __package__:
    # Run as a folder: its parent on the path, so that this package and reliability import by name.
    sys.path[0] = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

from failover.cluster import Cluster  # noqa: E402


def up(work, bin_dir):
    cluster = Cluster(work)
    passwords = {name: secrets.token_hex(16) for name in ("superuser", "replication", "rewind", "restapi", "issuerd")}
    cluster.create(passwords, bin_dir)
    cluster.start_etcd()
    # The first node bootstraps the cluster alone, so that it is the first leader; the second
    # then clones it (pg_basebackup) and becomes its synchronous standby.
    cluster.start_node("pg1")
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline and cluster.leader() != "pg1":
        time.sleep(0.3)
    if cluster.leader() != "pg1":
        raise SystemExit("pg1 did not become the leader within 90 s (see pg1/patroni.log)")
    cluster.start_node("pg2")
    if not cluster.wait_healthy(120):
        raise SystemExit("pg2 did not become a streaming synchronous standby within 120 s (see pg2/patroni.log)")
    # The role and database issuerd uses, as deploy/README.md creates them.
    password = passwords["issuerd"]
    if cluster.psql(f"CREATE ROLE issuerd LOGIN PASSWORD '{password}'") is None or \
            cluster.psql("CREATE DATABASE issuerd OWNER issuerd") is None:
        raise SystemExit("could not create the issuerd role and database")
    superuser = cluster.conninfo("postgres", passwords["superuser"], "issuerd")
    print(f"export ISSUERD_DATABASE_URL={shlex.quote(cluster.conninfo('issuerd', password, 'issuerd'))}")
    print(f"export RELIABILITY_PSQL_TARGET={shlex.quote(superuser)}")


def main():
    command, work = sys.argv[1], sys.argv[2]
    if command == "up":
        up(work, sys.argv[3])
    elif command == "down":
        Cluster(work).stop()
    elif command == "run":
        from failover.drive import main as drive
        sys.exit(drive(work))
    else:
        raise SystemExit(f"unknown command {command} (up, run, down)")


if __name__ == "__main__":
    main()
