"""The harness every phase of scripts/reliability shares: the run's settings (from the environment
scripts/reliability prepares), the figures and the promises, the HTTP client, the two issuerd
instances, the webhook receiver, the token steps, and the provisioning load under which the
database phases (outage, partition, split) apply their fault.

Test tooling only (Python standard library, never part of the product).
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
    claims = b64(json.dumps({"exp": now + 3600, "iat": now, "sub": customer_id}, sort_keys=True, separators=(",", ":")).encode())
    mac = hmac.new(JWT_SECRET, f"{header}.{claims}".encode(), hashlib.sha256).digest()
    return f"{header}.{claims}.{b64(mac)}"


def psql(sql):
    # RELIABILITY_PSQL_TARGET: a conninfo instead of the database name (scripts/failover: the leader).
    target = ENV.get("RELIABILITY_PSQL_TARGET") or "issuerd"
    out = subprocess.run(["psql", "-X", "-q", "-tA", "-d", target, "-c", sql], capture_output=True, text=True, timeout=60)
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


# ---------------------------------------------------------------- the database away under load (outage, partition, split)

# How long an instance cut off from PostgreSQL may take to answer (partition, split):
PARTITION_BOUND_S = 6.0  # ISSUERD_DB_DEAD_PEER_TIMEOUT (3 s) + one reconnect attempt (libpq's 2 s minimum) + slack


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
        say("  recovery after the database was back: "
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


def nft(*words):
    """nft in this run's own network namespace (partition, split: root)."""
    subprocess.run(["nft", *words], check=True)


# ---------------------------------------------------------------- after the phases


def pan_in_logs():
    pans = [card["pan"] for card in CARDS.values()]
    found = 0
    for name in os.listdir(WORK):
        if name.startswith("instance-") and name.endswith(".log"):
            text = open(os.path.join(WORK, name), encoding="utf-8", errors="replace").read()
            found += sum(1 for pan in pans if pan in text)
    return found
