"""scripts/restore-drill's driver: a base backup and the WAL archive taken while load runs, a
point-in-time restore to a moment inside the load, issuerd started on the copy, its audit chain
verified, and every attempt acknowledged before that moment looked for. Its last line:
restore-drill: acked_before_target=N missing=N audit=intact|broken restore_s=X (and more figures).
"""

import json
import os
import subprocess
import time
from datetime import datetime, timezone

from .load import Endpoint, Instance, Load, free_port, say

ENV = os.environ
WORK, BIN = ENV["DRILL_WORK"], ENV["DRILL_BIN"]
PG_BIN, ARCHIVE = ENV["DRILL_PG_BIN"], ENV["DRILL_ARCHIVE"]
AS_OWNER = ENV.get("DRILL_AS_OWNER", "").split()
LOAD_SECONDS = float(ENV.get("DRILL_LOAD_SECONDS", "6"))
RESTORE = os.path.join(WORK, "restore")


def run(command, **kwargs):
    out = subprocess.run(command, capture_output=True, text=True, **kwargs)
    if out.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed ({out.returncode}): {out.stderr.strip()[-600:]}")
    return out.stdout


def psql(host, port, sql):
    return run(["psql", "-X", "-q", "-tA", "-h", host, "-p", str(port), "-U", "postgres", "-d", "issuerd", "-c", sql]).splitlines()


def main():
    source_host, source_port = ENV["PGHOST"], ENV["PGPORT"]
    cards = json.load(open(os.path.join(WORK, "cards.json")))
    instance = Instance("source", BIN, free_port(), WORK)
    instance.start()
    load = Load(Endpoint(instance.port), cards, ENV["ISSUERD_TSP_HMAC_SECRET"], "rd")
    say(f"restore drill: load on the source for {LOAD_SECONDS:g} s; base backup after a third, recovery target after two thirds")
    load.start()
    time.sleep(LOAD_SECONDS / 3)
    base = os.path.join(RESTORE, "base")
    backup_started = time.monotonic()
    run([*AS_OWNER, f"{PG_BIN}/pg_basebackup", "-h", source_host, "-p", source_port, "-U", "postgres",
         "-D", base, "-X", "stream", "-c", "fast", "--no-sync"])
    backup_s = time.monotonic() - backup_started
    time.sleep(LOAD_SECONDS / 3)
    target = time.time()
    time.sleep(LOAD_SECONDS / 3)
    records = load.stop()
    instance.stop()
    # The segment holding the target must reach the archive before the copy can replay past it.
    segment = psql(source_host, source_port, "SELECT pg_walfile_name(pg_switch_wal())")[0]
    deadline = time.monotonic() + 60
    while not os.path.exists(os.path.join(ARCHIVE, segment)):
        if time.monotonic() > deadline:
            raise RuntimeError(f"WAL segment {segment} not archived within 60 s (archive_command failing? see the server log)")
        time.sleep(0.1)

    # The restore, timed from here to issuerd ready on the copy: the base backup copied into place,
    # recovery from the archive up to the target, promotion, issuerd started.
    target_text = datetime.fromtimestamp(target, timezone.utc).isoformat(sep=" ")
    say(f"restore drill: restoring to {target_text} (base backup took {backup_s:.1f} s)")
    restore_started = time.monotonic()
    data = os.path.join(RESTORE, "data")
    run([*AS_OWNER, "cp", "-a", base, data])
    with open(os.path.join(data, "postgresql.auto.conf"), "a") as conf:
        conf.write(f"\n# restore drill\nrestore_command = 'cp {ARCHIVE}/%f %p'\nrecovery_target_time = '{target_text}'\n"
                   "recovery_target_action = 'promote'\narchive_mode = off\n")
    run([*AS_OWNER, "touch", os.path.join(data, "recovery.signal")])
    sock, port = os.path.join(RESTORE, "sock"), free_port()
    run([*AS_OWNER, "mkdir", "-p", sock])
    run([*AS_OWNER, f"{PG_BIN}/pg_ctl", "-D", data, "-l", os.path.join(RESTORE, "server.log"), "-w", "-t", "120",
         "-o", f"-k {sock} -p {port} -c listen_addresses='' -c max_connections=200", "start"])
    deadline = time.monotonic() + 120
    while psql(sock, port, "SELECT pg_is_in_recovery()")[0] != "f":
        if time.monotonic() > deadline:
            raise RuntimeError("the copy did not finish recovery within 120 s")
        time.sleep(0.1)
    restored_url = f"host={sock} port={port} user={ENV['DRILL_SERVICE_ROLE']} dbname=issuerd"
    copy = Instance("restored", BIN, free_port(), WORK, {"ISSUERD_DATABASE_URL": restored_url})
    copy.start()
    restore_s = time.monotonic() - restore_started

    verify = subprocess.run([BIN, "audit", "verify"], env={**ENV, "ISSUERD_DATABASE_URL": restored_url},
                            capture_output=True, text=True)
    audit = "intact" if verify.returncode == 0 and "audit chain intact" in verify.stdout else "broken"
    say(f"restore drill: audit verify on the copy: {verify.stdout.strip() or verify.stderr.strip()}")
    copy.stop()

    present = set(psql(sock, port, "SELECT token_reference FROM provisioning_attempts WHERE token_reference LIKE 'rd-%'"))
    acked = [r for r in records if r["acked"] is not None]
    before = [r for r in acked if r["acked"] < target]
    missing = [r["ref"] for r in before if r["ref"] not in present]
    after = [r["ref"] for r in records if r["sent"] > target and r["ref"] in present]
    errors = sum(1 for r in records if r["status"] != 200)
    audit_entries = int(psql(sock, port, "SELECT count(*) FROM audit_log")[0])
    if missing:
        say(f"  missing after restore (acknowledged before the target): {', '.join(missing[:10])}")
    if after:
        say(f"  present after restore though sent after the target: {', '.join(after[:10])}")
    ok = bool(before) and not missing and not after and audit == "intact" and errors == 0
    say(f"restore-drill: acked_before_target={len(before)} missing={len(missing)} audit={audit} "
        f"restore_s={restore_s:.1f} requests={len(records)} acked={len(acked)} errors={errors} "
        f"after_target_present={len(after)} client_retries={sum(1 for r in records if r['retried'])} audit_entries={audit_entries} base_backup_s={backup_s:.1f}")
    return 0 if ok else 1
