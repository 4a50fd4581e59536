#!/usr/bin/env python3
"""Turns one provisioning request's statements, as PostgreSQL logged them (log_statement = all),
into a pgbench script that replays them for a random card: scripts/bench-api's ceiling for the
request's own SQL, with no HTTP, no JSON and no crypto around it.

    replay_request.py SERVER_LOG CARD CUSTOMER DEVICE CARDS CUSTOMERS SCRIPT VARIABLES

The request is found by its lock (`provision:<customer>`); every statement its backend executed
from the settings before that lock to the attempt's INSERT is kept, in order, each parameter
sent as a parameter again (a pgbench variable set with -D, listed NUL-separated in VARIABLES).
The card's, the customer's and the device's ids become expressions of a random card (its owner,
as the benchmark's import assigned them, and a device of its own, as the benchmark's traffic has
it) and the attempt's id a fresh UUID, so the clients do not queue on one customer's lock and no
device gathers every replayed attempt (its velocity look-up would grow through the run).
The server's two pipelined round trips are kept: the opening half (settings, lock, context) and
the closing one (the writes and the commit); pgbench 15 has no
flush request, so the transaction is an explicit BEGIN, sent alone before them (a third, short
round trip, which the server does not make).
Prints the statements it kept on standard error."""
import re
import sys

asked = sys.argv[1:2] in (["-h"], ["--help"])
if asked or len(sys.argv) != 9:
    print(__doc__.strip(), file=sys.stdout if asked else sys.stderr)
    sys.exit(0 if asked else 2)
log_path, card, customer, device = sys.argv[1:5]
cards, customers = int(sys.argv[5]), int(sys.argv[6])
entry = re.compile(r"^\S+ \S+ \S+ \[(\d+)\] (LOG|DETAIL):  (.*)$")

# Log entries with their continuation lines (PostgreSQL indents those with a tab).
entries = []
for line in open(log_path, encoding="utf-8", errors="replace"):
    line = line.rstrip("\n")
    m = entry.match(line)
    if m:
        entries.append([m.group(1), m.group(2), m.group(3)])
    elif line.startswith("\t") and entries:
        entries[-1][2] += "\n" + line[1:]

executed = []  # (pid, statement text, {n: literal})
for i, (pid, kind, text) in enumerate(entries):
    m = re.match(r"execute [^:]*: (.*)$", text, re.S) if kind == "LOG" else None
    if not m:
        continue
    params = {}
    if i + 1 < len(entries) and entries[i + 1][0] == pid and entries[i + 1][1] == "DETAIL":
        detail = entries[i + 1][2]
        if detail.startswith("parameters: "):
            for n, value in re.findall(r"\$(\d+) = (NULL|'(?:[^']|'')*')", detail, re.S):
                params[int(n)] = value
    executed.append((pid, m.group(1), params))

lock_key = f"'provision:{customer}'"
lock = next((k for k, (_, sql, params) in enumerate(executed) if "pg_advisory_xact_lock" in sql and lock_key in params.values()), None)
if lock is None:
    sys.exit(f"replay_request: no lock for {customer} among {len(executed)} logged statements")
pid = executed[lock][0]
mine = [e for e in executed if e[0] == pid]
start = mine.index(executed[lock])
while start > 0 and "set_config" not in mine[start][1]:
    start -= 1
end = next((k for k in range(start, len(mine)) if "INSERT INTO provisioning_attempts" in mine[k][1]), None)
if end is None:
    sys.exit("replay_request: the request's backend logged no INSERT INTO provisioning_attempts")
request = mine[start : end + 1]

uuid = re.compile(r"^'[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}'$")
timestamp = re.compile(r"^'\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(\.\d+)?[+-]\d\d'$")
card_literal, customer_literal, device_literal = f"'{card}'", f"'{customer}'", f"'{device}'"
card_prefix, customer_prefix = card.rstrip("0123456789"), customer.rstrip("0123456789")
variables = []  # the other parameters, sent by pgbench as parameters too (-D name=value)


def argument(value):
    """What stands for one logged parameter in the replayed statement."""
    if value == "NULL":
        return "NULL"
    if value == card_literal:
        return f"('{card_prefix}' || :card::text)"
    if value == customer_literal:
        return f"('{customer_prefix}' || :customer::text)"
    if value == device_literal:
        return f"('{device}-' || :card::text)"
    if value == lock_key:
        # The key's prefix as a variable too: pgbench would read ":bench" in a literal as one.
        variables.append(f"provision:{customer_prefix}")
        return f"(:p{len(variables)} || :customer::text)"
    if uuid.match(value):
        return "gen_random_uuid()"
    variables.append(value[1:-1].replace("''", "'"))
    # pgbench prepares without parameter types; the server binds its times as timestamptz.
    return f":p{len(variables)}::timestamptz" if timestamp.match(value) else f":p{len(variables)}"


statements = []
for _, sql, params in request:
    # pgbench reads ":name" anywhere in a statement as a variable: the texts must hold none
    # of their own (casts' "::" are skipped).
    if re.search(r"(?<!:):(?!:)[A-Za-z0-9_]", sql):
        sys.exit("replay_request: a statement's text holds ':name', which pgbench would read as a variable")
    text = re.sub(r"\$(\d+)(?!\d)", lambda m: argument(params[int(m.group(1))]), sql)
    statements.append(" ".join(text.split()).rstrip(";"))
    print(f"  replayed: {statements[-1][:110]}", file=sys.stderr)

split = next((k for k, s in enumerate(statements) if not s.upper().startswith("SELECT")), len(statements))
script_path, variables_path = sys.argv[7], sys.argv[8]
with open(script_path, "w") as script:
    script.write(f"\\set card random(0, {cards - 1})\n\\set customer :card % {customers}\n")
    # BEGIN alone, before the pipelines: pgbench 15 prepares a script's statements at its first
    # SQL command and cannot while in a pipeline ("prepared statement P_n does not exist").
    script.write("BEGIN;\n\\startpipeline\n" + "".join(s + ";\n" for s in statements[:split]) + "\\endpipeline\n")
    script.write("\\startpipeline\n" + "".join(s + ";\n" for s in statements[split:]) + "COMMIT;\n\\endpipeline\n")
with open(variables_path, "wb") as out:  # NUL-separated name=value, for pgbench -D
    for n, value in enumerate(variables, 1):
        out.write(f"p{n}={value}".encode() + b"\0")
