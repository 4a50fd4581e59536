"""Runs the phases RELIABILITY_SCENARIOS names (a comma-separated list), in PHASES' order; then the
check for PANs in the instances' logs and the last line, `reliability: name=value ...`.

`python3 scripts/lib/reliability --phases` prints PHASES comma-separated and needs no environment
(scripts/reliability's --only takes its names from there).
"""

import os
import sys
import time

if not __package__:
    # Run as a folder (python3 scripts/lib/reliability): its parent on the path, so that the
    # package and its phases import by name.
    sys.path[0] = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

from reliability import PHASES, load  # noqa: E402


def main():
    # Only now: the harness reads the run's settings from the environment when imported.
    from reliability.harness import ENV, Instance, Receiver, broken, figures, free_port, pan_in_logs, promise, say

    receiver = Receiver()
    ENV["ISSUERD_NOTIFY_WEBHOOK_URL"] = f"http://127.0.0.1:{receiver.port}/notify"
    ENV["ISSUERD_TSP_WEBHOOK_URL"] = f"http://127.0.0.1:{receiver.port}/tsp"
    scenarios = ENV.get("RELIABILITY_SCENARIOS", "outbox,outage,race,fuzz").split(",")
    phases = [load(name) for name in PHASES if name in scenarios]
    database_urls = {}  # instance name -> its own way to PostgreSQL, when a phase needs one
    for phase in phases:
        database_urls.update(getattr(phase, "database_urls", dict)())
    instances = [Instance("A", free_port(), database_urls.get("A")), Instance("B", free_port(), database_urls.get("B"))]
    started = time.monotonic()
    try:
        for instance in instances:
            instance.start()
        say(f"two instances on one database: A on port {instances[0].port}, B on port {instances[1].port}; receiver on {receiver.port}")
        for phase in phases:
            phase.run(instances, receiver)
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
    if sys.argv[1:] == ["--phases"]:
        print(",".join(PHASES))
    else:
        main()
