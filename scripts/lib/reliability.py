"""The driver behind scripts/reliability: two issuerd instances on one PostgreSQL, under faults.

Test tooling only (Python standard library, never part of the product). scripts/reliability
prepares the database, the PKI, the secrets and the cards, then runs this file with everything
in the environment (RELIABILITY_* and ISSUERD_*). Each scenario prints its figures; the last
line is `reliability: name=value ...`, and the exit status is 1 when a figure breaks its promise.
"""

import hashlib
import hmac
import http.client
import http.server
import json
import os
import random
import re
import signal
import subprocess
import sys
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor

ENV = os.environ
WORK = ENV["RELIABILITY_WORK"]
BIN = ENV["RELIABILITY_BIN"]
QUICK = ENV.get("RELIABILITY_QUICK") == "1"
TOKENS = int(ENV["RELIABILITY_TOKENS"])
OUTAGE_SECONDS = float(ENV["RELIABILITY_OUTAGE_SECONDS"])
TSP_SECRET = ENV["ISSUERD_TSP_HMAC_SECRET"].encode()
NOTIFY_SECRET = ENV["RELIABILITY_NOTIFY_SECRET"].encode()
JWT_SECRET = ENV["ISSUERD_APP_JWT_SECRET"].encode()
ADMIN_KEY = ENV["RELIABILITY_ADMIN_KEY"]
CARDS = json.load(open(os.path.join(WORK, "cards.json")))  # cardId -> {pan, customerId}
LEAF = ENV["RELIABILITY_LEAF"]
INTERMEDIATE = ENV["RELIABILITY_INTERMEDIATE"]
REQUEST_TIMEOUT = 10.0
figures = {}  # name -> value, in the order they are set
broken = []  # promises broken, for the summary


def say(text):
    print(text, flush=True)


def promise(name, ok, detail):
    if not ok:
        broken.append(f"{name}: {detail}")
        say(f"  BROKEN {name}: {detail}")


# ---------------------------------------------------------------- HTTP client

_counter = [0]
_counter_lock = threading.Lock()


def next_number():
    with _counter_lock:
        _counter[0] += 1
        return _counter[0]


class Answer:
    def __init__(self, status, headers, body, elapsed, error=None):
        self.status, self.headers, self.body, self.elapsed, self.error = status, headers, body, elapsed, error

    def json(self):
        try:
            return json.loads(self.body or b"null")
        except ValueError:
            return None

    def error_code(self):
        value = self.json()
        return (value.get("error") or {}).get("code") if isinstance(value, dict) else None


def call(port, method, path, body=None, headers=None, timeout=REQUEST_TIMEOUT):
    """One request on a fresh connection; a transport failure is an Answer with status None."""
    started = time.monotonic()
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        data = body.encode() if isinstance(body, str) else body
        all_headers = {"Content-Type": "application/json"} if data is not None else {}
        all_headers.update(headers or {})
        connection.request(method, path, body=data, headers=all_headers)
        response = connection.getresponse()
        payload = response.read()
        return Answer(response.status, {k.lower(): v for k, v in response.getheaders()}, payload, time.monotonic() - started)
    except (OSError, http.client.HTTPException) as error:
        return Answer(None, {}, b"", time.monotonic() - started, error=type(error).__name__)
    finally:
        connection.close()


def tsp_headers(body, extra=None):
    timestamp = int(time.time())
    mac = hmac.new(TSP_SECRET, f"{timestamp}.".encode() + body.encode(), hashlib.sha256).hexdigest()
    headers = {"X-Issuerd-Signature": f"t={timestamp},v1={mac}"}
    headers.update(extra or {})
    return headers


def tsp_call(port, path, body, extra=None):
    return call(port, "POST", path, body, tsp_headers(body, extra))


def padded(obj):
    """JSON with trailing spaces so identical requests still carry distinct signatures (the replay guard)."""
    return json.dumps(obj, separators=(",", ":")) + " " * (next_number() % 997)


def app_token(customer_id):
    def b64(data):
        import base64
        return base64.urlsafe_b64encode(data).rstrip(b"=").decode()
    now = int(time.time())
    header = b64(b'{"alg":"HS256","typ":"JWT"}')
    claims = b64(json.dumps({"exp": now + 7200, "iat": now, "sub": customer_id}, sort_keys=True, separators=(",", ":")).encode())
    mac = hmac.new(JWT_SECRET, f"{header}.{claims}".encode(), hashlib.sha256).digest()
    return f"{header}.{claims}.{b64(mac)}"


def psql(sql):
    out = subprocess.run(["psql", "-X", "-q", "-tA", "-d", "issuerd", "-c", sql], capture_output=True, text=True, timeout=60)
    if out.returncode != 0:
        raise RuntimeError(f"psql failed: {out.stderr.strip()}")
    return [line for line in out.stdout.splitlines() if line != ""]


# ---------------------------------------------------------------- instances


class Instance:
    """One `issuerd serve` on its own port, restartable on that port."""

    def __init__(self, name, port, database_url=None):
        self.name, self.port, self.database_url = name, port, database_url
        self.process = None
        self.log = open(os.path.join(WORK, f"instance-{name}.log"), "ab")
        self.lock = threading.Lock()

    def start(self, wait=True):
        env = dict(ENV)
        env["ISSUERD_LISTEN"] = f"127.0.0.1:{self.port}"
        if self.database_url:
            env["ISSUERD_DATABASE_URL"] = self.database_url
        with self.lock:
            self.process = subprocess.Popen([BIN, "serve"], env=env, stdout=self.log, stderr=self.log, start_new_session=True)
        if wait:
            self.wait_ready(30)

    def wait_ready(self, seconds):
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if call(self.port, "GET", "/readyz", timeout=2).status == 200:
                return True
            time.sleep(0.05)
        return False

    def kill(self):
        with self.lock:
            if self.process and self.process.poll() is None:
                self.process.send_signal(signal.SIGKILL)
                self.process.wait()

    def stop(self):
        with self.lock:
            if self.process and self.process.poll() is None:
                self.process.terminate()
                try:
                    self.process.wait(10)
                except subprocess.TimeoutExpired:
                    self.process.kill()
                    self.process.wait()

    def alive(self):
        return self.process is not None and self.process.poll() is None


def free_port():
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# ---------------------------------------------------------------- webhook receiver


class Receiver:
    """The SMS gateway and the TSP in one: answers 200, 500 or slowly at random, records everything."""

    def __init__(self):
        self.lock = threading.Lock()
        self.mode = "chaos"  # or "ok"
        self.received = {}  # idempotency key -> deliveries seen
        self.accepted = {}  # idempotency key -> deliveries answered 200
        self.accepted_identity = {}  # event identity -> deliveries answered 200
        self.event_of_key = {}  # idempotency key -> set of event identities seen in bodies
        self.codes = {}  # challengeId -> code (only once a delivery was accepted)
        self.bad_signatures = 0
        self.answers = {"200": 0, "500": 0, "slow": 0}
        receiver = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_POST(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length)
                receiver.handle(self, body)

        class Server(http.server.ThreadingHTTPServer):
            def handle_error(self, request, client_address):
                # A dispatcher SIGKILLed mid-request resets its connection: expected here.
                if not isinstance(sys.exc_info()[1], OSError):
                    super().handle_error(request, client_address)

        self.server = Server(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @staticmethod
    def identity(path, obj):
        if path == "/notify":
            return ("notify", obj.get("challengeId"))
        return ("tsp", obj.get("tokenReference"), obj.get("action"))

    def handle(self, handler, body):
        secret = NOTIFY_SECRET if handler.path == "/notify" else TSP_SECRET
        signature = handler.headers.get("X-Issuerd-Signature") or ""
        match = re.fullmatch(r"t=(\d+),v1=([0-9a-f]{64})", signature)
        expected = match and hmac.new(secret, match.group(1).encode() + b"." + body, hashlib.sha256).hexdigest()
        key = handler.headers.get("Idempotency-Key") or ""
        try:
            obj = json.loads(body)
        except ValueError:
            obj = {}
        identity = self.identity(handler.path, obj)
        with self.lock:
            if not match or not hmac.compare_digest(expected, match.group(2)):
                self.bad_signatures += 1
            self.received[key] = self.received.get(key, 0) + 1
            self.event_of_key.setdefault(key, set()).add(identity)
            mode = self.mode
        roll = random.random() if mode == "chaos" else 0.0
        if roll < 0.15:
            status, kind = 500, "500"
        elif roll < 0.25:
            time.sleep(random.uniform(0.3, 1.6))  # sometimes past the dispatcher's 1 s timeout: a re-delivery follows
            status, kind = 200, "slow"
        else:
            status, kind = 200, "200"
        if mode != "chaos":
            status, kind = 200, "200"
        if status == 200:
            with self.lock:
                self.accepted[key] = self.accepted.get(key, 0) + 1
                self.accepted_identity[identity] = self.accepted_identity.get(identity, 0) + 1
                if identity[0] == "notify" and "code" in obj:
                    self.codes[obj["challengeId"]] = obj["code"]
        with self.lock:
            self.answers[kind] += 1
        try:
            handler.send_response(status)
            handler.send_header("Content-Length", "0")
            handler.end_headers()
        except OSError:
            pass  # the dispatcher gave up waiting; it will deliver again

    def code(self, challenge_id, seconds):
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            with self.lock:
                if challenge_id in self.codes:
                    return self.codes[challenge_id]
            time.sleep(0.05)
        return None

    def accepted_identities(self):
        with self.lock:
            return dict(self.accepted_identity)


# ---------------------------------------------------------------- shared steps


def other(instances, port):
    return next(i.port for i in instances if i.port != port)


def retrying(instances, attempt, seconds=90):
    """Runs `attempt(port)` until it returns an Answer that is not a transport failure, a 503 or an
    in-progress 409, switching instance on every failure (an instance may be down for a restart)."""
    port = random.choice(instances).port
    deadline = time.monotonic() + seconds
    answer = None
    while time.monotonic() < deadline:
        answer = attempt(port)
        in_progress = answer.status == 409 and answer.error_code() == "idempotency_key_reused" and b"still being processed" in answer.body
        if answer.status is not None and answer.status != 503 and not in_progress:
            return answer, port
        port = other(instances, port)
        # A new second: a new TSP signature (a request that reached the server before its
        # connection died has had its signature recorded; the same one again is a replay).
        time.sleep(1.1)
    return answer, port


def authorize_body(token_reference, card_id, device_id, request_id):
    card = CARDS[card_id]
    return json.dumps({
        "requestId": request_id, "tokenReference": token_reference, "tokenRequestorId": "40010030273", "tokenizationSource": "push",
        "card": {"accountNumber": card["pan"], "expiration": "12/30"},
        "device": {"id": device_id, "type": "phone", "name": "iPhone", "locale": "ko_KR"},
        "wallet": {"deviceScore": 4, "accountScore": 2, "phoneNumberScore": 4, "recommendedDecision": "APPROVED", "reasonCodes": []},
        "activeTokenCount": 0}, separators=(",", ":"))


def yellow_token(instances, token_reference, card_id):
    """A token awaiting verification: a TSP authorization the default rules step up (account score 2)."""
    request_id = str(uuid.uuid4())
    body = authorize_body(token_reference, card_id, "dev-" + token_reference, request_id)
    answer, _ = retrying(instances, lambda port: tsp_call(port, "/v1/tsp/tokenization/authorize", body, {"Idempotency-Key": request_id}))
    value = answer.json() or {}
    if answer.status != 200 or value.get("decision") != "REQUIRE_ADDITIONAL_AUTHENTICATION":
        raise RuntimeError(f"authorize {token_reference}: {answer.status} {answer.body[:300]!r}")
    return value


def request_code(instances, token_reference, key):
    body = json.dumps({"tokenReference": token_reference, "activationMethodId": "sms-1"}, separators=(",", ":"))
    answer, _ = retrying(instances, lambda port: tsp_call(port, "/v1/tsp/activation-codes", body, {"Idempotency-Key": key}))
    return answer


# ---------------------------------------------------------------- scenario 1: outbox under crashes


def scenario_outbox(instances, receiver):
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


# ---------------------------------------------------------------- scenarios 2, 5 and 6: the database away under load


class ProvisioningLoad:
    """Six loaders pushing provisioning requests at both instances (each request with its own
    Idempotency-Key and device) and a /readyz poller, while a fault is applied; then the checks
    the database scenarios share: a retry of every undecided request must replay a committed
    answer or decide it now, and no attempt may be lost, unanswered or stored twice."""

    def __init__(self, instances, prefix):
        self.instances, self.prefix = instances, prefix
        self.card_ids = [c for c in CARDS if c.startswith("out-card-")]
        self.records = []  # dicts: n, port, status, elapsed, t, code, retry_after
        self.readyz = []  # (t, port, status, elapsed)
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.tokens = {}
        self.timeout = REQUEST_TIMEOUT
        self.t0 = time.monotonic()

    def now(self):
        return time.monotonic() - self.t0

    def body(self, n):
        return json.dumps({
            "certificates": [LEAF, INTERMEDIATE], "nonce": "q83vEg==", "nonceSignature": "AAECAwQFBgcICQoLDA0ODw==",
            "encryptionScheme": "ECC_V2", "channel": "in_app",
            "device": {"type": "phone", "locale": "ko_KR", "id": f"{self.prefix}-dev-{n}"}}, separators=(",", ":"))

    def provision(self, port, n):
        card_id = self.card_ids[n % len(self.card_ids)]
        customer = CARDS[card_id]["customerId"]
        token = self.tokens.setdefault(customer, app_token(customer))
        return call(port, "POST", f"/v1/cards/{card_id}/apple-pay/provision", self.body(n),
                    {"Authorization": f"Bearer {token}", "Idempotency-Key": f"{self.prefix}-{n}"}, timeout=self.timeout)

    def run(self, fault, settle=6):
        """Load for 4 s, then `fault()` (which returns (fault_from, fault_until, healed_at) on
        this load's clock), then `settle` seconds more."""
        def loader(worker):
            index = 0
            while not self.stop.is_set():
                n = next_number()
                port = self.instances[(worker + index) % len(self.instances)].port
                index += 1
                answer = self.provision(port, n)
                with self.lock:
                    self.records.append({"n": n, "port": port, "status": answer.status, "elapsed": answer.elapsed,
                                         "t": self.now(), "code": answer.error_code(), "error": answer.error,
                                         "retry_after": answer.headers.get("retry-after"),
                                         "json": answer.headers.get("content-type", "").startswith("application/json")})
                time.sleep(0.02)

        def poller():
            while not self.stop.is_set():
                for instance in self.instances:
                    answer = call(instance.port, "GET", "/readyz", timeout=REQUEST_TIMEOUT)
                    self.readyz.append((self.now(), instance.port, answer.status, answer.elapsed))
                time.sleep(0.2)

        threads = [threading.Thread(target=loader, args=(w,), daemon=True) for w in range(6)] + [threading.Thread(target=poller, daemon=True)]
        for thread in threads:
            thread.start()
        time.sleep(4)
        window = fault()
        time.sleep(settle)
        self.stop.set()
        for thread in threads:
            thread.join()
        return window

    def stored_attempts(self):
        stored = {}
        marker = f"{self.prefix}-dev-"
        for line in psql(f"SELECT device_id, count(*) FROM provisioning_attempts WHERE device_id LIKE '{marker}%' GROUP BY device_id"):
            device, count = line.split("|")
            stored[int(device.removeprefix(marker))] = int(count)
        return stored

    def check(self, fault_from, fault_until, healed_at, slow_after, label, cut_ports=None, slow_after_by_port=None):
        """Prints and records the figures; `slow_after` is the promise on every answer's time
        (`slow_after_by_port` overrides it per instance). The fault's own figures (503s, readyz)
        count only the instances on `cut_ports` (default: all)."""
        records, readyz = self.records, self.readyz
        cut = set(cut_ports or [instance.port for instance in self.instances])
        bound = dict(slow_after_by_port or {})
        # While the database was certainly away: every provisioning answer a 503 envelope with Retry-After.
        during = [r for r in records if r["port"] in cut and r["t"] >= fault_from and r["t"] <= fault_until and r["t"] - r["elapsed"] >= fault_from]
        bad_503 = [r for r in during if not (r["status"] == 503 and r["code"] == "database_unavailable" and r["retry_after"] and r["json"])]
        other_5xx = [r for r in records if r["status"] is not None and r["status"] >= 500 and r["status"] != 503]
        transport = [r for r in records if r["status"] is None]
        slow = [r for r in records if r["elapsed"] > bound.get(r["port"], slow_after)] + [x for x in readyz if x[3] > bound.get(x[1], slow_after)]
        max_latency = max([r["elapsed"] for r in records] + [x[3] for x in readyz])
        ready_while_down = [x for x in readyz if x[1] in cut and fault_from <= x[0] - x[3] and x[0] <= fault_until and x[2] == 200]
        readyz_5xx = [x for x in readyz if x[2] is not None and x[2] >= 500 and x[2] != 503]
        recovery = {}
        for instance in self.instances:
            ok = [r["t"] for r in records if r["port"] == instance.port and r["status"] == 200 and r["t"] - r["elapsed"] >= healed_at]
            recovery[instance.name] = (min(ok) - healed_at) if ok else None
        recovered = [v for v in recovery.values() if v is not None]
        recovery_s = max(recovered) if len(recovered) == len(self.instances) else None

        # A request the client saw no decision for (503, lost connection) may still have committed:
        # the acknowledgement died with the connection. The client's retry with the same
        # Idempotency-Key must then replay that answer, not provision twice. Retry every such
        # request, and a sample of the others (which must simply be decided now).
        decided = {r["n"]: r["status"] for r in records if r["status"] in (200, 403)}
        first = {r["n"]: r for r in records}
        before = self.stored_attempts()
        undecided = [n for n in first if n not in decided]
        ambiguous = [n for n in undecided if n in before]
        sample = random.sample([n for n in undecided if n not in before], min(40, len(undecided) - len(ambiguous)))
        replayed = [0]

        def retry(n):
            answer, _ = retrying(self.instances, lambda port: self.provision(port, n), seconds=60)
            if answer and answer.status in (200, 403):
                decided[n] = answer.status
                if answer.headers.get("idempotent-replayed") == "true":
                    replayed[0] += 1

        with ThreadPoolExecutor(8) as pool:
            list(pool.map(retry, ambiguous + sample))
        stored = self.stored_attempts()
        answered = set(decided)
        lost_ack = sorted(n for n, r in first.items() if r["status"] == 200 and n not in stored)
        unanswered = sorted(n for n in stored if n not in answered)
        twice = sorted(n for n, count in stored.items() if count > 1)
        replayed = replayed[0]
        statuses = {}
        for r in records:
            statuses[str(r["status"])] = statuses.get(str(r["status"]), 0) + 1
        say(f"  {len(records)} provisioning requests by status {statuses}; readyz polls {len(readyz)}")
        say(f"  while {label} ({fault_until - fault_from:.1f} s): {len(during)} answers, {len(bad_503)} not a 503 envelope with Retry-After; "
            f"readyz 200 meanwhile: {len(ready_while_down)}")
        limits = f"{slow_after:.0f} s" + "".join(f", {name} {bound[port]:.0f} s" for port, name in
                                                 ((i.port, i.name) for i in self.instances) if port in bound)
        say(f"  5xx other than 503: {len(other_5xx) + len(readyz_5xx)}, transport failures {len(transport)}, over {limits}: {len(slow)}, "
            f"slowest {max_latency:.2f} s")
        say(f"  recovery after the database was back: "
            + ", ".join(f"{k} {v:.2f} s" if v is not None else f"{k} never" for k, v in recovery.items()))
        say(f"  {len(undecided)} requests got no decision; {len(ambiguous)} of them had committed (acknowledgement lost)")
        say(f"  retried those {len(ambiguous)} and {len(sample)} others with their Idempotency-Key: {replayed} replayed the committed answer")
        say(f"  attempts stored {sum(stored.values())}, requests decided {len(answered)}: acknowledged but missing {len(lost_ack)}, "
            f"stored but never answered {len(unanswered)}, stored twice {len(twice)}")
        return {"5xx": len(other_5xx) + len(readyz_5xx), "503": statuses.get("503", 0), "bad_503": len(bad_503),
                "hung": len(slow) + len(transport), "max_latency_s": round(max_latency, 2),
                "readyz_up_while_down": len(ready_while_down),
                "recovery_s": round(recovery_s, 2) if recovery_s is not None else "never",
                "lost_acknowledged": len(lost_ack), "unanswered_attempts": len(unanswered), "duplicate_attempts": len(twice),
                "ambiguous_commits": len(ambiguous), "replayed": replayed,
                "_details": (other_5xx, readyz_5xx, bad_503, during, slow, transport, ready_while_down, recovery, lost_ack,
                             unanswered, twice, ambiguous)}


def promise_database_figures(prefix, found, slow_after):
    """The promises of the database scenarios; `prefix` names the figures of the partition and the split."""
    (other_5xx, readyz_5xx, bad_503, during, slow, transport, ready_while_down, recovery, lost_ack, unanswered, twice,
     ambiguous) = found.pop("_details")
    figures.update({f"{prefix}{k}": v for k, v in found.items()})
    promise(f"{prefix}5xx", not other_5xx and not readyz_5xx, "answers 5xx other than 503")
    promise(f"{prefix}bad_503", not bad_503 and during, "answers while the database was away that were not 503 database_unavailable with Retry-After")
    promise(f"{prefix}hung", not slow and not transport, f"{len(slow)} answers over their bound ({slow_after:.0f} s for the cut), {len(transport)} transport failures")
    promise(f"{prefix}readyz_up_while_down", not ready_while_down, "/readyz said ready while the database was away")
    promise(f"{prefix}recovery_s", found["recovery_s"] != "never" and found["recovery_s"] <= 5.0, f"recovery {recovery}")
    promise(f"{prefix}lost_acknowledged", not lost_ack, f"acknowledged attempts missing: {lost_ack[:5]}")
    promise(f"{prefix}unanswered_attempts", not unanswered, f"attempts stored but never answered: {unanswered[:5]}")
    promise(f"{prefix}duplicate_attempts", not twice, f"requests stored twice: {twice[:5]}")
    promise(f"{prefix}replayed", found["replayed"] == len(ambiguous),
            f"only {found['replayed']} of {len(ambiguous)} committed-but-unacknowledged requests replayed")


def scenario_outage(instances):
    say(f"== PostgreSQL outage under load: provisioning on both instances, fast shutdown for {OUTAGE_SECONDS:.0f} s")
    load = ProvisioningLoad(instances, "out")

    def fault():
        say("  stopping PostgreSQL (fast shutdown)")
        down_begin = load.now()
        subprocess.run(["bash", "-c", 'source scripts/lib/common.sh; source scripts/lib/postgres.sh; pg_stop "$1"', "_", ENV["RELIABILITY_PG_DIR"]], check=True)
        down_from = load.now()
        time.sleep(max(0.0, OUTAGE_SECONDS - (down_from - down_begin)))
        down_until = load.now()
        say(f"  starting PostgreSQL again after {down_until - down_begin:.1f} s")
        subprocess.run(["bash", "-c", 'source scripts/lib/common.sh; source scripts/lib/postgres.sh; pg_start "$1" "$2"', "_",
                        ENV["RELIABILITY_PG_DIR"], ENV["PGPORT"]], check=True)
        return down_from, down_until, load.now()

    down_from, down_until, back_at = load.run(fault)
    promise_database_figures("", load.check(down_from, down_until, back_at, 5.0, "down"), 5.0)


PARTITION_TABLE = "issuerd_reliability_partition"
PARTITION_BOUND_S = 6.0  # ISSUERD_DB_DEAD_PEER_TIMEOUT (3 s) + one reconnect attempt (libpq's 2 s minimum) + slack


def scenario_partition(instances):
    """PostgreSQL's TCP port silently dropped in both directions (nftables in this run's own
    network namespace): no reset, no FIN, so only a timeout can notice. Requests must still be
    answered 503 within PARTITION_BOUND_S, and everything must recover once the path is back."""
    port = ENV["PGPORT"]
    say(f"== network partition under load: PostgreSQL's TCP port {port} silently dropped for {OUTAGE_SECONDS:.0f} s (no reset)")
    load = ProvisioningLoad(instances, "part")

    def nft(*words):
        subprocess.run(["nft", *words], check=True)

    def fault():
        nft("add", "table", "inet", PARTITION_TABLE)
        nft("add", "chain", "inet", PARTITION_TABLE, "input", "{ type filter hook input priority 0; policy accept; }")
        nft("add", "rule", "inet", PARTITION_TABLE, "input", "tcp", "dport", port, "drop")
        nft("add", "rule", "inet", PARTITION_TABLE, "input", "tcp", "sport", port, "drop")
        cut_at = load.now()
        time.sleep(OUTAGE_SECONDS)
        nft("delete", "table", "inet", PARTITION_TABLE)
        healed_at = load.now()
        say(f"  path restored after {healed_at - cut_at:.1f} s")
        # Requests started before the cut, or within the dead-peer timeout after it, may still
        # have reached a live connection; answers are counted from there on.
        return cut_at + PARTITION_BOUND_S, healed_at, healed_at

    try:
        window = load.run(fault, settle=8)
    finally:
        subprocess.run(["nft", "delete", "table", "inet", PARTITION_TABLE], capture_output=True)
    promise_database_figures("partition_", load.check(*window, PARTITION_BOUND_S, "partitioned"), PARTITION_BOUND_S)


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


def scenario_split(instances):
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

    def nft(*words):
        subprocess.run(["nft", *words], check=True)

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


# ---------------------------------------------------------------- scenario 3: one code, two instances


def scenario_race(instances, receiver):
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


# ---------------------------------------------------------------- scenario 4: schema fuzzing


def scenario_fuzz():
    say("== schema fuzzing (scripts/fuzz-api)")
    script = os.path.join(ENV["ISSUERD_ROOT"], "scripts", "fuzz-api")
    if not os.access(script, os.X_OK):
        say("  skipped: scripts/fuzz-api missing")
        figures.update(schema_cases="skipped", schema_failures="skipped")
        return
    command = [script] + (["--quick"] if QUICK else [])
    # Its own PostgreSQL and instance: none of this run's settings may leak into it.
    clean = {k: v for k, v in ENV.items() if not k.startswith(("ISSUERD_", "RELIABILITY_", "PG"))}
    process = subprocess.run(command, capture_output=True, text=True, env=clean, cwd=ENV["ISSUERD_ROOT"])
    lines = [line for line in process.stdout.splitlines() if line.strip()]
    last = lines[-1] if lines else ""
    match = re.fullmatch(r"fuzz: cases=(\d+) failures=(\d+)", last.strip())
    for line in lines[-5:]:
        say(f"  {line}")
    if not match:
        say(f"  scripts/fuzz-api exited {process.returncode} without a 'fuzz: cases=N failures=M' line")
        say("\n".join("  " + line for line in process.stderr.splitlines()[-10:]))
        figures.update(schema_cases="error", schema_failures="error")
        promise("schema_failures", False, "scripts/fuzz-api gave no result line")
        return
    cases, failures = int(match.group(1)), int(match.group(2))
    figures.update(schema_cases=cases, schema_failures=failures)
    promise("schema_failures", failures == 0 and process.returncode == 0, f"{failures} failures (exit {process.returncode})")


# ---------------------------------------------------------------- main


def pan_in_logs():
    pans = [card["pan"] for card in CARDS.values()]
    found = 0
    for name in os.listdir(WORK):
        if name.startswith("instance-") and name.endswith(".log"):
            text = open(os.path.join(WORK, name), encoding="utf-8", errors="replace").read()
            found += sum(1 for pan in pans if pan in text)
    return found


def main():
    receiver = Receiver()
    ENV["ISSUERD_NOTIFY_WEBHOOK_URL"] = f"http://127.0.0.1:{receiver.port}/notify"
    ENV["ISSUERD_TSP_WEBHOOK_URL"] = f"http://127.0.0.1:{receiver.port}/tsp"
    scenarios = ENV.get("RELIABILITY_SCENARIOS", "outbox,outage,race,fuzz").split(",")
    database_a = None
    if "split" in scenarios:
        # A reaches the server through another loopback address, so that the split cuts its path alone.
        database_a = ENV["ISSUERD_DATABASE_URL"].replace("host=127.0.0.1", f"host={SPLIT_ADDRESS}") + f" application_name={SPLIT_APPLICATION}"
        assert database_a != ENV["ISSUERD_DATABASE_URL"], "the split scenario needs the database over TCP on 127.0.0.1"
    instances = [Instance("A", free_port(), database_a), Instance("B", free_port())]
    started = time.monotonic()
    try:
        for instance in instances:
            instance.start()
        say(f"two instances on one database: A on port {instances[0].port}, B on port {instances[1].port}; receiver on {receiver.port}")
        if "outbox" in scenarios:
            scenario_outbox(instances, receiver)
        if "outage" in scenarios:
            scenario_outage(instances)
        if "partition" in scenarios:
            scenario_partition(instances)
        if "split" in scenarios:
            scenario_split(instances)
        if "race" in scenarios:
            scenario_race(instances, receiver)
        if "fuzz" in scenarios:
            scenario_fuzz()
        leaked = pan_in_logs()
        figures["pan_in_logs"] = leaked
        promise("pan_in_logs", leaked == 0, f"{leaked} PANs found in the instances' logs")
    finally:
        for instance in instances:
            instance.stop()
        receiver.server.shutdown()
    figures["seconds"] = round(time.monotonic() - started)
    say("reliability: " + " ".join(f"{k}={v}" for k, v in figures.items()))
    if broken:
        say("promises broken: " + "; ".join(broken))
        sys.exit(1)


if __name__ == "__main__":
    main()
