"""Phase split: only instance A's path to PostgreSQL dropped under load (root, as the partition),
while B goes on. The outage's figures prefixed split_, and split_orphans_at_cut,
split_orphans_in_transaction, split_orphans_ended_s, split_other_decided, split_other_slowest_s.
"""

import subprocess
import time

from .harness import ENV, OUTAGE_SECONDS, PARTITION_BOUND_S, ProvisioningLoad, figures, nft, promise, promise_database_figures, psql, say


SPLIT_TABLE = "issuerd_reliability_split"
SPLIT_ADDRESS = "127.0.0.2"  # instance A's way to PostgreSQL in the split scenario (B keeps 127.0.0.1)
# How the server tells A's sessions apart: their client address is 127.0.0.1 either way (the
# kernel's source address for every loopback destination).
SPLIT_APPLICATION = "reliability-A"
# The server ends an orphaned session after tcp_user_timeout (at least 10 s; docs/reliability.md,
# "A partition of one instance only"), 13.4 s measured with an answer in flight: B's requests for
# a customer whose lock such a session held wait that long, plus their own work and slack.
SPLIT_OTHER_BOUND_S = 18.0
SPLIT_ORPHANS_BOUND_S = 15.0  # the server's tcp_user_timeout (10 s) and its keepalive rounds, plus slack
# Longer than that: healing the path earlier ends the orphans at once (A's kernel answers their
# next probe with a reset), which would measure the heal instead of the server's timeout.
SPLIT_CUT_S = max(OUTAGE_SECONDS, SPLIT_ORPHANS_BOUND_S + 1)



def database_urls():
    """Instance A reaches the server through another loopback address, so that the split cuts its path alone."""
    database_a = ENV["ISSUERD_DATABASE_URL"].replace("host=127.0.0.1", f"host={SPLIT_ADDRESS}") + f" application_name={SPLIT_APPLICATION}"
    assert database_a != ENV["ISSUERD_DATABASE_URL"], "the split scenario needs the database over TCP on 127.0.0.1"
    return {"A": database_a}


def run(instances, receiver):
    """Only instance A's path to PostgreSQL silently dropped (its address, both directions), while
    both provision for the same customers. A must answer 503 within PARTITION_BOUND_S, as in the
    partition; B must go on deciding, and wait for a lock A's orphaned sessions held only until
    the server ends those sessions; nothing may be lost or stored twice."""
    cut_instance, other = instances[0], instances[1]
    port = ENV["PGPORT"]
    say(f"== one instance cut off: {cut_instance.name}'s path to PostgreSQL ({SPLIT_ADDRESS}:{port}) silently dropped "
        f"for {SPLIT_CUT_S:.0f} s, {other.name} still connected")
    load = ProvisioningLoad(instances, "split")
    load.timeout = SPLIT_OTHER_BOUND_S + 5
    orphans = {}

    def sessions_of_cut_instance():
        rows = psql(f"SELECT pid, state, backend_xid IS NOT NULL FROM pg_stat_activity WHERE application_name = '{SPLIT_APPLICATION}'")
        return [row.split("|") for row in rows]

    def fault():
        nft("add", "table", "inet", SPLIT_TABLE)
        nft("add", "chain", "inet", SPLIT_TABLE, "input", "{ type filter hook input priority 0; policy accept; }")
        nft("add", "rule", "inet", SPLIT_TABLE, "input", "ip", "daddr", SPLIT_ADDRESS, "tcp", "dport", port, "drop")
        nft("add", "rule", "inet", SPLIT_TABLE, "input", "ip", "saddr", SPLIT_ADDRESS, "tcp", "sport", port, "drop")
        cut_at = load.now()
        at_cut = sessions_of_cut_instance()
        orphans["at_cut"] = len(at_cut)
        orphans["in_transaction"] = sum(1 for _, state, writing in at_cut if state != "idle" or writing == "t")
        # The server's side: when it ended the last session of the cut instance.
        orphans["ended_s"] = None
        while load.now() - cut_at < SPLIT_CUT_S:
            if orphans["ended_s"] is None and not sessions_of_cut_instance():
                orphans["ended_s"] = load.now() - cut_at
            time.sleep(0.2)
        nft("delete", "table", "inet", SPLIT_TABLE)
        healed_at = load.now()
        say(f"  path restored after {healed_at - cut_at:.1f} s")
        orphans["cut_at"] = cut_at
        return cut_at + PARTITION_BOUND_S, healed_at, healed_at

    try:
        window = load.run(fault, settle=8)
    finally:
        subprocess.run(["nft", "delete", "table", "inet", SPLIT_TABLE], capture_output=True)
    cut_at = orphans["cut_at"]
    healed_at = window[1]
    # B while A was cut off: how many it decided, and its slowest answer.
    other_during = [r for r in load.records if r["port"] == other.port and r["t"] - r["elapsed"] >= cut_at and r["t"] <= healed_at]
    other_decided = sum(1 for r in other_during if r["status"] in (200, 403))
    other_slowest = max([r["elapsed"] for r in other_during] or [0.0])
    ended = orphans["ended_s"]
    say(f"  {cut_instance.name}'s sessions at the cut: {orphans['at_cut']}, {orphans['in_transaction']} of them in a transaction; "
        f"the server ended the last one after " + (f"{ended:.1f} s" if ended is not None else "more than the cut's duration"))
    say(f"  {other.name} while {cut_instance.name} was cut off: {len(other_during)} requests, {other_decided} decided, "
        f"slowest {other_slowest:.2f} s")
    names = {instance.port: instance.name for instance in instances}
    for r in sorted(load.records, key=lambda r: -r["elapsed"])[:3]:
        say(f"  slow: {names[r['port']]} answered {r['status']} after {r['elapsed']:.2f} s, sent at cut {r['t'] - r['elapsed'] - cut_at:+.2f} s")
    found = load.check(*window, PARTITION_BOUND_S, f"{cut_instance.name} cut off", cut_ports=[cut_instance.port],
                       slow_after_by_port={other.port: SPLIT_OTHER_BOUND_S})
    figures.update({"split_orphans_at_cut": orphans["at_cut"], "split_orphans_in_transaction": orphans["in_transaction"],
                    "split_orphans_ended_s": round(ended, 1) if ended is not None else "never",
                    "split_other_decided": other_decided, "split_other_slowest_s": round(other_slowest, 2)})
    promise("split_orphans_ended_s", ended is not None and ended <= SPLIT_ORPHANS_BOUND_S,
            f"the server still had {cut_instance.name}'s sessions {SPLIT_CUT_S:.0f} s after the cut" if ended is None
            else f"the server ended {cut_instance.name}'s sessions only after {ended:.1f} s")
    promise("split_other_decided", other_decided > 0, f"{other.name} decided nothing while {cut_instance.name} was cut off")
    promise_database_figures("split_", found, PARTITION_BOUND_S)
