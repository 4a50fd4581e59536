#!/usr/bin/env python3
"""The Python side of scripts/bench-import: one subcommand per step, called by the script.

    python3 scripts/lib/bench_import.py COMMAND ARGS...

    cards COUNT GOOD.jsonl BAD.jsonl [NETWORK]
        Writes COUNT cards as `issuerd cards import` reads them (distinct Luhn-valid PANs,
        one customer per two cards, seeded; Visa unless NETWORK is mastercard) to GOOD, and
        the same with a PAN failing the Luhn check on the second-to-last line to BAD.
    renewals COUNT EXPIRATION OUT.csv
        Writes the `issuerd cards reissue` file renewing those COUNT cards to EXPIRATION (the new
        card card-N-r, as a card system names it), their tokens moved at once (apply_at now).
    tokens COUNT OUT.copy ACCOUNTS.json
        Writes the wallet tokens of those COUNT Mastercard cards (one each, two on every other
        card) as COPY rows of `tokens` (token_reference, card_id, status, service), and the map
        of each card's PAN to its tokens that the fake Customer Service API answers with.
    lost COUNT QUEUED.txt SUMMARY.json
        Compares the cards whose `/token/update` was queued (QUEUED: one card id a line) with
        the accounts the fake Customer Service API was sent (SUMMARY: its GET /_summary) and
        prints delivered, lost and duplicate counts; exits 1 when any is lost.
    backend-cpu POSTMASTER_PID OUT
        Samples every 0.1 s the CPU of the cluster's client backends (children of
        POSTMASTER_PID titled "postgres: postgres ...", the last sample of each kept) until
        SIGTERM, then writes their CPU seconds to OUT.
    result IMPORT_RATE COPY_RATE IMPORT_BACKEND_CPU COPY_BACKEND_CPU RSS_MIB
        Prints the import beside COPY, the ratio and whether each target is met.
"""

import sys

def pan(i, network="visa"):
    """Card i's PAN: distinct, Luhn-valid, in the network's range."""
    body = ("4" + f"{i:014d}") if network == "visa" else ("51" + f"{i:013d}")
    total = 0
    for position, digit in enumerate(reversed(body + "0")):
        n = int(digit)
        if position % 2 == 1:
            n = n * 2 - 9 if n > 4 else n * 2
        total += n
    return body + str((10 - total % 10) % 10)


def token(i, n):
    """Card i's token n: a Mastercard token unique reference (48 characters)."""
    return f"DWSPMC{n}{i:041d}"


def cards():
    """cards: see the module's docstring."""
    import json, random, sys
    random.seed(11)
    cards, good_path, bad_path = int(sys.argv[1]), sys.argv[2], sys.argv[3]
    network = sys.argv[4] if len(sys.argv) > 4 else "visa"
    with open(good_path, "w") as good, open(bad_path, "w") as bad:
        for i in range(cards):
            customer = f"cust-{i // 2}"
            number = pan(i, network)
            line = json.dumps({"cardId": f"card-{i}", "customerId": customer, "accountNumber": number, "expiration": "12/30",
                               "cardholderName": "KIM MINJI", "paymentNetwork": network, "country": "KR",
                               "customer": {"phoneNumber": "010-1234-5678", "email": f"{customer}@example.com",
                                            "addressChangedAt": "2024-01-01T00:00:00Z"}}, separators=(",", ":")) + "\n"
            good.write(line)
            if i == cards - 2:  # a PAN failing the Luhn check on the second-to-last line
                line = line.replace(number, number[:-1] + str((int(number[-1]) + 1) % 10))
            bad.write(line)


def renewals():
    """renewals: see the module's docstring."""
    count, expiration, out = int(sys.argv[1]), sys.argv[2], sys.argv[3]
    with open(out, "w") as f:
        f.write("card_id,new_card_id,reason,expiration,apply_at\n")
        for i in range(count):
            f.write(f"card-{i},card-{i}-r,renewal,{expiration},now\n")


def tokens():
    """tokens: see the module's docstring."""
    import json
    count, out, accounts_path = int(sys.argv[1]), sys.argv[2], sys.argv[3]
    accounts = {}
    with open(out, "w") as f:
        for i in range(count):
            mine = [token(i, n) for n in range(1 if i % 2 else 2)]
            for reference in mine:
                f.write(f"{reference}\tcard-{i}\tactive\tmdes\n")
            accounts[pan(i, "mastercard")] = mine
    with open(accounts_path, "w") as f:
        json.dump(accounts, f)


def lost():
    """lost: see the module's docstring."""
    import collections, json
    count, queued_path, summary_path = int(sys.argv[1]), sys.argv[2], sys.argv[3]
    number = {f"card-{i}": pan(i, "mastercard") for i in range(count)}
    with open(queued_path) as f:
        queued = {number[line.strip()] for line in f if line.strip()}
    with open(summary_path) as f:
        summary = json.load(f)
    received = collections.Counter(summary["updatedAccounts"])
    missing = queued - set(received)
    unexpected = set(received) - queued
    duplicates = sum(n - 1 for n in received.values())
    print(f"queued /token/update calls: {len(queued)}; received and answered 200: {sum(received.values())} "
          f"({len(received)} distinct accounts); requests by operation {summary['byOperation']}, "
          f"by status {summary['byStatus']}, failing a check {summary['failedChecks']}")
    print(f"delivered={len(queued) - len(missing)} lost={len(missing)} duplicates={duplicates} "
          f"unexpected={len(unexpected)} (a duplicate is a redelivery, reported, not a loss)")
    sys.exit(1 if missing or unexpected else 0)


def backend_cpu():
    """backend-cpu: see the module's docstring."""
    import os, signal, sys, time
    postmaster, out = sys.argv[1], sys.argv[2]
    ticks = os.sysconf("SC_CLK_TCK")
    seen = {}
    def finish(*_):
        with open(out, "w") as f:
            f.write(f"{sum(seen.values()) / ticks:.2f}\n")
        sys.exit(0)
    signal.signal(signal.SIGTERM, finish)
    while True:
        for pid in os.listdir("/proc"):
            if not pid.isdigit():
                continue
            try:
                with open(f"/proc/{pid}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                if fields[1] != postmaster:
                    continue
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    title = f.read().decode(errors="replace")
                if not title.startswith("postgres: postgres "):
                    continue
                seen[pid] = int(fields[11]) + int(fields[12])
            except (OSError, IndexError):
                pass
        time.sleep(0.1)


def result():
    """result: see the module's docstring."""
    import sys
    rate, copy, backend, copy_backend, rss = float(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4]), sys.argv[5]
    met = lambda ok: "met" if ok else "NOT met"
    print(f"issuerd cards import: {rate:.0f} cards/s (target >= 20000: {met(rate >= 20000)})")
    print(f"plain COPY of the same rows: {copy:.0f} cards/s")
    print(f"ratio import/COPY: {rate / copy:.2f} (target >= 0.50: {met(rate / copy >= 0.5)})")
    # A small --cards run can end before COPY's backend has used a clock tick.
    print(f"backend CPU, import/COPY: {backend / copy_backend:.2f}" if copy_backend > 0 else "backend CPU, import/COPY: COPY's backend too short to sample")
    print(f"peak RSS of the import: {rss} MiB")


COMMANDS = {"cards": cards, "renewals": renewals, "tokens": tokens, "lost": lost, "backend-cpu": backend_cpu,
            "result": result}


def main():
    if len(sys.argv) < 2 or sys.argv[1] not in COMMANDS:
        sys.exit(__doc__)
    command = COMMANDS[sys.argv[1]]
    sys.argv = [f"bench_import.py {sys.argv[1]}"] + sys.argv[2:]  # each step reads its own arguments from sys.argv[1:]
    command()


if __name__ == "__main__":
    main()
