"""Phase fuzz: schema fuzzing through scripts/fuzz-api, on its own PostgreSQL and instance (skipped
when that script is missing). Figures: schema_cases, schema_failures.
"""

import os
import re
import subprocess

from .harness import ENV, QUICK, figures, promise, say


def run(instances, receiver):
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
