"""What the drills share: the cards they import, the issuerd instances they start, and the load:
TSP tokenization authorizations (each one an attempt, and for the approved ones a token and an
audit entry, in one transaction), each with its own token reference and Idempotency-Key, sent by
a few workers over kept-alive connections, directly or through nginx with a client certificate.
"""

import hashlib
import hmac
import http.client
import json
import os
import random
import signal
import socket
import ssl
import subprocess
import threading
import time
import uuid


def say(text):
    print(text, flush=True)


def luhn(rng):
    digits = "4" + "".join(rng.choice("0123456789") for _ in range(14))
    total = 0
    for i, d in enumerate(reversed(digits + "0")):
        n = int(d)
        if i % 2 == 1:
            n = n * 2 - (9 if n * 2 > 9 else 0)
        total += n
    return digits + str((10 - total % 10) % 10)


def write_cards(count, directory):
    """DIR/cards.jsonl for `issuerd cards import`, DIR/cards.json (cardId -> PAN) for the load."""
    rng, seen, cards = random.Random(), set(), {}
    with open(os.path.join(directory, "cards.jsonl"), "w") as out:
        for i in range(count):
            pan = luhn(rng)
            while pan in seen:
                pan = luhn(rng)
            seen.add(pan)
            card_id, customer = f"drill-card-{i}", f"drill-cust-{i // 2}"
            cards[card_id] = pan
            out.write(json.dumps({
                "cardId": card_id, "customerId": customer, "accountNumber": pan, "expiration": "12/30",
                "cardholderName": "DRILL USER", "paymentNetwork": "visa", "country": "KR",
                "customer": {"customerId": customer, "phoneNumber": "+821012345678", "email": f"{customer}@example.com",
                             "phoneChangedAt": "2020-01-01T00:00:00Z", "emailChangedAt": "2020-01-01T00:00:00Z",
                             "addressChangedAt": "2020-01-01T00:00:00Z"}}) + "\n")
    with open(os.path.join(directory, "cards.json"), "w") as out:
        json.dump(cards, out)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(port, path, timeout=2.0):
    """The status of GET path straight at an instance, None when nothing answers."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        connection.request("GET", path)
        response = connection.getresponse()
        response.read()
        return response.status
    except (OSError, http.client.HTTPException):
        return None
    finally:
        connection.close()


class Instance:
    """One `issuerd serve` on a fixed port, its output in WORK/instance-NAME.log."""

    def __init__(self, name, binary, port, work, environment=None):
        self.name, self.binary, self.port = name, binary, port
        self.environment = environment or {}
        self.log_path = os.path.join(work, f"instance-{name}.log")
        self.process = None

    def start(self, seconds=60):
        env = dict(os.environ)
        env.update(self.environment)
        env["ISSUERD_LISTEN"] = f"127.0.0.1:{self.port}"
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen([self.binary, "serve"], env=env, stdout=log, stderr=log, start_new_session=True)
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"instance {self.name} exited with {self.process.returncode}: {self.tail()}")
            if get(self.port, "/readyz") == 200:
                return
            time.sleep(0.05)
        raise RuntimeError(f"instance {self.name} not ready within {seconds} s: {self.tail()}")

    def stop(self):
        """SIGTERM: it stops accepting, finishes in-flight requests and exits."""
        if self.process and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def tail(self, lines=5):
        try:
            with open(self.log_path, errors="replace") as log:
                return " | ".join(log.read().splitlines()[-lines:])
        except OSError:
            return ""


class Endpoint:
    """Where the load goes: an instance's port, or nginx over TLS with a client certificate."""

    def __init__(self, port, client_cert=None, client_key=None):
        self.port, self.context = port, None
        if client_cert:
            self.context = ssl.create_default_context()
            self.context.check_hostname = False
            self.context.verify_mode = ssl.CERT_NONE
            self.context.load_cert_chain(client_cert, client_key)

    def connect(self, timeout):
        if self.context:
            return http.client.HTTPSConnection("127.0.0.1", self.port, timeout=timeout, context=self.context)
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)


class Load:
    """Workers sending TSP authorizations until stopped. Each record: n, the token reference,
    the wall-clock time sent and answered (time.time()), the status (None: no answer) and the
    decision. An answer with a decision is an acknowledged attempt."""

    def __init__(self, endpoint, cards, secret, prefix, workers=4, timeout=20.0):
        self.endpoint, self.cards, self.secret, self.prefix = endpoint, cards, secret.encode(), prefix
        self.card_ids = sorted(cards)
        self.workers, self.timeout = workers, timeout
        self.records, self.lock = [], threading.Lock()
        self.counter = 0
        self.stopping = threading.Event()
        self.threads = []

    def next_number(self):
        with self.lock:
            self.counter += 1
            return self.counter

    def body(self, n):
        card_id = self.card_ids[n % len(self.card_ids)]
        return json.dumps({
            "requestId": str(uuid.uuid4()), "tokenReference": f"{self.prefix}-{n}", "tokenRequestorId": "40010030273",
            "tokenizationSource": "push", "card": {"accountNumber": self.cards[card_id], "expiration": "12/30"},
            "device": {"id": f"{self.prefix}-dev-{n}", "type": "phone", "name": "iPhone", "locale": "ko_KR"},
            "wallet": {"deviceScore": 4, "accountScore": 4, "phoneNumberScore": 4, "recommendedDecision": "APPROVED",
                       "reasonCodes": []},
            "activeTokenCount": 0}, separators=(",", ":"))

    def headers(self, body):
        timestamp = int(time.time())
        mac = hmac.new(self.secret, f"{timestamp}.".encode() + body.encode(), hashlib.sha256).hexdigest()
        return {"Content-Type": "application/json", "X-Issuerd-Signature": f"t={timestamp},v1={mac}",
                "Idempotency-Key": json.loads(body)["requestId"]}

    def worker(self):
        connection, reused = None, False
        while not self.stopping.is_set():
            n = self.next_number()
            body = self.body(n)
            record = {"n": n, "ref": f"{self.prefix}-{n}", "sent": time.time(), "acked": None, "status": None,
                      "decision": None, "error": None, "retried": False}
            while True:
                try:
                    if connection is None:
                        connection, reused = self.endpoint.connect(self.timeout), False
                    connection.request("POST", "/v1/tsp/tokenization/authorize", body=body, headers=self.headers(body))
                    response = connection.getresponse()
                    payload = response.read()
                    reused = True
                    record["status"] = response.status
                    if response.status == 200:
                        record["decision"] = (json.loads(payload or b"{}") or {}).get("decision")
                        record["acked"] = time.time()
                    else:
                        record["error"] = payload[:200].decode(errors="replace")
                    if response.getheader("connection", "").lower() == "close":
                        connection.close()
                        connection = None
                    break
                except (OSError, http.client.HTTPException, ValueError) as error:
                    record["error"] = type(error).__name__
                    if connection is not None:
                        connection.close()
                    connection, was_reused = None, reused
                    # A kept-alive connection the server closed as the request went out (nginx's
                    # old workers close idle ones on a reload): sent again once on a new one, as
                    # HTTP clients do for a request with an Idempotency-Key (Go's net/http, for
                    # one), in the next second so that its TSP signature is a new one.
                    if not was_reused or record["retried"]:
                        break
                    record["retried"] = True
                    time.sleep(1.0 - time.time() % 1.0 + 0.01)
            with self.lock:
                self.records.append(record)
            time.sleep(0.01)
        if connection is not None:
            connection.close()

    def start(self):
        self.threads = [threading.Thread(target=self.worker, daemon=True) for _ in range(self.workers)]
        for thread in self.threads:
            thread.start()

    def stop(self):
        self.stopping.set()
        for thread in self.threads:
            thread.join()
        return self.records
