"""The driver behind scripts/reliability: two issuerd instances on one PostgreSQL, under faults.

Test tooling only (Python standard library, never part of the product). scripts/reliability
prepares the database, the PKI, the secrets and the cards, then runs this package (`python3
scripts/lib/reliability`, __main__.py) with everything in the environment (RELIABILITY_* and
ISSUERD_*). Each phase prints its figures; the last line is `reliability: name=value ...`, and the
exit status is 1 when a figure breaks its promise.

One module per fault, all on one harness (harness.py: the instances, the receiver, the HTTP client,
the provisioning load, the figures and the promises). A phase module has `run(instances,
receiver)`, which prints its figures, records them in `harness.figures` and checks them with
`harness.promise`; it may also have `database_urls()`, {instance name: database URL} for an
instance that must reach PostgreSQL another way (split). Adding a phase: its module here and its
name in PHASES (scripts/reliability's --only takes the names from there), and its figures in
docs/reliability.md.
"""

import importlib

# The phases in the order they run (the outbox phases, the database phases together, then the race
# and the fuzzing).
PHASES = ("outbox", "smpp", "outage", "freeze", "partition", "split", "race", "fuzz", "smppbench")
# smppbench is a benchmark (scripts/bench-smpp): scripts/reliability runs it only when --only names it.


def load(name):
    """The module of a phase in PHASES."""
    return importlib.import_module(f"{__name__}.{name}")
