"""Phase partition: PostgreSQL's TCP port silently dropped under load (root: nftables in the run's
own network namespace). The outage's figures, prefixed partition_.
"""

import subprocess
import time

from .harness import ENV, OUTAGE_SECONDS, PARTITION_BOUND_S, ProvisioningLoad, nft, promise_database_figures, say


PARTITION_TABLE = "issuerd_reliability_partition"


def run(instances, receiver):
    """PostgreSQL's TCP port silently dropped in both directions (nftables in this run's own
    network namespace): no reset, no FIN, so only a timeout can notice. Requests must still be
    answered 503 within PARTITION_BOUND_S, and everything must recover once the path is back."""
    port = ENV["PGPORT"]
    say(f"== network partition under load: PostgreSQL's TCP port {port} silently dropped for {OUTAGE_SECONDS:.0f} s (no reset)")
    load = ProvisioningLoad(instances, "part")

    def fault():
        nft("add", "table", "inet", PARTITION_TABLE)
        nft("add", "chain", "inet", PARTITION_TABLE, "input", "{ type filter hook input priority 0; policy accept; }")
        nft("add", "rule", "inet", PARTITION_TABLE, "input", "tcp", "dport", port, "drop")
        nft("add", "rule", "inet", PARTITION_TABLE, "input", "tcp", "sport", port, "drop")
        cut_at = load.now()
        time.sleep(OUTAGE_SECONDS)
        nft("delete", "table", "inet", PARTITION_TABLE)
        healed_at = load.now()
        say(f"  path restored after {healed_at - cut_at:.1f} s")
        # Requests started before the cut, or within the dead-peer timeout after it, may still
        # have reached a live connection; answers are counted from there on.
        return cut_at + PARTITION_BOUND_S, healed_at, healed_at

    try:
        window = load.run(fault, settle=8)
    finally:
        subprocess.run(["nft", "delete", "table", "inet", PARTITION_TABLE], capture_output=True)
    promise_database_figures("partition_", load.check(*window, PARTITION_BOUND_S, "partitioned"), PARTITION_BOUND_S)
