"""Schema fuzzing of a running issuerd with Schemathesis (test tooling, never part of the product).

Run by scripts/fuzz-api, which starts the throwaway PostgreSQL and the server and passes their
coordinates in the environment. For every operation of docs/openapi.yaml and every role its
security allows (issuer-app JWT, TSP signature, admin, analyst and ivr API keys; an admin-only
operation is also called with an analyst key, which must be a clean 403) it generates positive
and negative cases with Hypothesis, sends each one and validates the answer against the
contract. Failures are collected, not raised, so one run reports every distinct mismatch.

The last line printed is `fuzz: cases=<N> failures=<M>`; the exit status is 1 when M > 0.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import hmac
import json
import os
import random
import subprocess
import sys
import time
import uuid
from collections import Counter, defaultdict

import requests
import schemathesis
from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis import strategies as st
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
    response_headers_conformance,
]
TSP_HEADER = "X-Issuerd-Signature"


def env(name: str) -> str:
    value = os.environ.get(name)
    if not value:
        sys.exit(f"fuzz_api: {name} is not set (run scripts/fuzz-api, not this file)")
    return value


def luhn_complete(prefix: str) -> str:
    """`prefix` plus the Luhn check digit."""
    total = 0
    for i, d in enumerate(reversed(prefix + "0")):
        n = int(d)
        if i % 2 == 1:
            n *= 2
            n -= 9 if n > 9 else 0
        total += n
    return prefix + str((10 - total % 10) % 10)


class SigningSession(requests.Session):
    """Signs every request body it sends as a TSP would (`X-Issuerd-Signature`, docs/openapi.yaml's `tspSignature`).

    The signature covers the exact bytes on the wire, so it is computed on the prepared request.
    The server refuses a signature it has already seen (replay guard), and Hypothesis often sends
    the same body twice within a second, so each (timestamp, body) pair is used once: a repeated
    body is signed with an earlier second, still well inside the 300 s window.
    """

    def __init__(self, secret: str) -> None:
        super().__init__()
        self.secret = secret.encode()
        self.used: set[tuple[int, bytes]] = set()

    def send(self, request, **kwargs):  # type: ignore[override]
        body = request.body or b""
        if isinstance(body, str):
            body = body.encode()
        digest = hashlib.sha256(body).digest()
        t = int(time.time())
        while (t, digest) in self.used:
            t -= 1
        self.used.add((t, digest))
        mac = hmac.new(self.secret, f"{t}.".encode() + body, hashlib.sha256).hexdigest()
        request.headers[TSP_HEADER] = f"t={t},v1={mac}"
        return super().send(request, **kwargs)


class Fixture:
    """The data the fuzzer seeds through the API so ids in paths and bodies reach real handlers."""

    def __init__(self) -> None:
        self.customers: list[str] = []
        self.cards: list[dict] = []  # {cardId, customerId, accountNumber, expiration}
        self.tokens: list[str] = []
        self.token_shares: dict[str, list[str]] = {}  # operation path -> the seeded tokens it uses
        self.token_owner: dict[str, str] = {}  # token reference -> customer id
        self.rule_files: dict[str, str] = {}  # rules/policy/*.rules, for backtests that compile
        self.attempts: list[str] = []
        self.method_ids: list[str] = ["sms-1", "ars-1", "email-1", "app-1"]
        self.messages: list[str] = []
        self.app_tokens: dict[str, str] = {}
        self.certificates: list[str] = []  # the development PKI's leaf and sub-CA, base64 DER


class Fuzzer:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.base_url = args.base_url.rstrip("/")
        self.keys = {
            "admin": env("ISSUERD_FUZZ_ADMIN_KEY"),
            "analyst": env("ISSUERD_FUZZ_ANALYST_KEY"),
            "ivr": env("ISSUERD_FUZZ_IVR_KEY"),
        }
        self.tsp_session = SigningSession(env("ISSUERD_TSP_HMAC_SECRET"))
        self.plain_session = requests.Session()
        self.fixture = Fixture()
        self.cases = 0
        self.failures: list[dict] = []
        self.statuses: dict[str, Counter] = defaultdict(Counter)
        self.run_tag = uuid.uuid4().hex[:8]
        self.refusals: Counter = Counter()  # ISSUERD_FUZZ_SHOW=1: positive cases the server refused, by answer

    # ---- seeding ---------------------------------------------------------------------------

    def admin(self, method: str, path: str, body: dict | None = None) -> requests.Response:
        return self.plain_session.request(
            method, self.base_url + path, json=body, timeout=30,
            headers={"Authorization": f"Bearer {self.keys['admin']}"})

    def tsp(self, path: str, body: dict) -> requests.Response:
        return self.tsp_session.post(self.base_url + path, data=json.dumps(body).encode(), timeout=30,
                                     headers={"Content-Type": "application/json"})

    def seed(self) -> None:
        rng = random.Random(self.args.seed)
        fx = self.fixture
        for c in range(4):
            customer = f"fuzz-{self.run_tag}-c{c}"
            body = {"customerId": customer, "phoneNumber": f"+8210{rng.randrange(10**7, 10**8)}",
                    "email": f"{customer}@example.com", "phoneChangedAt": "2020-01-01T00:00:00Z",
                    "emailChangedAt": "2020-01-01T00:00:00Z", "addressChangedAt": "2020-01-01T00:00:00Z"}
            r = self.admin("POST", "/v1/admin/customers", body)
            if r.status_code not in (200, 201):
                sys.exit(f"fuzz_api: seeding customer answered {r.status_code}: {r.text[:300]}")
            fx.customers.append(customer)
            for k in range(4):
                pan = luhn_complete("4" + "".join(rng.choice("0123456789") for _ in range(14)))
                card = {"cardId": f"{customer}-card{k}", "customerId": customer, "accountNumber": pan,
                        "expiration": "12/30", "cardholderName": "FUZZ USER", "paymentNetwork": "visa", "country": "KR"}
                r = self.admin("POST", "/v1/admin/cards", card)
                if r.status_code != 201:
                    sys.exit(f"fuzz_api: seeding card answered {r.status_code}: {r.text[:300]}")
                fx.cards.append(card)
        # Tokens: one TSP authorization per card, half of them asking for step-up so that
        # activation-code and In-App Verification operations find tokens awaiting verification.
        for i, card in enumerate(fx.cards):
            wallet = {"deviceScore": 5, "accountScore": 5, "phoneNumberScore": 5, "recommendedDecision": "APPROVED"}
            if i % 2 == 1:
                wallet = {"deviceScore": 2, "accountScore": 3, "recommendedDecision": "REQUIRE_ADDITIONAL_AUTHENTICATION"}
            token = f"tok-{self.run_tag}-{i}"
            body = {"requestId": f"req-{self.run_tag}-{i}", "tokenReference": token, "tokenizationSource": "manual",
                    "card": {"accountNumber": card["accountNumber"], "expiration": card["expiration"]},
                    "device": {"id": f"dev-{self.run_tag}-{i}", "type": "phone", "locale": "ko_KR"}, "wallet": wallet}
            r = self.tsp("/v1/tsp/tokenization/authorize", body)
            if r.status_code != 200:
                sys.exit(f"fuzz_api: seeding token answered {r.status_code}: {r.text[:300]}")
            answer = r.json()
            fx.attempts.append(answer["attemptId"])
            fx.tokens.append(token)
            fx.token_owner[token] = card["customerId"]
            fx.method_ids.extend(m["id"] for m in answer.get("activationMethods", []))
            for m in answer.get("activationMethods", []):
                if m["type"] in ("sms", "ars", "email"):
                    self.tsp("/v1/tsp/activation-codes", {"tokenReference": token, "activationMethodId": m["id"]})
                    break
        fx.method_ids = sorted(set(fx.method_ids))
        policy = os.path.join(os.path.dirname(os.path.abspath(self.args.schema)), "..", "rules", "policy")
        for name in sorted(os.listdir(policy)):
            if name.endswith(".rules"):
                with open(os.path.join(policy, name), encoding="utf-8") as handle:
                    fx.rule_files[f"policy/{name}"] = handle.read()
        operations = ["/v1/wallet/verifications", "/v1/tsp/activation-codes", "/v1/tsp/activation-codes/verify", "/v1/tsp/token-events"]
        share = len(fx.tokens) // len(operations)  # consecutive tokens: both step-up and not in each share
        for index, path in enumerate(operations):
            fx.token_shares[path] = fx.tokens[index * share:(index + 1) * share] or fx.tokens
        pki = os.environ.get("ISSUERD_FUZZ_PKI")
        if pki:
            fx.certificates = [base64.b64encode(open(os.path.join(pki, name), "rb").read()).decode()
                               for name in ("leaf-ecc.der", "intermediate.der")]
        for customer in fx.customers:
            out = subprocess.run([self.args.issuerd, "dev", "token", "--customer", customer, "--ttl", "1h"],
                                 check=True, capture_output=True, text=True).stdout.strip().splitlines()
            fx.app_tokens[customer] = out[-1]
        # A dead-lettered outbox message, so the re-queue operation reaches its handler.
        psql = ["psql", "-X", "-q", "-tA", "-d", os.environ.get("ISSUERD_FUZZ_DBNAME", "issuerd"), "-c"]
        ids = subprocess.run(psql + ["UPDATE outbox SET status = 'dead', last_error = 'seeded by fuzz-api' "
                                     "WHERE id IN (SELECT id FROM outbox ORDER BY id LIMIT 2) RETURNING id"],
                             check=True, capture_output=True, text=True).stdout.split()
        fx.messages = [i for i in ids if i.strip()] or ["1"]
        if os.environ.get("ISSUERD_FUZZ_SHOW"):  # what the seeded data looks like, for contract work
            for attempt in fx.attempts[:2]:
                print(f"fuzz: attempt {attempt}: {self.admin('GET', '/v1/admin/attempts/' + attempt).text}")
        print(f"fuzz: seeded {len(fx.customers)} customers, {len(fx.cards)} cards, {len(fx.tokens)} tokens, "
              f"{len(fx.attempts)} attempts, {len(fx.messages)} dead-lettered messages", flush=True)

    # ---- generation -----------------------------------------------------------------------

    @staticmethod
    def roles_for(operation) -> list[str]:
        security = operation.definition.raw.get("security")
        if security is None:
            security = operation.schema.raw_schema.get("security", [])
        roles: list[str] = []
        for requirement in security:
            for scheme, scopes in requirement.items():
                if scheme == "bearerAuth":
                    roles.append("app")
                elif scheme == "tspSignature":
                    roles.append("tsp")
                elif scheme == "apiKey":
                    roles.extend(scopes)
        if not security:
            roles.append("none")
        if roles == ["admin"]:
            roles.append("analyst")  # a valid key whose role may not call it: must be a clean 403
        if "none" not in roles:
            roles.append("anonymous")  # no credentials at all: must be refused
        return roles



    def personalise(self, case, role: str, choice: random.Random) -> str | None:
        """Points about two cases in three at seeded data; the rest keep Hypothesis' values.

        Returns the customer whose app token to send (the owner of the chosen card), if any.
        The choice is a random.Random seeded per case from Hypothesis' draw, so runs repeat.
        """
        fx = self.fixture
        # Schemathesis fills the `tspSignature` scheme's header itself (it is an apiKey-in-header
        # scheme); only the TSP role signs, any other role must not send it at all.
        if role != "tsp" and case.headers:
            case.headers.pop(TSP_HEADER, None)
        if choice.random() < 1 / 3:
            return None
        card = choice.choice(fx.cards)
        if case.path_parameters:
            if "cardId" in case.path_parameters:
                case.path_parameters["cardId"] = card["cardId"]
            if "attemptId" in case.path_parameters:
                case.path_parameters["attemptId"] = choice.choice(fx.attempts)
            if "messageId" in case.path_parameters:
                case.path_parameters["messageId"] = choice.choice(fx.messages)
        body = case.body
        path = case.operation.path
        if isinstance(body, dict):
            if isinstance(body.get("certificates"), list) and fx.certificates and choice.random() < 0.7:
                body["certificates"] = list(fx.certificates)  # a chain that verifies: the handler goes on to encrypt
                if choice.random() < 0.7:
                    body["nonce"], body["nonceSignature"] = "q83vEg==", "AAECAwQFBgcICQoLDA0ODw=="
            # A new token reference is what authorization wants; the other TSP operations want
            # one of the seeded tokens, each operation its own share so that one operation's
            # calls (activating, deleting) do not leave nothing pending for the next.
            if path == "/v1/wallet/verifications" and "tokenReference" not in body:
                body["tokenReference"] = ""  # a locator the next lines point at a seeded token
            if isinstance(body.get("tokenReference"), str) and path != "/v1/tsp/tokenization/authorize":
                share = fx.token_shares.get(path) or fx.tokens
                body["tokenReference"] = choice.choice(share)
                card = next(c for c in fx.cards if c["customerId"] == fx.token_owner[body["tokenReference"]])
                if path == "/v1/wallet/verifications" and choice.random() < 0.7:
                    body.pop("serialNumber", None)  # every locator given must match: a random one never does
                    body.pop("passTypeIdentifier", None)
            if path == "/v1/admin/cards" and choice.random() < 0.6:  # a card that registers: 201
                body["accountNumber"] = luhn_complete("5" + "".join(choice.choice("0123456789") for _ in range(14)))
                body["expiration"] = "12/39"
                body["customerId"] = card["customerId"]
                if "cardId" in body:
                    body["cardId"] = f"fuzz-new-{self.run_tag}-{self.cases}"
            if path == "/v1/admin/rules/backtest" and choice.random() < 0.6:  # a candidate that compiles: 200
                now = time.time()
                body["since"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now - 86400 * choice.randint(1, 30)))
                body["until"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now + 60))
                name = choice.choice(sorted(fx.rule_files))
                body["rules"] = fx.rule_files[name] if choice.random() < 0.5 else {name: fx.rule_files[name]}
            if isinstance(body.get("activationMethodId"), str):
                body["activationMethodId"] = choice.choice(fx.method_ids)
            if isinstance(body.get("customerId"), str) and choice.random() < 0.5:
                body["customerId"] = choice.choice(fx.customers)
            seeded_card = body.get("card")
            if isinstance(seeded_card, dict) and isinstance(seeded_card.get("accountNumber"), str):
                seeded_card["accountNumber"] = card["accountNumber"]
                if choice.random() < 0.7:
                    seeded_card["expiration"] = card["expiration"]
        return card["customerId"]

    def credentials(self, role: str, customer: str | None, choice: random.Random) -> tuple[requests.Session, dict[str, str]]:
        if role == "tsp":
            return self.tsp_session, {}
        if role == "app":
            fx = self.fixture
            customer = customer or choice.choice(fx.customers)
            return self.plain_session, {"Authorization": f"Bearer {fx.app_tokens[customer]}"}
        if role in ("none", "anonymous"):
            return self.plain_session, {}
        return self.plain_session, {"Authorization": f"Bearer {self.keys[role]}"}

    def run_one(self, operation, role: str, mode: GenerationMode) -> None:
        try:
            strategy = operation.as_strategy(generation_mode=mode)
        except Exception as error:  # an operation with nothing to negate has no negative cases
            print(f"fuzz: {operation.label} [{role}, {mode.value}] skipped: {type(error).__name__}", flush=True)
            return
        label = f"{operation.label} [{role}, {mode.value}]"
        operation_roles = Fuzzer.roles_for(operation)

        @seed(self.args.seed)
        @settings(max_examples=self.args.max_examples, deadline=None, database=None,
                  phases=[Phase.explicit, Phase.generate], suppress_health_check=list(HealthCheck),
                  print_blob=False)
        @given(case=strategy, pick=st.integers(min_value=0, max_value=2**32))
        def test(case, pick):
            choice = random.Random(f"{pick}-{self.cases}")  # Hypothesis favours small picks; the case number spreads them
            customer = self.personalise(case, role, choice)
            session, headers = self.credentials(role, customer, choice)
            self.cases += 1
            try:
                response = case.call(base_url=self.base_url, session=session, headers=headers, timeout=30)
            except requests.RequestException as error:
                self.record(label, case, None, error)
                return
            self.statuses[label][response.status_code] += 1
            refused = role == "anonymous" or (role == "analyst" and operation_roles == ["admin", "analyst", "anonymous"])
            if refused and 200 <= response.status_code < 300:
                self.record(label, case, response, AssertionError(f"{role} credentials were accepted with {response.status_code}"))
                return
            if os.environ.get("ISSUERD_FUZZ_SHOW") == "2" and self.statuses[label][response.status_code] <= 2:
                sent = response.request
                print(f"  {label} {response.status_code} {sent.method} {sent.url} {dict(sent.headers)} {str(sent.body)[:300]} -> {response.text[:300]}")
            if os.environ.get("ISSUERD_FUZZ_SHOW") and mode == GenerationMode.POSITIVE and response.status_code in (400, 422):
                self.refusals[f"{operation.label} {response.status_code} {response.text[:200]}"] += 1
            try:
                case.validate_response(response, checks=CHECKS, headers=headers)
            except (KeyboardInterrupt, SystemExit):
                raise
            except BaseException as error:  # a FailureGroup is a BaseExceptionGroup, not an Exception
                self.record(label, case, response, error)

        before = self.cases
        try:
            test()
        except Exception as error:  # Hypothesis itself gave up (e.g. unsatisfiable strategy)
            print(f"fuzz: {label} stopped: {type(error).__name__}: {str(error)[:200]}", flush=True)
        statuses = " ".join(f"{s}x{n}" for s, n in sorted(self.statuses[label].items()))
        print(f"fuzz: {label}: {self.cases - before} cases ({statuses})", flush=True)

    def record(self, label: str, case, response, error: BaseException) -> None:
        parts = getattr(error, "exceptions", None) or (error,)
        first = "; ".join(
            f"{getattr(p, 'title', type(p).__name__)}: {str(getattr(p, 'message', p)).strip().splitlines()[0] if str(getattr(p, 'message', p)).strip() else ''}"
            for p in parts)
        message = "\n".join(str(getattr(p, "message", p)) for p in parts)
        try:
            reproduce = case.as_curl_command(headers={"Authorization": "Bearer <credential>"})
        except Exception:
            reproduce = "(no curl rendering)"
        self.failures.append({"label": label, "summary": first, "message": message,
                              "status": response.status_code if response is not None else None,
                              "body": (response.text[:500] if response is not None else ""),
                              "reproduce": reproduce})

    def report(self) -> None:
        for answer, count in sorted(self.refusals.items()):
            print(f"fuzz: refused positive case {count}x: {answer}")
        if not self.failures:
            return
        print("\nfuzz: failures, grouped (first example of each):", flush=True)
        groups: dict[tuple[str, str], list[dict]] = defaultdict(list)
        for f in self.failures:
            groups[(f["label"], f["summary"][:160])].append(f)
        for (label, summary), items in groups.items():
            f = items[0]
            print(f"\n--- {label}: {len(items)}x {summary}")
            print(f["message"][:1500])
            print(f"status {f['status']}; body: {f['body']}")
            print(f"reproduce: {f['reproduce'][:1500]}")
        sys.stdout.flush()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--schema", required=True)
    parser.add_argument("--base-url", required=True)
    parser.add_argument("--issuerd", required=True, help="the issuerd binary (for `issuerd dev token`)")
    parser.add_argument("--max-examples", type=int, default=50, help="Hypothesis examples per operation, role and mode")
    parser.add_argument("--seed", type=int, default=20261201)
    parser.add_argument("--modes", default="positive,negative")
    args = parser.parse_args()

    fuzzer = Fuzzer(args)
    fuzzer.seed()
    schema = schemathesis.openapi.from_path(args.schema)
    schema.config.base_url = fuzzer.base_url
    modes = [GenerationMode(m) for m in args.modes.split(",")]
    started = time.monotonic()
    for result in schema.get_all_operations():
        operation = result.ok()
        for role in Fuzzer.roles_for(operation):
            for mode in modes:
                fuzzer.run_one(operation, role, mode)
    fuzzer.report()
    print(f"fuzz: {time.monotonic() - started:.0f} s of fuzzing against {fuzzer.base_url}", flush=True)
    print(f"fuzz: cases={fuzzer.cases} failures={len(fuzzer.failures)}", flush=True)
    return 1 if fuzzer.failures else 0


if __name__ == "__main__":
    sys.exit(main())
