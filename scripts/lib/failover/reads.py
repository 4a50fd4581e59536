"""The analysts' reads on the Patroni standby, after scripts/failover's faults.

A third instance reads on the cluster's standby (`ISSUERD_READ_DATABASE_URL`, the same multi-host
string with target_session_attrs=standby, as deploy/README.md "Analysts on the standby" sets it).
With Patroni in maintenance mode (it would resume a paused replay) and the standby's replay paused, an attempt written on the leader (as a decision stores it) is
missing from that instance's attempts page, its CSV export and its backtest, while the leader has
it and `GET /v1/admin/reads` reports the standby paused and behind; once replay resumes they have
it, and the lag is back to 0. The instance's reads are sessions of the standby
(pg_stat_activity). Promises: reads_routed, reads_lag, reads_caught_up.
"""

import json
import time
import uuid

from reliability import harness
from reliability.harness import ADMIN_KEY, Instance, call, figures, free_port, promise, psql, say

# An hour of history nothing else writes in.
SINCE, UNTIL = "2020-01-01T10:00:00Z", "2020-01-01T11:00:00Z"
ANALYST = {"Authorization": f"Bearer {ADMIN_KEY}"}
# A candidate for the backtest (its report's count is what is compared).
CANDIDATE = ('rule t.reads\n  title   "failover reads"\n  outcome yellow\n  reason  T_READS\n  owner   tests\n'
             '  when    wallet.device_score <= 2\nend\n')


def standby_of(cluster):
    members = cluster.members()
    return next((name for name, m in members.items() if m.get("role") in ("sync_standby", "replica")
                 and m.get("state") in ("running", "streaming")), None)


def on(cluster, node, sql):
    rows = cluster.psql(sql, dbname="issuerd", node=node)
    if rows is None:
        raise RuntimeError(f"psql on {node} failed: {sql}")
    return rows


def wait_for(condition, seconds=60):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.2)
    return False


def maintenance(cluster, leader, standby, on):
    """Patroni's maintenance mode (PATCH /config {"pause": ...}), waited for on both nodes."""
    status, body = cluster.rest(cluster.node(leader), "PATCH", "/config", {"pause": on})
    if status != 200:
        raise RuntimeError(f"Patroni refused pause={on}: {status} {body}")
    for name in (leader, standby):
        def taken():
            body = cluster.rest(cluster.node(name), "GET", "/patroni")[1]
            return isinstance(body, dict) and bool(body.get("pause", False)) == on
        if not wait_for(taken, 30):
            raise RuntimeError(f"{name} did not take pause={on} within 30 s")


def view(port):
    """What the instance's analyst pages say about the hour: listed ids, exported ids, backtested count."""
    page = call(port, "GET", f"/v1/admin/attempts?since={SINCE}&until={UNTIL}&limit=100", headers=ANALYST)
    csv = call(port, "GET", f"/v1/admin/attempts?since={SINCE}&until={UNTIL}&format=csv", headers=ANALYST)
    backtest = call(port, "POST", "/v1/admin/rules/backtest",
                    json.dumps({"rules": CANDIDATE, "since": SINCE, "until": UNTIL}), headers=ANALYST)
    if page.status != 200 or csv.status != 200 or backtest.status != 200:
        raise RuntimeError(f"analyst reads answered {page.status}, {csv.status}, {backtest.status}: "
                           f"{page.body[:200]!r} {csv.body[:200]!r} {backtest.body[:200]!r}")
    listed = {a["attemptId"] for a in page.json()["attempts"]}
    exported = {line[:36] for line in csv.body.decode().splitlines()[1:]}
    return listed, exported, backtest.json()["attemptsEvaluated"]


def check(cluster):
    say("== the analysts' reads on the standby")
    if not cluster.wait_healthy(120):
        promise("reads_routed", False, "no streaming synchronous standby to read on")
        return
    leader, standby = cluster.leader(), standby_of(cluster)
    url = cluster.conninfo("issuerd", cluster.state["passwords"]["issuerd"], "issuerd", read_write=False)
    harness.ENV["ISSUERD_READ_DATABASE_URL"] = url + " target_session_attrs=standby"
    reader = Instance("R", free_port())
    try:
        reader.start(wait=False)
        if not reader.wait_ready(30):
            raise RuntimeError("the reading instance was not ready within 30 s (see instance-R.log)")
        lag = call(reader.port, "GET", "/v1/admin/reads", headers=ANALYST).json() or {}
        promise("reads_routed", lag.get("source") == "replica" and lag.get("standby") is True,
                f"GET /v1/admin/reads said {lag}")
        before = view(reader.port)
        # Patroni resumes a standby's paused replay on its next loop: maintenance mode first.
        maintenance(cluster, leader, standby, True)
        on(cluster, standby, "SELECT pg_wal_replay_pause()")
        try:
            attempt = str(uuid.uuid4())
            psql("INSERT INTO provisioning_attempts (attempt_id, channel, inputs, features, hits, flow, decision, "
                 f"ruleset_version, created_at) VALUES ('{attempt}', 'tsp', '{{}}', '{{}}', '[]', 'green', 'APPROVED', "
                 "'failover-reads', '2020-01-01T10:30:00Z')")
            position = psql("SELECT pg_current_wal_lsn()")[0]
            received = wait_for(lambda: on(cluster, standby, f"SELECT pg_last_wal_receive_lsn() >= '{position}'::pg_lsn")
                                == ["t"])
            promise("reads_routed", received, "the standby did not receive the write")
            lag = call(reader.port, "GET", "/v1/admin/reads", headers=ANALYST).json() or {}
            figures["reads_paused_lag_s"] = lag.get("lagSeconds")
            promise("reads_lag", lag.get("replayPaused") is True and (lag.get("lagSeconds") or 0) > 0,
                    f"with replay paused GET /v1/admin/reads said {lag}")
            paused = view(reader.port)
            on_leader = psql(f"SELECT count(*) FROM provisioning_attempts WHERE attempt_id = '{attempt}'")
            still = on(cluster, standby, "SELECT pg_is_wal_replay_paused()")
            promise("reads_routed", paused == before and attempt not in paused[0] and on_leader == ["1"] and still == ["t"],
                    f"with replay paused ({still}) the analyst saw {paused} (before {before}); the leader has {on_leader}")
        finally:
            on(cluster, standby, "SELECT pg_wal_replay_resume()")
            maintenance(cluster, leader, standby, False)
        caught_up = wait_for(lambda: attempt in view(reader.port)[0])
        after = view(reader.port)
        promise("reads_caught_up", caught_up and attempt in after[1] and after[2] == before[2] + 1,
                f"after replay resumed the analyst saw {after} (before {before})")
        settled = wait_for(lambda: (call(reader.port, "GET", "/v1/admin/reads", headers=ANALYST).json() or {})
                           .get("lagSeconds") == 0)
        promise("reads_caught_up", settled, "the lag did not come back to 0")
        sessions = on(cluster, standby, "SELECT count(*) FROM pg_stat_activity WHERE datname = 'issuerd' AND usename = 'issuerd'")
        promise("reads_routed", int(sessions[0]) >= 1, f"the standby {standby} had {sessions[0]} issuerd sessions")
        figures["reads_on"] = f"{standby}(leader={leader})"
    finally:
        reader.stop()
        harness.ENV.pop("ISSUERD_READ_DATABASE_URL", None)
