"""Phase outbox: the outbox under crashes.

At least 1,000 events (a step-up code, an activation and a suspension per token) delivered to the
receiver answering 200, 500 or slowly at random, while an instance is SIGKILLed and restarted every
2-4 s. Figures: events, lost, duplicates, dup_id_mismatch, unexpected, dead, kills, drain_s,
flow_failures, bad_signatures.
"""

import json
import random
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from .harness import ADMIN_KEY, CARDS, QUICK, TOKENS, call, figures, padded, promise, psql, request_code, retrying, say, tsp_call, yellow_token


def run(instances, receiver):
    say(f"== outbox under crashes: {TOKENS} tokens x (step-up code, activation, suspension after lost), SIGKILL every 2-4 s")
    receiver.mode = "chaos"
    card_ids = [c for c in CARDS if c.startswith("rel-card-")][:TOKENS]
    expected = set()
    expected_lock = threading.Lock()
    failures = []
    stop = threading.Event()
    kills = [0]

    def chaos():
        while not stop.wait(random.uniform(2.0, 4.0)):
            victim = random.choice(instances)
            victim.kill()
            kills[0] += 1
            victim.start(wait=False)

    def flow(index, card_id):
        token = f"RELTOK{index:06d}"
        try:
            yellow_token(instances, token, card_id)
            answer = request_code(instances, token, f"code-{token}")
            if answer.status != 201:
                raise RuntimeError(f"activation-codes {token}: {answer.status} {answer.body[:200]!r}")
            challenge = answer.json()["challengeId"]
            with expected_lock:
                expected.add(("notify", challenge))
            code = receiver.code(challenge, 120)
            if code is None:
                raise RuntimeError(f"no code arrived for {token}")
            body = padded({"tokenReference": token, "code": code})
            answer, _ = retrying(instances, lambda port: tsp_call(port, "/v1/tsp/activation-codes/verify", body))
            result = (answer.json() or {}).get("result")
            # A verification whose answer died with its instance is retried and finds the token active (409).
            if not (answer.status == 200 and result == "verified") and answer.status != 409:
                raise RuntimeError(f"verify {token}: {answer.status} {answer.body[:200]!r}")
            status = psql(f"SELECT status FROM tokens WHERE token_reference = '{token}'")
            if status != ["active"]:
                raise RuntimeError(f"token {token} is {status} after verification")
            with expected_lock:
                expected.add(("tsp", token, "activate"))
            lost = json.dumps({"status": "lost", "reason": "reliability run"})
            answer, _ = retrying(instances, lambda port: call(
                port, "POST", f"/v1/admin/cards/{card_id}/status", lost, {"Authorization": f"Bearer {ADMIN_KEY}"}))
            if answer.status != 200:
                raise RuntimeError(f"card {card_id} lost: {answer.status} {answer.body[:200]!r}")
            with expected_lock:
                expected.add(("tsp", token, "suspend"))
        except Exception as error:  # noqa: BLE001 - every failure is a figure
            failures.append(str(error))

    chaos_thread = threading.Thread(target=chaos, daemon=True)
    started = time.monotonic()
    chaos_thread.start()
    workers = 12
    last_report = [time.monotonic()]
    with ThreadPoolExecutor(workers) as pool:
        futures = [pool.submit(flow, i, card_id) for i, card_id in enumerate(card_ids)]
        for done, future in enumerate(futures, 1):
            future.result()
            if time.monotonic() - last_report[0] > 10:
                last_report[0] = time.monotonic()
                say(f"  {done}/{len(futures)} token flows done, {len(expected)} events queued, {kills[0]} kills")
    queued_at = time.monotonic()
    say(f"  all flows done in {queued_at - started:.1f} s: {len(expected)} events queued, draining (kills continue)")
    drain_limit = 120 if QUICK else 300
    pending = None
    while time.monotonic() - queued_at < drain_limit:
        accepted = receiver.accepted_identities()
        missing = [e for e in expected if e not in accepted]
        pending = int(psql("SELECT count(*) FROM outbox WHERE status = 'pending'")[0])
        if not missing and pending == 0:
            break
        time.sleep(0.25)
    drained_at = time.monotonic()
    stop.set()
    chaos_thread.join()
    for instance in instances:
        if not instance.alive():
            instance.start()
        instance.wait_ready(30)

    accepted = receiver.accepted_identities()
    lost = sorted(e for e in expected if e not in accepted)
    unexpected = sorted(e for e in accepted if e not in expected)
    duplicates = sum(n - 1 for n in accepted.values() if n > 1)
    with receiver.lock:
        mismatched = sum(1 for ids in receiver.event_of_key.values() if len(ids) != 1)
        deliveries = sum(receiver.received.values())
        answers = dict(receiver.answers)
        bad_signatures = receiver.bad_signatures
    counts = dict(line.split("|") for line in psql("SELECT status, count(*) FROM outbox GROUP BY status"))
    dead = int(counts.get("dead", 0))
    drain = drained_at - queued_at
    say(f"  events expected {len(expected)}, deliveries received {deliveries} (answered 200: {answers['200']}, 500: {answers['500']}, "
        f"slow: {answers['slow']}), kills {kills[0]}")
    say(f"  lost {len(lost)}, duplicates {duplicates} (same Idempotency-Key and event id each), key/event mismatches {mismatched}, "
        f"unexpected {len(unexpected)}, dead-lettered {dead}, bad signatures {bad_signatures}, flow failures {len(failures)}")
    say(f"  drain: {drain:.1f} s after the last event was queued; outbox by status: {counts}")
    for failure in failures[:5]:
        say(f"  flow failure: {failure}")
    for event in lost[:5]:
        say(f"  lost: {event}")
    figures.update(events=len(expected), lost=len(lost), duplicates=duplicates, dup_id_mismatch=mismatched, unexpected=len(unexpected), dead=dead, kills=kills[0],
                   drain_s=round(drain, 1), flow_failures=len(failures), bad_signatures=bad_signatures)
    promise("events", len(expected) >= 1000, f"only {len(expected)} events queued (at least 1,000 promised)")
    promise("lost", not lost, f"{len(lost)} events never accepted by the receiver")
    promise("dup_id_mismatch", mismatched == 0, "a re-delivery carried another event id")
    promise("dead", dead == 0, f"{dead} messages dead-lettered")
    promise("flow_failures", not failures, f"{len(failures)} token flows failed")
    promise("bad_signatures", bad_signatures == 0, "a delivery was not signed correctly")
