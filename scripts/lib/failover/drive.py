"""The load, the three faults and the checks of scripts/failover.

Two issuerd instances reach the Patroni cluster through one libpq multi-host connection string
(target_session_attrs=read-write). Under steady load (in-app provisioning, TSP authorizations, SMS
step-up codes requested and verified, cards then reported lost by an admin), the leader is taken
away three times, each once the cluster is whole again (a synchronous standby streaming):

  crash       the leader's PostgreSQL, every process of it, SIGKILLed (Patroni fails over);
  switchover  a planned switchover through Patroni's REST API;
  node        the leader's Patroni and PostgreSQL SIGKILLed together, as a host that died; the
              standby is promoted once the leader key expires (ttl), then the lost node is started
              again and must rejoin as the synchronous standby.

For each fault and each instance: the time from the fault to the first 2xx answer to a request sent
after it; the figure is the longer of the two. Then: every acknowledged attempt on the final leader,
none stored twice, no 5xx but 503, no instance restarted, every acknowledged verification still
verified and its code refused a second time, every outbox message delivered under its own id, and
`issuerd audit verify` passing. Then the analysts' reads on the standby (reads.py).

Test tooling only (Python standard library; reuses scripts/lib/reliability/harness.py).
"""

import json
import os
import random
import signal
import subprocess
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor

from reliability import harness
from reliability.harness import (ADMIN_KEY, BIN, CARDS, Instance, ProvisioningLoad, Receiver, authorize_body, broken, call,
                                 figures, free_port, padded, pan_in_logs, promise, psql, say, tsp_call)

from . import reads
from .cluster import TEMPLATE, Cluster

import yaml

with open(TEMPLATE) as _f:
    DCS = yaml.safe_load(_f)["bootstrap"]["dcs"]
TTL = int(DCS["ttl"])
# The promises (docs/reliability.md, "Failover").
CRASH_BOUND_S = 15.0
SWITCHOVER_BOUND_S = 15.0
NODE_BOUND_S = TTL + 10.0


class Stopped(Exception):
    """The load is over (or interrupted): a flow ends between two requests, never inside one."""


class Run:
    def __init__(self, cluster, instances, receiver):
        self.cluster, self.instances, self.receiver = cluster, instances, receiver
        self.load = ProvisioningLoad(instances, "fo")
        self.t0 = self.load.t0
        self.lock = threading.Lock()
        self.records = []  # (kind, port, start, end, status, code)
        self.first = {}  # provisioning n -> its first answer's status
        self.stop = threading.Event()
        self.tsp_acked = []  # requestIds of authorizations answered 200
        self.verified = []  # (token, challengeId, code, port) of verifications answered "verified"
        self.ambiguous_verifications = []  # (token, challengeId): no answer, then 409 on retry
        self.expected = set()  # outbox events the client caused
        self.failures = []
        self.reuse_accepted = 0
        self.tsp_cards = [c for c in CARDS if c.startswith("rel-card-")]
        self.next_card = 0

    def now(self):
        return time.monotonic() - self.t0

    def record(self, kind, port, started, answer):
        with self.lock:
            self.records.append((kind, port, started, started + answer.elapsed, answer.status, answer.error_code()))

    # ------------------------------------------------------------ load

    def provisioning(self, worker):
        index = 0
        while not self.stop.is_set():
            n = harness.next_number()
            port = self.instances[(worker + index) % len(self.instances)].port
            index += 1
            started = self.now()
            answer = self.load.provision(port, n)
            self.record("provision", port, started, answer)
            with self.lock:
                self.first.setdefault(n, answer.status)
            time.sleep(0.05)

    def persist(self, kind, attempt, fresh_second):
        """Sends `attempt(port)` until an answer is not a 503, a transport failure or an
        in-progress 409, alternating instances; every answer is recorded. `fresh_second`: the
        body repeats exactly, so wait for a new second (a new TSP signature, not a replay)."""
        port = random.choice(self.instances).port
        deadline = time.monotonic() + 120
        failed_once = False
        while time.monotonic() < deadline:
            if self.stop.is_set():
                raise Stopped()
            started = self.now()
            answer = attempt(port)
            self.record(kind, port, started, answer)
            in_progress = answer.status == 409 and b"still being processed" in answer.body
            if answer.status is not None and answer.status != 503 and not in_progress:
                return answer, port, failed_once
            failed_once = True
            port = next(i.port for i in self.instances if i.port != port)
            time.sleep(1.1 if fresh_second else 0.3)
        raise RuntimeError(f"{kind}: no answer but 503 or failures for 120 s")

    def flow(self, card_id, token):
        request_id = str(uuid.uuid4())
        body = authorize_body(token, card_id, "fodev-" + token, request_id)
        answer, _, _ = self.persist("authorize", lambda port: tsp_call(
            port, "/v1/tsp/tokenization/authorize", body, {"Idempotency-Key": request_id}), True)
        if answer.status != 200 or (answer.json() or {}).get("decision") != "REQUIRE_ADDITIONAL_AUTHENTICATION":
            raise RuntimeError(f"authorize {token}: {answer.status} {answer.body[:200]!r}")
        with self.lock:
            self.tsp_acked.append(request_id)
        body = json.dumps({"tokenReference": token, "activationMethodId": "sms-1"}, separators=(",", ":"))
        answer, _, _ = self.persist("code", lambda port: tsp_call(
            port, "/v1/tsp/activation-codes", body, {"Idempotency-Key": f"code-{token}"}), True)
        if answer.status != 201:
            raise RuntimeError(f"activation-codes {token}: {answer.status} {answer.body[:200]!r}")
        challenge = answer.json()["challengeId"]
        with self.lock:
            self.expected.add(("notify", challenge))
        code = None
        for _ in range(120):
            if self.stop.is_set():
                raise Stopped()
            code = self.receiver.code(challenge, 1)
            if code is not None:
                break
        if code is None:
            raise RuntimeError(f"no code arrived for {token}")
        answer, port, ambiguous = self.persist("verify", lambda port: tsp_call(
            port, "/v1/tsp/activation-codes/verify", padded({"tokenReference": token, "code": code})), False)
        result = (answer.json() or {}).get("result")
        if answer.status == 200 and result == "verified":
            with self.lock:
                self.verified.append((token, challenge, code, port))
        elif answer.status == 409 and ambiguous:
            # The first verification committed but its answer was lost; the retry finds the token active.
            with self.lock:
                self.ambiguous_verifications.append((token, challenge))
        else:
            raise RuntimeError(f"verify {token}: {answer.status} {answer.body[:200]!r}")
        with self.lock:
            self.expected.add(("tsp", token, "activate"))
        if answer.status == 200:
            # The same code at once on the other instance: it must not verify twice.
            other = next(i.port for i in self.instances if i.port != port)
            again = tsp_call(other, "/v1/tsp/activation-codes/verify", padded({"tokenReference": token, "code": code}))
            self.record("verify-again", other, self.now() - again.elapsed, again)
            if again.status == 200:
                with self.lock:
                    self.reuse_accepted += 1
        lost = json.dumps({"status": "lost", "reason": "failover run"})
        answer, _, ambiguous = self.persist("admin", lambda port: call(
            port, "POST", f"/v1/admin/cards/{card_id}/status", lost, {"Authorization": f"Bearer {ADMIN_KEY}"}), False)
        if answer.status != 200 and not (answer.status == 409 and ambiguous):
            raise RuntimeError(f"card {card_id} lost: {answer.status} {answer.body[:200]!r}")
        with self.lock:
            self.expected.add(("tsp", token, "suspend"))

    def flows(self, worker):
        while not self.stop.is_set():
            with self.lock:
                if self.next_card >= len(self.tsp_cards):
                    return
                index = self.next_card
                self.next_card += 1
            try:
                self.flow(self.tsp_cards[index], f"FOTOK{index:06d}")
            except Stopped:
                return
            except Exception as error:  # noqa: BLE001 - every failure is a figure
                self.failures.append(str(error))

    def poll_ready(self):
        while not self.stop.wait(0.5):
            for instance in self.instances:
                started = self.now()
                self.record("readyz", instance.port, started, call(instance.port, "GET", "/readyz", timeout=5))

    # ------------------------------------------------------------ measuring

    def served(self, port, since):
        """The end times of the 2xx answers of one instance to requests sent from `since` on, in order."""
        with self.lock:
            return sorted(r[3] for r in self.records if r[0] != "readyz" and r[1] == port and r[4] is not None
                          and 200 <= r[4] < 300 and r[2] >= since)

    def wait_served(self, since, seconds):
        """Waits until every instance answered a 2xx to a request sent from `since` on."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if all(self.served(i.port, since) for i in self.instances):
                return True
            time.sleep(0.1)
        return False

    def fault(self, name, act, bound, wait_s):
        """Applies `act(leader, standby)` (which may return a thread to wait for: the fault lasts
        until it ends) and measures, for each instance, the longest time without a 2xx answer from
        the fault until its first 2xx to a request sent after the fault ended."""
        if not self.cluster.wait_healthy(120):
            raise RuntimeError(f"before the {name}: no leader with a streaming synchronous standby within 120 s")
        time.sleep(2)
        leader = self.cluster.leader()
        standby = next(n["name"] for n in self.cluster.state["nodes"] if n["name"] != leader)
        at = self.now()
        thread = act(leader, standby)
        if thread is not None:
            thread.join(wait_s)
        done = self.now()
        self.wait_served(done, wait_s)
        found = {}
        for instance in self.instances:
            ends = self.served(instance.port, at)
            after = [e for e in self.served(instance.port, done)]
            if not after:
                continue
            window_end, previous, gap = min(after), at, 0.0
            for end in ends:
                if end > window_end:
                    break
                gap, previous = max(gap, end - previous), end
            found[instance.port] = gap
        value = max(found.values()) if len(found) == len(self.instances) else None
        now_leader = self.cluster.leader()
        with self.lock:
            refused = sum(1 for r in self.records if r[2] >= at and r[4] == 503)
        per = ", ".join(f"{i.name} {found[i.port]:.2f} s" if i.port in found else f"{i.name} never" for i in self.instances)
        say(f"  {name}: leader {leader} -> {now_leader}; longest without a 2xx: {per}; 503s {refused}")
        figures[f"unavailable_{name}_s"] = round(value, 2) if value is not None else "never"
        promise(f"unavailable_{name}_s", value is not None and value <= bound,
                f"an instance went {value} s without a 2xx (bound {bound:.0f} s)")
        return leader, standby

    @staticmethod
    def killed(count):
        if count == 0:
            raise RuntimeError("nothing to kill: the leader's processes were not found")
        say(f"  {count} processes SIGKILLed")

    def run(self):
        threads = [threading.Thread(target=self.provisioning, args=(w,), daemon=True) for w in range(4)]
        threads += [threading.Thread(target=self.flows, args=(w,), daemon=True) for w in range(2)]
        threads += [threading.Thread(target=self.poll_ready, daemon=True)]
        for thread in threads:
            thread.start()
        try:
            time.sleep(5)
            say("== fault 1: the leader's PostgreSQL SIGKILLed")
            self.fault("crash", lambda leader, _: self.killed(self.cluster.kill_postgres(leader)), CRASH_BOUND_S, 60)

            say("== fault 2: a planned switchover (Patroni REST API)")
            switch = {}

            def switchover(leader, standby):
                def ask():
                    switch["answer"] = self.cluster.switchover(leader, standby)
                switch["thread"] = threading.Thread(target=ask, daemon=True)
                switch["thread"].start()
                return switch["thread"]

            self.fault("switchover", switchover, SWITCHOVER_BOUND_S, 60)
            status, body = switch.get("answer", (None, "no answer"))
            say(f"  switchover answered {status}: {str(body).strip()[:120]}")
            promise("switchover_accepted", status == 200, f"Patroni answered the switchover {status}: {body}")

            silent = bool(os.environ.get("FAILOVER_NETNS"))
            say(f"== fault 3: the leader's node lost (Patroni and PostgreSQL SIGKILLed"
                + ("; its ports then silent, no reset" if silent else "; not root: its ports refuse, no silent drop") + f"; ttl {TTL} s)")

            def lose(leader, _):
                if silent:
                    self.cluster.cut_off(leader)
                self.killed(self.cluster.kill_node(leader))

            lost, _ = self.fault("node", lose, NODE_BOUND_S, TTL + 60)
            figures["node_silent"] = int(silent)
            started = time.monotonic()
            if silent:
                self.cluster.reconnect()
            self.cluster.start_node(lost)
            rejoined = self.cluster.wait_healthy(120)
            rejoin_s = time.monotonic() - started
            say(f"  {lost} started again: " + (f"the synchronous standby after {rejoin_s:.1f} s" if rejoined else "did not rejoin within 120 s"))
            figures["rejoin_s"] = round(rejoin_s, 1) if rejoined else "never"
            promise("rejoin_s", rejoined, "the lost node did not rejoin as the synchronous standby")
            time.sleep(3)
        finally:
            self.stop.set()
            for thread in threads:
                thread.join(30)

    # ------------------------------------------------------------ checking

    def check(self):
        records = self.records
        statuses = {}
        for r in records:
            statuses[str(r[4])] = statuses.get(str(r[4]), 0) + 1
        other_5xx = [r for r in records if r[4] is not None and r[4] >= 500 and r[4] != 503]
        transport = [r for r in records if r[4] is None]
        slowest = max(r[3] - r[2] for r in records)
        say(f"  {len(records)} requests by status {statuses}; slowest {slowest:.2f} s")

        # Provisioning: retry every request without a decision whose attempt is stored (its answer
        # was lost with its connection) and a sample of the others, with its Idempotency-Key.
        decided = {n: s for n, s in self.first.items() if s in (200, 403)}
        before = self.load.stored_attempts()
        undecided = [n for n in self.first if n not in decided]
        ambiguous = [n for n in undecided if n in before]
        rest = [n for n in undecided if n not in before]
        sample = random.sample(rest, min(40, len(rest)))
        replayed = [0]

        def retry(n):
            answer, _ = harness.retrying(self.instances, lambda port: self.load.provision(port, n), seconds=60)
            if answer and answer.status in (200, 403):
                decided[n] = answer.status
                if answer.headers.get("idempotent-replayed") == "true":
                    replayed[0] += 1

        with ThreadPoolExecutor(8) as pool:
            list(pool.map(retry, ambiguous + sample))
        stored = self.load.stored_attempts()
        acked = [n for n, s in self.first.items() if s == 200]
        lost = [n for n in acked if n not in stored]
        twice = [n for n, c in stored.items() if c > 1]
        unanswered = [n for n in stored if n not in decided]

        # TSP authorizations answered 200: each attempt on the final leader, once.
        tsp_rows = {}
        if self.tsp_acked:
            ids = ",".join(f"'{i}'" for i in self.tsp_acked)
            for line in psql(f"SELECT request_id, count(*) FROM provisioning_attempts WHERE channel = 'tsp' AND request_id IN ({ids}) GROUP BY request_id"):
                request_id, count = line.split("|")
                tsp_rows[request_id] = int(count)
        tsp_lost = [i for i in self.tsp_acked if i not in tsp_rows]
        tsp_twice = [i for i, c in tsp_rows.items() if c > 1]

        # Acknowledged verifications: still verified, token active, and the code refused again now.
        verified_lost = 0
        if self.verified:
            ids = ",".join(f"'{c}'" for _, c, _, _ in self.verified)
            ok = set(psql(f"SELECT challenge_id FROM challenges WHERE status = 'verified' AND challenge_id IN ({ids})"))
            verified_lost = sum(1 for _, c, _, _ in self.verified if c not in ok)
        reused = self.reuse_accepted
        for token, _, code, port in self.verified:
            answer = tsp_call(port, "/v1/tsp/activation-codes/verify", padded({"tokenReference": token, "code": code}))
            if answer.status == 200:
                reused += 1

        # The outbox: every event the client caused accepted by the receiver, each message under one id.
        self.receiver.mode = "ok"
        deadline = time.monotonic() + 90
        pending = None
        while time.monotonic() < deadline:
            accepted = self.receiver.accepted_identities()
            missing = [e for e in self.expected if e not in accepted]
            pending = int(psql("SELECT count(*) FROM outbox WHERE status = 'pending'")[0])
            if not missing and pending == 0:
                break
            time.sleep(0.25)
        accepted = self.receiver.accepted_identities()
        outbox_lost = [e for e in self.expected if e not in accepted]
        with self.receiver.lock:
            mismatched = sum(1 for ids in self.receiver.event_of_key.values() if len(ids) != 1)
            bad_signatures = self.receiver.bad_signatures
        dead = int(psql("SELECT count(*) FROM outbox WHERE status = 'dead'")[0])

        audit = subprocess.run([BIN, "audit", "verify"], capture_output=True, text=True, timeout=120)
        audit_entries = int(psql("SELECT count(*) FROM audit_log")[0])
        restarts = sum(1 for i in self.instances if not i.alive())
        leaked = pan_in_logs()

        say(f"  provisioning: {len(acked)} answered 200, {len(undecided)} without a decision ({len(ambiguous)} committed: "
            f"{replayed[0]} replayed to the retry); missing {len(lost)}, stored twice {len(twice)}, never answered {len(unanswered)}")
        say(f"  TSP authorizations answered 200: {len(self.tsp_acked)}, missing {len(tsp_lost)}, stored twice {len(tsp_twice)}")
        say(f"  step-up: {len(self.verified)} verifications acknowledged (+{len(self.ambiguous_verifications)} whose answer was lost); "
            f"not verified now {verified_lost}; a code accepted twice {reused}")
        say(f"  outbox: {len(self.expected)} events, lost {len(outbox_lost)}, one key with two events {mismatched}, dead {dead}, "
            f"bad signatures {bad_signatures}, pending {pending}")
        say(f"  audit verify: exit {audit.returncode}, {audit_entries} entries: {audit.stdout.strip()[:160]}")
        for failure in self.failures[:5]:
            say(f"  flow failure: {failure}")
        for r in other_5xx[:5]:
            say(f"  5xx: {r}")

        acked_total = len(acked) + len(self.tsp_acked)
        figures_now = {
            "acked": acked_total, "lost_acknowledged": len(lost) + len(tsp_lost) + verified_lost,
            "duplicate_attempts": len(twice) + len(tsp_twice), "5xx": len(other_5xx),
            "unavailable_crash_s": figures.pop("unavailable_crash_s", "never"),
            "unavailable_switchover_s": figures.pop("unavailable_switchover_s", "never"),
            "unavailable_node_s": figures.pop("unavailable_node_s", "never"),
            "restarts": restarts}
        rest = dict(figures)
        figures.clear()
        figures.update(figures_now)
        figures.update(rest)
        figures.update({
            "503": statuses.get("503", 0), "transport_failures": len(transport), "max_latency_s": round(slowest, 2),
            "ambiguous_commits": len(ambiguous), "replayed": replayed[0], "unanswered_attempts": len(unanswered),
            "tsp_acked": len(self.tsp_acked), "verified": len(self.verified), "code_reused": reused,
            "outbox_events": len(self.expected), "outbox_lost": len(outbox_lost), "outbox_id_mismatch": mismatched,
            "outbox_dead": dead, "audit_entries": audit_entries, "audit_broken": 0 if audit.returncode == 0 else 1,
            "flow_failures": len(self.failures), "pan_in_logs": leaked})
        promise("lost_acknowledged", figures["lost_acknowledged"] == 0,
                f"acknowledged but missing: {len(lost)} provisioning, {len(tsp_lost)} TSP, {verified_lost} verifications")
        promise("duplicate_attempts", figures["duplicate_attempts"] == 0, "an attempt stored twice")
        promise("5xx", not other_5xx, f"{len(other_5xx)} answers 5xx other than 503")
        promise("restarts", restarts == 0, f"{restarts} instances exited")
        promise("unanswered_attempts", not unanswered, f"attempts stored but never answered: {unanswered[:5]}")
        promise("replayed", replayed[0] == len(ambiguous), f"only {replayed[0]} of {len(ambiguous)} committed requests replayed")
        promise("code_reused", reused == 0, f"{reused} codes accepted a second time")
        promise("outbox_lost", not outbox_lost, f"{len(outbox_lost)} events never accepted: {sorted(outbox_lost)[:3]}")
        promise("outbox_id_mismatch", mismatched == 0, "a message delivered under another id")
        promise("outbox_dead", dead == 0, f"{dead} messages dead-lettered")
        promise("audit_broken", audit.returncode == 0, f"issuerd audit verify: {audit.stdout.strip()} {audit.stderr.strip()[-200:]}")
        promise("flow_failures", not self.failures, f"{len(self.failures)} TSP flows failed")
        promise("transport_failures", not transport, f"{len(transport)} requests without an HTTP answer")
        promise("pan_in_logs", leaked == 0, f"{leaked} PANs in the instances' logs")


def main(work):
    cluster = Cluster(work)
    receiver = Receiver()
    harness.ENV["ISSUERD_NOTIFY_WEBHOOK_URL"] = f"http://127.0.0.1:{receiver.port}/notify"
    harness.ENV["ISSUERD_TSP_WEBHOOK_URL"] = f"http://127.0.0.1:{receiver.port}/tsp"
    instances = [Instance("A", free_port()), Instance("B", free_port())]
    started = time.monotonic()

    def terminated(signum, frame):
        raise KeyboardInterrupt(f"signal {signum}")

    # SIGTERM (scripts/failover's clean-up, a CI timeout) ends the run through the finally below.
    signal.signal(signal.SIGTERM, terminated)
    try:
        for instance in instances:
            instance.start(wait=False)
        # For `down`, should this process die before its finally runs.
        cluster.state["instances"] = [i.process.pid for i in instances]
        cluster.save()
        for instance in instances:
            if not instance.wait_ready(30):
                raise RuntimeError(f"instance {instance.name} not ready within 30 s (see instance-{instance.name}.log)")
        say(f"two instances on the cluster through one multi-host connection string: A on {instances[0].port}, B on {instances[1].port}")
        run = Run(cluster, instances, receiver)
        run.run()
        say("== after the faults")
        run.check()
        reads.check(cluster)
    finally:
        for instance in instances:
            instance.stop()
        receiver.server.shutdown()
    figures["seconds"] = round(time.monotonic() - started)
    say("failover: " + " ".join(f"{k}={v}" for k, v in figures.items()))
    if broken:
        say("promises broken: " + "; ".join(broken))
        return 1
    return 0
