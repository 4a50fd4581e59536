#!/usr/bin/env python3
"""The Python side of scripts/bench-api: one subcommand per step, called by the script.

    python3 scripts/lib/bench_api.py COMMAND ARGS...

    cards COUNT NETWORK PER_CUSTOMER
        Prints COUNT cards as `issuerd cards import` reads them (JSON lines, Luhn-valid,
        seeded), PER_CUSTOMER cards a customer, interleaved so concurrent requests are for
        different customers. NETWORK `split`: even cards Mastercard, odd cards Visa.
    tsp-requests CARDS.jsonl WORK WARM COUNT
        Signs one TSP authorization per card (X-Issuerd-Signature with
        ISSUERD_TSP_HMAC_SECRET, now): the first WARM into WORK/tsp-warm.requests, the rest
        of COUNT into WORK/tsp-run.requests, one "signature<TAB>body" a line.
    push-requests CARDS.jsonl WORK WARM
        For `split` cards: one Google Pay push per card (an HS256 app token of the card's
        customer made with ISSUERD_APP_JWT_SECRET, valid an hour; its own device and wallet
        ids), Mastercard's and Visa's apart: the first into WORK/push-NETWORK-check.request,
        the next WARM into WORK/push-NETWORK-warm.requests, the rest into
        WORK/push-NETWORK-run.requests, one "token<TAB>path<TAB>body" a line.
    callgrind DUMP REQUESTS IDLE_DUMP IDLE_SECONDS RUN_SECONDS
        Prints the server's user-space instructions per request from the run's callgrind dump
        (RUN_SECONDS long): less the rules watcher's directory scans (their inclusive count in
        the dump: about 2.4 million instructions a scan under valgrind, as many scans as the
        load lets run, 40 % of a slow run), and less the rest of the idle server's rate
        (IDLE_DUMP, IDLE_SECONDS long, its scans taken off too) over the run. Either would
        otherwise be divided by however many requests valgrind and the machine's load allowed.
    cost REQUESTS SERVER_CPU PG_CPU WRK_CPU CORES COMMITS DURATION WAL_BEFORE WAL_AFTER
        MAINTENANCE_BEFORE MAINTENANCE_AFTER
        Prints CPU per request of issuerd, PostgreSQL and wrk, the rate their sum allows,
        how busy the cores were, commits and WAL per request and the autovacuum work during
        the run.
    perf-split SERVER_CPU REQUESTS < perf-report
        Reads `perf report --sort dso` on stdin; prints issuerd's CPU by library, the
        kernel's and OpenSSL's ms per request, and that figure alone on the last line.
    mdes-compare TSP_RESULT TSP_REQUESTS TSP_CPU MDES_RESULT MDES_REQUESTS MDES_CPU RSA_PER_S
        CORES CONNECTIONS
        Prints TSP and MDES side by side, the ratio, the RSA operation's cost, where the
        limit is and the MDES targets.
    visa-compare MC_RESULT MC_REQUESTS MC_CPU VISA_RESULT VISA_REQUESTS VISA_CPU AES32_PER_S
        AES512_PER_S CORES
        Prints the Mastercard and Visa pushes side by side, what a Visa push costs over a
        Mastercard one (issuerd's CPU and the latency), and beside it OpenSSL's AES-256-GCM
        operations per second on 32 and 512 bytes (`openssl speed -evp aes-256-gcm`): what the
        JWE's two operations cost.
    attempt-values ROW_JSON
        Prints an attempt row (row_to_json) as the SQL values of the pgbench reference, its
        documents compact as issuerd writes them, a space after each ':' a letter or digit
        follows (pgbench reads ':name' as a variable).
    verdict RPS P99 TPS MODE CONNECTIONS RESULT REPLAY_TPS REPLAY_PG_MS CORES REQUESTS
        SERVER_CPU PG_CPU WRK_CPU FLOOR_MS
        Prints the ratio to pgbench, where the limit is and a verdict per target of the
        mode.

Only the standard library; the figures and their meaning are in docs/performance.md.
"""

import sys

def cards():
    """cards: see the module's docstring."""
    import json, random, sys
    network = sys.argv[2]
    random.seed(7)
    def luhn(prefix):
        digits = prefix + "".join(random.choice("0123456789") for _ in range(15 - len(prefix)))
        total = 0
        for i, d in enumerate(reversed(digits + "0")):
            n = int(d)
            if i % 2 == 1:
                n *= 2
                n -= 9 if n > 9 else 0
            total += n
        return digits + str((10 - total % 10) % 10)
    cards = int(sys.argv[1])
    customers = cards // int(sys.argv[3]) + 1
    for i in range(cards):
        customer = f"bench-{i % customers}"  # interleaved: concurrent requests are for different customers
        card_network = network if network != "split" else ("mastercard" if i % 2 == 0 else "visa")
        print(json.dumps({"cardId": f"bench-card-{i}", "customerId": customer, "accountNumber": luhn("53" if card_network == "mastercard" else "4"),
                          "expiration": "12/30", "cardholderName": "BENCH USER", "paymentNetwork": card_network, "country": "KR",
                          "customer": {"customerId": customer, "phoneNumber": "+821012345678", "email": f"{customer}@example.com",
                                       "phoneChangedAt": "2020-01-01T00:00:00Z", "emailChangedAt": "2020-01-01T00:00:00Z", "addressChangedAt": "2020-01-01T00:00:00Z"}}))


def tsp_requests():
    """tsp-requests: see the module's docstring."""
    import hashlib, hmac, json, os, sys, time
    cards_path, work, warm, count = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    secret = os.environ["ISSUERD_TSP_HMAC_SECRET"].encode()
    now = str(int(time.time()))
    with open(cards_path) as cards, open(f"{work}/tsp-warm.requests", "w") as warm_out, open(f"{work}/tsp-run.requests", "w") as run_out:
        for i, line in enumerate(cards):
            if i == count:
                break
            card = json.loads(line)
            body = json.dumps({"requestId": f"bench-req-{i}", "tokenReference": f"BENCHTOK{i:08d}", "tokenRequestorId": "40010030273",
                               "tokenizationSource": "manual", "card": {"accountNumber": card["accountNumber"], "expiration": card["expiration"]},
                               "device": {"id": f"tsp-device-{i}", "type": "phone", "name": "iPhone", "locale": "ko_KR"},
                               "wallet": {"deviceScore": 4, "accountScore": 5, "phoneNumberScore": 4, "recommendedDecision": "APPROVED", "reasonCodes": []},
                               "activeTokenCount": 1}, separators=(",", ":"))
            mac = hmac.new(secret, (now + "." + body).encode(), hashlib.sha256).hexdigest()
            (warm_out if i < warm else run_out).write(f"t={now},v1={mac}\t{body}\n")


def push_requests():
    """push-requests: see the module's docstring."""
    import base64, hashlib, hmac, json, os, sys, time
    cards_path, work, warm = sys.argv[1], sys.argv[2], int(sys.argv[3])
    secret = os.environ["ISSUERD_APP_JWT_SECRET"].encode()
    now = int(time.time())
    def b64(data):
        return base64.urlsafe_b64encode(data).rstrip(b"=").decode()
    tokens = {}
    def token(customer):  # what `issuerd dev token` makes, without a process per customer
        if customer not in tokens:
            signing = b64(b'{"alg":"HS256","typ":"JWT"}') + "." + b64(json.dumps(
                {"exp": now + 3600, "iat": now, "sub": customer}, separators=(",", ":"), sort_keys=True).encode())
            tokens[customer] = signing + "." + b64(hmac.new(secret, signing.encode(), hashlib.sha256).digest())
        return tokens[customer]
    files = {network: [open(f"{work}/push-{network}-{part}", "w") for part in ("check.request", "warm.requests", "run.requests")]
             for network in ("mastercard", "visa")}
    counts = {"mastercard": 0, "visa": 0}
    with open(cards_path) as cards:
        for line in cards:
            card = json.loads(line)
            network, n = card["paymentNetwork"], counts[card["paymentNetwork"]]
            counts[network] += 1
            body = json.dumps({"device": {"id": f"push-device-{card['cardId']}", "type": "phone", "locale": "ko_KR"},
                               "walletInfo": {"deviceId": f"gp-{card['cardId']}", "walletAccountId": f"gpw-{card['customerId']}"}},
                              separators=(",", ":"))
            out = files[network][0 if n == 0 else 1 if n <= warm else 2]
            out.write(f"{token(card['customerId'])}\t/v1/cards/{card['cardId']}/google-pay/push-provisioning\t{body}\n")
    for handles in files.values():
        for handle in handles:
            handle.close()


def callgrind():
    """callgrind: see the module's docstring."""
    import re
    import sys

    def counts(path):
        """The dump's total, the rules watcher's directory scans within it (inclusive), and the
        requests the router dispatched (calls of Router.dispatch)."""
        names, total, watcher, dispatched, callee, caller = {}, None, 0, 0, None, None
        after_calls = False
        for line in open(path, errors="replace"):
            if after_calls:  # the line after calls= holds the call's inclusive cost
                if callee and "RulesFileWatcherC8snapshot" in callee:
                    watcher += int(line.split()[1])
                after_calls = False
            elif line.startswith(("fn=", "cfn=")):
                match = re.match(r"c?fn=\((\d+)\)(?: (.*))?", line.rstrip("\n"))
                name = match and (match.group(2) or names.get(match.group(1)))
                if match and match.group(2):
                    names[match.group(1)] = match.group(2)
                callee = name if line.startswith("cfn=") else None
                caller = name if line.startswith("fn=") else caller
            elif line.startswith("calls="):
                after_calls = True
                if callee and "6RouterV8dispatch" in callee and "6RouterV8dispatch" not in (caller or ""):
                    dispatched += int(line.split()[0][6:])
            elif line.startswith("totals:"):
                # The dump's own count: after a dump has zeroed the counters, callgrind's
                # "summary:" line is the difference to the earlier dump, wrapped below zero.
                total = int(line.split()[1])
        if total is None:
            raise SystemExit(f"no totals: line in {path}")
        return total, watcher, dispatched

    run, run_watcher, dispatched = counts(sys.argv[1])
    # The requests the server dispatched while counted: wrk's count leaves out the one it cut
    # at the end (and a build whose router is named otherwise falls back to it).
    answered = max(int(sys.argv[2]), 1)
    requests = dispatched or answered
    idle, idle_watcher, _ = counts(sys.argv[3])
    idle_seconds, run_seconds = float(sys.argv[4]), float(sys.argv[5])
    idle_rate = (idle - idle_watcher) / idle_seconds
    own = run - run_watcher - idle_rate * run_seconds
    print(f"issuerd instructions per request (callgrind, user space): {own / requests:,.0f}"
          f" ({requests} requests {'dispatched' if dispatched else 'answered'}, {answered} answered to wrk;"
          f" all {run / requests:,.0f}, less the rules watcher's directory scans {run_watcher / requests:,.0f}"
          f" and the idle server's other {idle_rate:,.0f} per second for {run_seconds:.1f} s;"
          f" {sys.argv[1]}; callgrind_annotate reads it)")


def cost():
    """cost: see the module's docstring."""
    import sys
    n, server, pg, wrk, cores, commits = int(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])
    duration = float(sys.argv[7])
    wal = [after - before for before, after in zip(map(int, sys.argv[8].split()), map(int, sys.argv[9].split()))]
    vacuums, analyzes, evicted = (after - before for before, after in zip(map(int, sys.argv[10].split()), map(int, sys.argv[11].split())))
    n = max(n, 1)
    total = 1000 * (server + pg + wrk) / n
    print(f"CPU per request: issuerd {1000 * server / n:.2f} ms, PostgreSQL {1000 * pg / n:.2f} ms, wrk {1000 * wrk / n:.2f} ms; "
          f"sum {total:.2f} ms: {cores} cores allow about {1000 * cores / total:,.0f} requests/s if nothing else runs")
    # Idle cores with 16 requests in flight: they were waiting, mostly for their commit's WAL flush.
    print(f"the cores were busy {100 * (server + pg + wrk) / (cores * duration):.0f} % of the run")
    print(f"PostgreSQL commits per request: {commits / n:.2f}; WAL per request: {wal[0] / n:.1f} records, {wal[2] / n:,.0f} bytes, "
          f"{wal[1] / n:.2f} full-page images; WAL flushes per commit {wal[3] / max(commits, 1):.2f} (below 1: commits sharing one)")
    print(f"autovacuum on provisioning_attempts during the run: {vacuums} vacuum(s), {analyzes} analyze(s) (counted in PostgreSQL's CPU); "
          f"pages the backends wrote out to free a buffer: {evicted}")


def perf_split():
    """perf-split: see the module's docstring."""
    import re, sys
    server_ms = 1000 * float(sys.argv[1]) / max(int(sys.argv[2]), 1)
    shares = {}
    for line in sys.stdin:
        m = re.match(r"\s*([0-9.]+)%\s+(\S+)", line)
        if m:
            shares[m.group(2)] = float(m.group(1))
    def share(*names):
        return sum(v for k, v in shares.items() if any(k.startswith(n) for n in names))
    groups = [("kernel", share("[kernel")), ("OpenSSL", share("libcrypto", "libssl")), ("Swift runtime", share("libswift", "libFoundation", "libdispatch")),
              ("libc", share("libc.so", "libm.so", "ld-linux")), ("issuerd", share("issuerd")), ("libpq", share("libpq")), ("libmicrohttpd", share("libmicrohttpd"))]
    print("issuerd CPU by library (perf samples): " + ", ".join(f"{name} {value:.1f} %" for name, value in groups))
    floor = (groups[0][1] + groups[1][1]) / 100 * server_ms
    print(f"  kernel and OpenSSL: {floor:.2f} ms of issuerd's {server_ms:.2f} ms per request (what no change to the Swift code removes)")
    print(f"{floor:.4f}")


def workload(result, requests, cpu):
    """One timed run's figures: requests/s, p50, p99, non-2xx, and CPU ms per request of issuerd,
    PostgreSQL and wrk (CPU: the three seconds, space-separated)."""
    import re
    fields = dict(re.findall(r"(\w+)=([0-9.]+)", result))
    n = max(int(requests), 1)
    server, pg, load = (1000 * float(v) / n for v in cpu.split())
    return float(fields["rps"]), float(fields["p50_ms"]), float(fields["p99_ms"]), int(fields["non2xx"]), server, pg, load


def mdes_compare():
    """mdes-compare: see the module's docstring."""
    import sys
    tsp, mdes = workload(*sys.argv[1:4]), workload(*sys.argv[4:7])
    rsa_per_s, cores, connections = float(sys.argv[7]), int(sys.argv[8]), int(sys.argv[9])
    rsa_ms = 1000 / rsa_per_s
    for name, (rps, p50, p99, non2xx, server, pg, load) in (("TSP ", tsp), ("MDES", mdes)):
        print(f"{name} {rps:8,.0f} requests/s, p50 {p50:6.1f} ms, p99 {p99:6.1f} ms, non-2xx {non2xx}; CPU per request "
              f"issuerd {server:.2f} ms, PostgreSQL {pg:.2f} ms, wrk {load:.2f} ms (sum {server + pg + load:.2f})")
    ratio = mdes[0] / tsp[0]
    print(f"ratio MDES/TSP = {ratio:.2f}; issuerd's CPU per request MDES - TSP = {mdes[4] - tsp[4]:.2f} ms")
    print(f"RSA-2048 private-key operation (openssl speed, sign): {rsa_per_s:,.0f}/s on one core = {rsa_ms:.2f} ms each; "
          f"{cores} cores {cores * rsa_per_s:,.0f}/s if they did nothing else")
    # Where the limit is: the TSP request's whole CPU plus one RSA operation, on the cores there are.
    tsp_sum = tsp[4] + tsp[5] + tsp[6]
    print(f"where the limit is: TSP's {tsp_sum:.2f} ms per request plus one RSA operation = {tsp_sum + rsa_ms:.2f} ms: "
          f"{cores} cores allow about {1000 * cores / (tsp_sum + rsa_ms):,.0f} MDES requests/s, "
          f"{tsp_sum / (tsp_sum + rsa_ms):.2f} of the TSP rate, if nothing else ran")
    ok = mdes[3] == 0
    print(f"target (MDES) p99 <= 100 ms with {connections} connections: "
          f"{'MET' if ok and mdes[2] <= 100 and connections >= 16 else 'NOT MET'} (p99 {mdes[2]:.1f} ms, non-2xx {mdes[3]})")
    print(f"target (MDES) >= 0.6 of the TSP rate: {'MET' if ok and ratio >= 0.6 else 'NOT MET'} "
          f"({mdes[0]:,.0f} against {tsp[0]:,.0f} requests/s, ratio {ratio:.2f})")
    # At its floor: what Authorize Service costs issuerd beyond TSP's decision is its RSA unwrap,
    # with at most 0.1 ms for the rest (the field-level decryption's AES, its own JSON), and the
    # rate stays within a quarter of TSP's.
    allowed = tsp[4] + rsa_ms + 0.1
    print(f"target (MDES floor) issuerd's CPU per request <= TSP's + one RSA operation + 0.1 ms = {allowed:.2f} ms: "
          f"{'MET' if ok and mdes[4] <= allowed else 'NOT MET'} ({mdes[4]:.2f} ms; beyond TSP and RSA {mdes[4] - tsp[4] - rsa_ms:+.2f} ms)")
    print(f"target (MDES floor) >= 0.75 of the TSP rate: {'MET' if ok and ratio >= 0.75 else 'NOT MET'} (ratio {ratio:.2f})")


def visa_compare():
    """visa-compare: see the module's docstring."""
    import sys
    mastercard, visa = workload(*sys.argv[1:4]), workload(*sys.argv[4:7])
    aes32, aes512, cores = float(sys.argv[7]), float(sys.argv[8]), int(sys.argv[9])
    for name, (rps, p50, p99, non2xx, server, pg, load) in (("Mastercard push", mastercard), ("Visa push      ", visa)):
        print(f"{name} {rps:8,.0f} requests/s, p50 {p50:6.1f} ms, p99 {p99:6.1f} ms, non-2xx {non2xx}; CPU per request "
              f"issuerd {server:.3f} ms, PostgreSQL {pg:.3f} ms, wrk {load:.3f} ms (sum {server + pg + load:.3f})")
    delta = visa[4] - mastercard[4]
    print(f"Visa over Mastercard: issuerd CPU {delta:+.3f} ms per request, p50 {visa[1] - mastercard[1]:+.1f} ms, "
          f"requests/s ratio Visa/Mastercard {visa[0] / max(mastercard[0], 1):.2f}")
    jwe_us = 1e6 / aes32 + 1e6 / aes512
    print(f"openssl speed -evp aes-256-gcm (same run, one core): {aes32:,.0f} operations/s on 32 bytes, {aes512:,.0f}/s on 512 bytes; "
          f"the JWE's two (the 32-byte content key, a payload under 512 bytes) take about {jwe_us:.1f} µs = {jwe_us / 1000:.4f} ms, "
          f"{cores} cores {cores * 1e6 / jwe_us:,.0f} JWEs/s if they did nothing else")


def attempt_values():
    """attempt-values: see the module's docstring."""
    import json, re, sys
    row = json.loads(sys.argv[1])
    def literal(text):
        return "NULL" if text is None else "'" + text.replace("'", "''") + "'"
    def document(value):
        return literal(re.sub(r":(?=\w)", ": ", json.dumps(value, separators=(",", ":"), ensure_ascii=False)))
    methods = "{" + ",".join(row["allowed_methods"]) + "}"
    print(", ".join([literal(row["cardholder_name_hash"])] + [document(row[k]) for k in ("inputs", "features", "hits", "unknowns", "facts")]
                    + [literal(methods), literal(row["flow"]), literal(row["decision"])]))


def verdict():
    """verdict: see the module's docstring."""
    import sys
    rps, p99, tps, mode, connections, result = float(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3]), sys.argv[4], sys.argv[5], sys.argv[6]
    cores, requests = int(sys.argv[9]), max(int(sys.argv[10]), 1)
    server_ms, pg_ms, wrk_ms = (1000 * float(seconds) / requests for seconds in sys.argv[11:14])
    floor_ms = float(sys.argv[14]) if sys.argv[14] else None
    # In-app: the base target and the stretch one (a rate and a ratio to pgbench); TSP: one.
    targets = ([("in-app", 1500, 50, None), ("in-app stretch", 2500, 25, 0.3)] if mode == "inapp" else [("TSP", 1500, 50, None)])
    ratio = rps / tps
    print(f"ratio issuerd/pgbench = {ratio:.2f} (pgbench same writes {tps:,.0f} tps: the database's ceiling for these writes)")
    # Where the limit is, from this run's own CPU per request: what PostgreSQL (its background work
    # included) and wrk took leaves the rest of the cores to the server, at the mode's highest target rate.
    target_rps = targets[-1][1]
    print(f"where the limit is: PostgreSQL took {pg_ms:.2f} ms and wrk {wrk_ms:.2f} ms per request; with a server that cost nothing "
          f"{cores} cores allow at most {1000 * cores / (pg_ms + wrk_ms):,.0f} requests/s")
    budget = 1000 * cores / target_rps - pg_ms - wrk_ms
    floor = f", of which the kernel and OpenSSL {floor_ms:.2f} ms" if floor_ms is not None else " (ISSUERD_BENCH_PERF=FILE splits it by library)"
    print(f"  {target_rps:,.0f} requests/s on {cores} cores leaves issuerd {budget:.2f} ms per request; it took {server_ms:.2f} ms{floor}")
    if mode == "inapp":
        print(f"  ratio 0.3 ({0.3 * tps:,.0f} requests/s) leaves issuerd {1000 * cores / (0.3 * tps) - pg_ms - wrk_ms:.2f} ms per request")
    if sys.argv[7]:
        # The request's statements alone, replayed (no server at all): pgbench sends every parameter
        # as text (the server binds dates in binary) and its BEGIN alone, so PostgreSQL spends more
        # per replayed request than under issuerd; its rate is the database's own, whatever the server.
        replay, replay_ms = float(sys.argv[7]), float(sys.argv[8])
        print(f"the request's own statements replayed by pgbench: {replay:,.0f} tps = {replay / tps:.2f} of pgbench same writes; "
              f"PostgreSQL {replay_ms:.2f} ms per replayed request (under issuerd {pg_ms:.2f}): at most {1000 * cores / replay_ms:,.0f} requests/s "
              f"with a server and a load generator that cost nothing")
    if mode == "inapp":
        # What 2,500 requests/s asks of issuerd with PostgreSQL and wrk as they cost on a fast idle machine.
        print(f"target (in-app CPU) issuerd's CPU per request <= 0.35 ms: {'MET' if server_ms <= 0.35 else 'NOT MET'} ({server_ms:.2f} ms)")
    for name, target_rps, target_p99, target_ratio in targets:
        met = rps >= target_rps and p99 <= target_p99 and "non2xx=0 " in result and (target_ratio is None or ratio >= target_ratio)
        also = f", ratio >= {target_ratio}" if target_ratio else ""
        print(f"target ({name}) >= {target_rps:,.0f} requests/s at p99 <= {target_p99:.0f} ms{also} with {connections} connections: "
              f"{'MET' if met else 'NOT MET'} ({rps:,.0f} requests/s, p99 {p99:.1f} ms, ratio {ratio:.2f})")


COMMANDS = {"cards": cards, "tsp-requests": tsp_requests, "callgrind": callgrind, "cost": cost, "perf-split": perf_split,
            "mdes-compare": mdes_compare, "push-requests": push_requests, "visa-compare": visa_compare,
            "attempt-values": attempt_values, "verdict": verdict}


def main():
    if len(sys.argv) < 2 or sys.argv[1] not in COMMANDS:
        sys.exit(__doc__)
    command = COMMANDS[sys.argv[1]]
    sys.argv = [f"bench_api.py {sys.argv[1]}"] + sys.argv[2:]  # each step reads its own arguments from sys.argv[1:]
    command()


if __name__ == "__main__":
    main()
