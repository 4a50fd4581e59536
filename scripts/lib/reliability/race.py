"""Phase race: one code raced over both instances (50 concurrent verifications), wrong codes
alternating between them, and the send limit under 8 concurrent requests. Figures: verified,
race_5xx, locked_after, verified_after_lock, sends_allowed.
"""

import json
import threading
from concurrent.futures import ThreadPoolExecutor

from .harness import CARDS, call, figures, padded, promise, request_code, say, tsp_call, tsp_headers, yellow_token


def run(instances, receiver):
    say("== one code, two instances: 50 concurrent verifications, wrong codes alternating, send limits")
    receiver.mode = "ok"
    cards = [c for c in CARDS if c.startswith("race-card-")]

    # 50 verifications of the right code, 25 per instance, released together.
    yellow_token(instances, "RACETOK1", cards[0])
    answer = request_code(instances, "RACETOK1", "race-1")
    code = receiver.code(answer.json()["challengeId"], 60)
    barrier = threading.Barrier(50)
    results = []

    def verify(i):
        body = padded({"tokenReference": "RACETOK1", "code": code})
        headers = tsp_headers(body)
        barrier.wait()
        results.append(call(instances[i % 2].port, "POST", "/v1/tsp/activation-codes/verify", body, headers))

    with ThreadPoolExecutor(50) as pool:
        list(pool.map(verify, range(50)))
    verified = sum(1 for a in results if a.status == 200 and (a.json() or {}).get("result") == "verified")
    race_5xx = sum(1 for a in results if a.status is None or a.status >= 500)
    refusals = sorted({f"{a.status} {a.error_code()}" for a in results if not (a.status == 200 and (a.json() or {}).get("result") == "verified")})
    say(f"  right code x50 over both instances: verified {verified}, the others {refusals}, 5xx/transport {race_5xx}")

    # Wrong codes alternating between the instances: locked after 5 in total.
    yellow_token(instances, "RACETOK2", cards[1])
    answer = request_code(instances, "RACETOK2", "race-2")
    code = receiver.code(answer.json()["challengeId"], 60)
    wrong = "000000" if code != "000000" else "111111"
    outcomes = []
    for i in range(7):
        body = padded({"tokenReference": "RACETOK2", "code": wrong})
        value = tsp_call(instances[i % 2].port, "/v1/tsp/activation-codes/verify", body).json() or {}
        outcomes.append(value.get("result"))
    right = tsp_call(instances[1].port, "/v1/tsp/activation-codes/verify", padded({"tokenReference": "RACETOK2", "code": code})).json() or {}
    locked_after = outcomes.index("locked") + 1 if "locked" in outcomes else 0
    say(f"  wrong codes alternating A,B,A,...: {outcomes}; then the right code: {right.get('result')}")

    # Send limit (3 codes per token per hour) with 8 concurrent requests over both instances.
    yellow_token(instances, "RACETOK3", cards[2])
    barrier = threading.Barrier(8)
    sends = []

    def send(i):
        body = json.dumps({"tokenReference": "RACETOK3", "activationMethodId": "sms-1"}) + " " * i
        headers = tsp_headers(body, {"Idempotency-Key": f"race-3-{i}"})
        barrier.wait()
        sends.append(call(instances[i % 2].port, "POST", "/v1/tsp/activation-codes", body, headers))

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(send, range(8)))
    allowed = sum(1 for a in sends if a.status == 201)
    limited = [a for a in sends if a.status == 429]
    others = sorted({f"{a.status} {a.error_code()}" for a in sends if a.status not in (201, 429)})
    say(f"  8 concurrent code requests over both instances: 201 x{allowed}, 429 x{len(limited)}, other {others} "
        f"(Retry-After on all: {all(a.headers.get('retry-after') for a in limited)})")
    figures.update(verified=verified, race_5xx=race_5xx, locked_after=locked_after, verified_after_lock=int(right.get("result") == "verified"),
                   sends_allowed=allowed)
    promise("verified", verified == 1, f"{verified} verifications of one code succeeded")
    promise("race_5xx", race_5xx == 0, "5xx or transport failures in the race")
    promise("locked_after", locked_after == 5 and all(o == "locked" for o in outcomes[4:]), f"outcomes {outcomes}")
    promise("verified_after_lock", right.get("result") == "locked", f"right code after the lock answered {right}")
    promise("sends_allowed", allowed == 3 and len(limited) == 5 and all(a.headers.get("retry-after") for a in limited),
            f"{allowed} sends allowed, {len(limited)} limited")
