"""Phase smpp: step-up SMS to an SMS centre by SMPP, under crashes on both sides.

Both instances send SMS by SMPP (ISSUERD_SMS_PROVIDER=smpp) to the SMS centre simulator
(Sources/IssuerdTestSupport/SMPP/smsc_simulator.py, PyPI smpp34's server, run with the test venv's
Python) while a burst of --tokens code requests runs and until the outbox has drained (5 s at
least); every 0.5-1.5 s either an instance is SIGKILLed and restarted at once or the SMS centre is
SIGKILLed and started again on its port (its sessions drop without unbind). Figures, on the line
`smpp: sent=N delivered=N lost=0 duplicates=N`:
  sent        codes requested (201);
  delivered   codes whose every segment has the SMS centre's DELIVRD receipt recorded;
  lost        codes the SMS centre never accepted (no message id of theirs in its log): promise 0;
  duplicates  submit_sm the SMS centre accepted whose answer issuerd never recorded (each a
              segment that was, or may be, sent twice: docs/reliability.md, "SMS").
After the phase both instances go back to the run's own settings.
"""

import json
import os
import random
import signal
import subprocess
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from .harness import CARDS, ENV, TOKENS, WORK, figures, free_port, promise, psql, request_code, say, yellow_token

SETTINGS = ("ISSUERD_SMS_PROVIDER", "ISSUERD_SMPP_HOST", "ISSUERD_SMPP_PORT", "ISSUERD_SMPP_SYSTEM_ID",
            "ISSUERD_SMPP_PASSWORD", "ISSUERD_SMPP_SOURCE_ADDR")


class Simulator:
    """The SMS centre, restartable on its port; what it accepted stays in its folder."""

    def __init__(self):
        self.script = os.path.join(ENV["ISSUERD_ROOT"], "Sources", "IssuerdTestSupport", "SMPP", "smsc_simulator.py")
        self.python = ENV.get("ISSUERD_TEST_PYTHON") or "python3"
        self.directory = os.path.join(WORK, "smsc")
        os.makedirs(self.directory, exist_ok=True)
        self.port = free_port()
        self.log = open(os.path.join(WORK, "smsc.log"), "ab")
        self.process = None
        self.start()

    def start(self):
        for _ in range(50):
            self.process = subprocess.Popen([self.python, self.script, "serve", str(self.port), self.directory],
                                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log)
            if self.process.stdout.readline().startswith(b"ready"):
                return
            self.process.kill()
            self.process.wait()
            time.sleep(0.1)
        raise RuntimeError("the SMS centre simulator does not start")

    def kill(self):
        self.process.send_signal(signal.SIGKILL)
        self.process.wait()

    def stop(self):
        self.process.stdin.close()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.kill()

    def accepted(self):
        try:
            with open(os.path.join(self.directory, "submits.jsonl")) as f:
                return [json.loads(line)["messageId"] for line in f if line.strip()]
        except FileNotFoundError:
            return []


def restart_all(instances):
    for instance in instances:
        instance.stop()
    for instance in instances:
        instance.start()


def run(instances, receiver):
    say(f"== SMS by SMPP under crashes: {TOKENS} codes, an instance SIGKILLed or the SMS centre restarted every 0.5-1.5 s")
    smsc = Simulator()
    saved = {key: ENV.get(key) for key in SETTINGS}
    ENV.update({"ISSUERD_SMS_PROVIDER": "smpp", "ISSUERD_SMPP_HOST": "127.0.0.1", "ISSUERD_SMPP_PORT": str(smsc.port),
                "ISSUERD_SMPP_SYSTEM_ID": "issuerd", "ISSUERD_SMPP_PASSWORD": "reliable", "ISSUERD_SMPP_SOURCE_ADDR": "BANKOTP"})
    restart_all(instances)
    card_ids = [c for c in CARDS if c.startswith("smpp-card-")][:TOKENS]
    challenges, failures = [], []
    lock = threading.Lock()
    stop = threading.Event()
    faults = {"kills": 0, "smsc_restarts": 0}

    def chaos():
        while not stop.wait(random.uniform(0.5, 1.5)):
            if random.random() < 0.5:
                victim = random.choice(instances)
                victim.kill()
                faults["kills"] += 1
                victim.start(wait=False)
            else:
                smsc.kill()
                faults["smsc_restarts"] += 1
                smsc.start()

    def flow(index, card_id):
        token = f"SMPTOK{index:06d}"
        try:
            yellow_token(instances, token, card_id)
            answer = request_code(instances, token, f"smpp-code-{token}")
            if answer.status != 201:
                raise RuntimeError(f"activation-codes {token}: {answer.status} {answer.body[:200]!r}")
            with lock:
                challenges.append(answer.json()["challengeId"])
        except Exception as error:  # recorded, reported as a figure
            with lock:
                failures.append(str(error))

    chaos_thread = threading.Thread(target=chaos, daemon=True)
    chaos_thread.start()
    with ThreadPoolExecutor(12) as pool:
        list(pool.map(lambda pair: flow(*pair), enumerate(card_ids)))
    ids = ",".join(f"'{c}'" for c in challenges) or "NULL"

    def queued():
        return int(psql(f"SELECT count(*) FROM challenge_deliveries WHERE challenge_id IN ({ids}) AND state = 'queued'")[0])

    # Faults go on while the outbox drains (at least 5 s more): every code accepted by the SMS centre.
    drain_started = time.monotonic()
    while time.monotonic() < drain_started + 120 and (queued() > 0 or time.monotonic() < drain_started + 5):
        time.sleep(0.2)
    stop.set()
    chaos_thread.join()
    for instance in instances:
        if not instance.alive():
            instance.start()
    # Then the receipts: each code delivered (or undeliverable), or 90 s.
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        pending = int(psql(f"SELECT count(*) FROM challenge_deliveries WHERE challenge_id IN ({ids}) "
                           "AND state NOT IN ('delivered', 'undeliverable')")[0])
        if pending == 0:
            break
        time.sleep(0.5)
    accepted = set(smsc.accepted())
    recorded = {}
    for line in psql(f"SELECT challenge_id, message_id FROM smpp_messages WHERE challenge_id IN ({ids})"):
        challenge, message = line.split("|")
        recorded.setdefault(challenge, []).append(message)
    all_recorded = {m for messages in recorded.values() for m in messages}
    lost = sum(1 for c in challenges if not any(m in accepted for m in recorded.get(c, [])))
    delivered = int(psql(f"SELECT count(*) FROM challenge_deliveries WHERE challenge_id IN ({ids}) AND state = 'delivered'")[0])
    duplicates = len(accepted - all_recorded)
    smsc.stop()
    for key, value in saved.items():
        if value is None:
            ENV.pop(key, None)
        else:
            ENV[key] = value
    restart_all(instances)

    say(f"smpp: sent={len(challenges)} delivered={delivered} lost={lost} duplicates={duplicates}")
    figures.update({"smpp_sent": len(challenges), "smpp_delivered": delivered, "smpp_lost": lost,
                    "smpp_duplicates": duplicates, "smpp_kills": faults["kills"],
                    "smsc_restarts": faults["smsc_restarts"], "smpp_flow_failures": len(failures)})
    promise("smpp_lost", lost == 0, f"{lost} codes never reached the SMS centre")
    promise("smpp_flow_failures", not failures, "; ".join(failures[:3]))
    promise("smpp_sent", len(challenges) == len(card_ids), f"{len(challenges)} of {len(card_ids)} codes requested")
