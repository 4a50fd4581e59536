"""Phase outage: PostgreSQL fast-shutdown under load for --outage-seconds.

Provisioning on both instances must answer 503 database_unavailable meanwhile, within 5 s, recover
within 5 s of the restart, and lose nothing acknowledged. Figures: 5xx, 503, bad_503, hung,
max_latency_s, readyz_up_while_down, recovery_s, lost_acknowledged, unanswered_attempts,
duplicate_attempts, ambiguous_commits, replayed.
"""

import subprocess
import time

from .harness import ENV, OUTAGE_SECONDS, ProvisioningLoad, promise_database_figures, say


def run(instances, receiver):
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
