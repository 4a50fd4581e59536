#!/usr/bin/env python3
"""The Python side of scripts/bench-import: one subcommand per step, called by the script.

    python3 scripts/lib/bench_import.py COMMAND ARGS...

    cards COUNT GOOD.jsonl BAD.jsonl
        Writes COUNT cards as `issuerd cards import` reads them (distinct Luhn-valid PANs,
        one customer per two cards, seeded) to GOOD, and the same with a PAN failing the
        Luhn check on the second-to-last line to BAD.
    backend-cpu POSTMASTER_PID OUT
        Samples every 0.1 s the CPU of the cluster's client backends (children of
        POSTMASTER_PID titled "postgres: postgres ...", the last sample of each kept) until
        SIGTERM, then writes their CPU seconds to OUT.
    result IMPORT_RATE COPY_RATE IMPORT_BACKEND_CPU COPY_BACKEND_CPU RSS_MIB
        Prints the import beside COPY, the ratio and whether each target is met.
"""

import sys

def cards():
    """cards: see the module's docstring."""
    import json, random, sys
    random.seed(11)
    cards, good_path, bad_path = int(sys.argv[1]), sys.argv[2], sys.argv[3]
    def luhn(body):
        total = 0
        for i, d in enumerate(reversed(body + "0")):
            n = int(d)
            if i % 2 == 1:
                n = n * 2 - 9 if n > 4 else n * 2
            total += n
        return body + str((10 - total % 10) % 10)
    with open(good_path, "w") as good, open(bad_path, "w") as bad:
        for i in range(cards):
            customer = f"cust-{i // 2}"
            pan = luhn("4" + f"{i:014d}")  # distinct PANs
            line = json.dumps({"cardId": f"card-{i}", "customerId": customer, "accountNumber": pan, "expiration": "12/30",
                               "cardholderName": "KIM MINJI", "paymentNetwork": "visa", "country": "KR",
                               "customer": {"phoneNumber": "010-1234-5678", "email": f"{customer}@example.com",
                                            "addressChangedAt": "2024-01-01T00:00:00Z"}}, separators=(",", ":")) + "\n"
            good.write(line)
            if i == cards - 2:  # a PAN failing the Luhn check on the second-to-last line
                line = line.replace(pan, pan[:-1] + str((int(pan[-1]) + 1) % 10))
            bad.write(line)


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


COMMANDS = {"cards": cards, "backend-cpu": backend_cpu, "result": result}


def main():
    if len(sys.argv) < 2 or sys.argv[1] not in COMMANDS:
        sys.exit(__doc__)
    command = COMMANDS[sys.argv[1]]
    sys.argv = [f"bench_import.py {sys.argv[1]}"] + sys.argv[2:]  # each step reads its own arguments from sys.argv[1:]
    command()


if __name__ == "__main__":
    main()
