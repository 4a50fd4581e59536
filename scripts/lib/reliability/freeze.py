"""Phase freeze: PostgreSQL stopped without closing anything (SIGSTOP to the postmaster and every
backend: a frozen process, a paused VM, a storage stall) under load, then resumed (SIGCONT).

Its sockets stay open and the kernel still acknowledges, so neither keepalives nor
tcp_user_timeout notice: only the statement deadline (ISSUERD_DB_STATEMENT_TIMEOUT, 5 s by
default) does. Every request must be answered within that deadline plus one second, with a 503
envelope while the database is frozen; /healthz must answer 200 at once on both instances
throughout and /readyz must not say ready; the instances must serve again without a restart once
PostgreSQL resumes, and nothing acknowledged may be lost (a statement the server had received
may commit when it resumes: its retry must replay the answer). The outage's figures, prefixed
freeze_, and freeze_seconds, freeze_deadline_s, freeze_healthz_max_s, freeze_healthz_failures,
freeze_restarts.
"""

import os
import re
import signal
import threading
import time

from .harness import ENV, QUICK, REQUEST_TIMEOUT, ProvisioningLoad, call, figures, promise, promise_database_figures, say

# A quick run (what scripts/test runs) freezes for 10 s, still well past the deadline plus one second.
FREEZE_SECONDS = 10.0 if QUICK else 20.0
HEALTHZ_BOUND_S = 1.0


def statement_deadline_s():
    """ISSUERD_DB_STATEMENT_TIMEOUT as the instances read it (docs/configuration.md), in seconds."""
    text = ENV.get("ISSUERD_DB_STATEMENT_TIMEOUT", "5s")
    match = re.fullmatch(r"(\d+)(ms|s|m)", text)
    if not match:
        raise RuntimeError(f"ISSUERD_DB_STATEMENT_TIMEOUT={text!r}: expected a duration such as 5s or 500ms")
    return int(match.group(1)) * {"ms": 0.001, "s": 1.0, "m": 60.0}[match.group(2)]


def server_processes():
    """The postmaster's pid and its children's (the backends and background workers), from /proc."""
    with open(os.path.join(ENV["RELIABILITY_PG_DIR"], "data", "postmaster.pid")) as pid_file:
        postmaster = int(pid_file.readline())
    children = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as stat:
                # pid (comm) state ppid ...: comm may hold spaces, so split after its closing parenthesis.
                fields = stat.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == postmaster:
            children.append(int(entry))
    return postmaster, children


def signal_all(pids, sig):
    for pid in pids:
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass


def run(instances, receiver):
    deadline = statement_deadline_s()
    bound = deadline + 1.0
    say(f"== PostgreSQL frozen under load: postmaster and backends stopped (SIGSTOP) for {FREEZE_SECONDS:.0f} s; "
        f"statement deadline {deadline:g} s")
    load = ProvisioningLoad(instances, "frz")
    pids_before = {instance.name: instance.process.pid for instance in instances}
    healthz = []  # (t, port, status, elapsed)
    frozen = threading.Event()
    stop = threading.Event()

    def healthz_poller():
        while not stop.is_set():
            for instance in instances:
                answer = call(instance.port, "GET", "/healthz", timeout=REQUEST_TIMEOUT)
                healthz.append((load.now(), instance.port, answer.status, answer.elapsed, frozen.is_set()))
            time.sleep(0.1)

    def fault():
        postmaster, _ = server_processes()
        # The postmaster first, so that it forks nothing more; then every child it has.
        os.kill(postmaster, signal.SIGSTOP)
        _, children = server_processes()
        signal_all(children, signal.SIGSTOP)
        frozen_from = load.now()
        frozen.set()
        say(f"  stopped the postmaster and {len(children)} children")
        time.sleep(FREEZE_SECONDS)
        frozen_until = load.now()
        frozen.clear()
        signal_all(children, signal.SIGCONT)
        os.kill(postmaster, signal.SIGCONT)
        thawed_at = load.now()
        say(f"  resumed after {thawed_at - frozen_from:.1f} s")
        # Requests sent in the first moments may have gone through before the last child stopped;
        # answers are counted from just after.
        return frozen_from + 0.1, frozen_until, thawed_at

    poller = threading.Thread(target=healthz_poller, daemon=True)
    poller.start()
    try:
        window = load.run(fault)
    finally:
        stop.set()
        poller.join()
        # Never leave the server stopped, whatever failed.
        try:
            postmaster, children = server_processes()
            signal_all(children + [postmaster], signal.SIGCONT)
        except OSError:
            pass

    during = [h for h in healthz if h[4]]
    healthz_failures = [h for h in healthz if h[2] != 200]
    healthz_max = max([h[3] for h in healthz] or [0.0])
    restarts = sum(1 for instance in instances if not instance.alive() or instance.process.pid != pids_before[instance.name])
    say(f"  /healthz: {len(healthz)} polls ({len(during)} while frozen), {len(healthz_failures)} not 200, slowest {healthz_max:.3f} s")
    found = load.check(*window, bound, "frozen")
    slowest = found["max_latency_s"]
    figures.update({"freeze_seconds": round(window[1] - window[0] + 0.1, 1), "freeze_deadline_s": deadline})
    promise_database_figures("freeze_", found, bound)
    figures.update({"freeze_healthz_max_s": round(healthz_max, 3), "freeze_healthz_failures": len(healthz_failures),
                    "freeze_restarts": restarts})
    promise("freeze_max_latency_s", slowest <= bound, f"slowest answer {slowest:.2f} s, over the deadline plus one second ({bound:g} s)")
    promise("freeze_healthz_failures", not healthz_failures and during,
            f"{len(healthz_failures)} /healthz polls not answered 200 ({len(during)} polls while frozen)")
    promise("freeze_healthz_max_s", healthz_max <= HEALTHZ_BOUND_S, f"/healthz took {healthz_max:.2f} s")
    promise("freeze_restarts", restarts == 0, f"{restarts} instances restarted or gone")
