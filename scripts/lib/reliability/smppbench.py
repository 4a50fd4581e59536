"""Phase smppbench (only when named, scripts/bench-smpp): how fast step-up SMS leave by SMPP.

--tokens codes are requested from instance A, which does not dispatch; then instance B starts with
the outbox's and SMPP's defaults (batch 20, ISSUERD_SMPP_WINDOW 10) and sends them to the SMS centre
simulator. The rate is codes over the seconds from B ready to the last message marked delivered in
the outbox (the SMS centre's answer recorded); beside it, the simulator's own submit_sm ceiling,
measured in the same run against the same simulator by its own client (smpp34's, the same window).
Prints `smpp-bench: codes=N window=10 rate=N/s simulator_ceiling=N/s receipts_s=S`; the promise is
rate >= 100/s.
"""

import re
import subprocess
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from .harness import CARDS, ENV, TOKENS, figures, promise, psql, request_code, say, yellow_token
from .smpp import SETTINGS, Simulator

# The run's short outbox timings (scripts/reliability) give way to the defaults for B.
DEFAULTS = ("ISSUERD_OUTBOX_HTTP_TIMEOUT", "ISSUERD_OUTBOX_LEASE", "ISSUERD_OUTBOX_BATCH_SIZE",
            "ISSUERD_OUTBOX_POLL_INTERVAL")


def run(instances, receiver):
    a, b = instances
    say(f"== SMS by SMPP, speed: {TOKENS} codes queued on A, then sent by B alone (defaults, window 10)")
    smsc = Simulator()
    saved = {key: ENV.get(key) for key in SETTINGS + DEFAULTS + ("ISSUERD_OUTBOX_DISPATCH",)}
    ENV.update({"ISSUERD_SMS_PROVIDER": "smpp", "ISSUERD_SMPP_HOST": "127.0.0.1", "ISSUERD_SMPP_PORT": str(smsc.port),
                "ISSUERD_SMPP_SYSTEM_ID": "issuerd", "ISSUERD_SMPP_PASSWORD": "bench", "ISSUERD_SMPP_SOURCE_ADDR": "BANKOTP"})
    b.stop()
    a.stop()
    ENV["ISSUERD_OUTBOX_DISPATCH"] = "false"
    a.start()
    card_ids = [c for c in CARDS if c.startswith("smpp-card-")][:TOKENS]
    challenges, failures = [], []
    lock = threading.Lock()

    def flow(index, card_id):
        token = f"BENCHTOK{index:06d}"
        try:
            yellow_token([a], token, card_id)
            answer = request_code([a], token, f"bench-code-{token}")
            if answer.status != 201:
                raise RuntimeError(f"activation-codes {token}: {answer.status}")
            with lock:
                challenges.append(answer.json()["challengeId"])
        except Exception as error:  # reported as a figure
            with lock:
                failures.append(str(error))

    with ThreadPoolExecutor(12) as pool:
        list(pool.map(lambda pair: flow(*pair), enumerate(card_ids)))
    count = len(challenges)
    ceiling = subprocess.run([smsc.python, smsc.script, "ceiling", str(smsc.port), str(count), "10"],
                             capture_output=True, text=True, timeout=300)
    found = re.search(r"ceiling: (\d+)/s", ceiling.stdout)
    simulator_ceiling = int(found.group(1)) if found else 0

    ENV["ISSUERD_OUTBOX_DISPATCH"] = "true"
    for key in DEFAULTS:
        ENV.pop(key, None)
    b.start(wait=False)
    b.wait_ready(60)
    started = time.monotonic()
    ids = ",".join(f"'{c}'" for c in challenges) or "NULL"
    sent_s = receipts_s = None
    deadline = started + 600
    while time.monotonic() < deadline and receipts_s is None:
        states = dict(line.split("|") for line in psql(
            f"SELECT state, count(*) FROM challenge_deliveries WHERE challenge_id IN ({ids}) GROUP BY state"))
        waiting = int(states.get("queued", 0))
        if waiting == 0 and sent_s is None:
            sent_s = time.monotonic() - started
        if waiting == 0 and int(states.get("sent", 0)) == 0:
            receipts_s = time.monotonic() - started
        time.sleep(0.05)
    rate = round(count / sent_s) if sent_s else 0
    smsc.stop()
    b.stop()
    a.stop()
    for key, value in saved.items():
        if value is None:
            ENV.pop(key, None)
        else:
            ENV[key] = value
    a.start()
    b.start()
    say(f"smpp-bench: codes={count} window=10 rate={rate}/s simulator_ceiling={simulator_ceiling}/s "
        f"receipts_s={receipts_s if receipts_s is None else round(receipts_s, 1)}")
    figures.update({"smpp_bench_codes": count, "smpp_bench_rate": rate, "smpp_simulator_ceiling": simulator_ceiling})
    promise("smpp_bench_rate", rate >= 100, f"{rate}/s, under 100/s")
    promise("smpp_bench_failures", not failures, "; ".join(failures[:3]))
