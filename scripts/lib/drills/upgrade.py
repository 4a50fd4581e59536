"""scripts/upgrade-drill's driver: the previous release on two instances behind nginx (the
shipped deploy/nginx.conf, only its addresses and certificates rewritten), TSP authorizations
through nginx with a client certificate throughout, the new release's `issuerd migrate` (as the
owner) while the old instances serve, then each instance swapped for the new binary in turn: taken
out of the upstream (nginx reloaded, its old workers gone, so no connection to it remains), stopped
with SIGTERM, started as the new release, put back. Its last line:
upgrade-drill: requests=N 500=N 5xx_other=N failed_through_proxy=N migrations=N (and more figures).
"""

import json
import os
import subprocess
import sys
import time

from .load import Endpoint, Instance, Load, free_port, say

ENV = os.environ
WORK = ENV["DRILL_WORK"]
OLD_BIN, NEW_BIN = ENV["DRILL_OLD_BIN"], ENV["DRILL_NEW_BIN"]
OLD_SQL, NEW_SQL = ENV["DRILL_OLD_SQL"], ENV["DRILL_NEW_SQL"]
NGINX = ENV.get("DRILL_NGINX", "/usr/sbin/nginx")
PHASE_SECONDS = float(ENV.get("DRILL_PHASE_SECONDS", "2"))
# --no-drain: the instances stopped while still in nginx's upstream, to show what that costs.
SKIP_DRAIN = ENV.get("DRILL_SKIP_DRAIN") == "1"
ROOT = ENV["ISSUERD_ROOT"]
sys.path.insert(0, os.path.join(ROOT, "Tests", "Deploy"))
from nginx_mtls_test import make_ca, make_leaf, rewrite  # noqa: E402  (the nginx test's PKI and rewrite)

SERVER = "max_fails=3 fail_timeout=5s max_conns=96"


class Nginx:
    """deploy/nginx.conf in front of the instances, their `server` lines in a file of their own."""

    def __init__(self, ports):
        self.ports, self.down = ports, set()
        self.pki = os.path.join(WORK, "pki-nginx")
        os.makedirs(self.pki, exist_ok=True)
        for directory in ("logs", "tmp"):
            os.makedirs(os.path.join(WORK, directory), exist_ok=True)
            os.chmod(os.path.join(WORK, directory), 0o777)
        os.chmod(WORK, 0o755)
        os.chmod(self.pki, 0o755)
        make_ca(self.pki, "server-ca")
        make_ca(self.pki, "client-ca")
        make_leaf(self.pki, "server", "server-ca", "subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n")
        make_leaf(self.pki, "tsp-client", "client-ca", "extendedKeyUsage=clientAuth\n")
        self.port = free_port()
        self.servers = os.path.join(WORK, "upstream-servers.conf")
        self.write_servers()
        with open(os.path.join(ROOT, "deploy", "nginx.conf")) as handle:
            site = rewrite("nginx.conf", handle.read(), [
                ("listen 443 ssl http2;", f"listen 127.0.0.1:{self.port} ssl http2;"),
                (f"    server 10.0.1.11:8080 {SERVER};\n", f"    include {self.servers};\n"),
                (f"    server 10.0.1.12:8080 {SERVER};\n", ""),
                (f"    server 10.0.1.13:8080 {SERVER};\n", ""),
                ("/etc/nginx/tls/issuerd.crt", os.path.join(self.pki, "server.pem")),
                ("/etc/nginx/tls/issuerd.key", os.path.join(self.pki, "server.key")),
                ("/etc/nginx/tls/tsp-client-ca.pem", os.path.join(self.pki, "client-ca.pem")),
            ])
        with open(os.path.join(WORK, "nginx-site.conf"), "w") as handle:
            handle.write(site)
        self.conf = os.path.join(WORK, "nginx.conf")
        with open(self.conf, "w") as handle:
            handle.write(f"""daemon off;
pid {WORK}/nginx.pid;
error_log {WORK}/logs/nginx-error.log notice;
worker_processes 2;
events {{ worker_connections 512; }}
http {{
    access_log {WORK}/logs/nginx-access.log;
    client_body_temp_path {WORK}/tmp/body;
    proxy_temp_path {WORK}/tmp/proxy;
    fastcgi_temp_path {WORK}/tmp/fastcgi;
    uwsgi_temp_path {WORK}/tmp/uwsgi;
    scgi_temp_path {WORK}/tmp/scgi;
    include {WORK}/nginx-site.conf;
}}
""")
        self.process = None

    def write_servers(self):
        with open(self.servers, "w") as handle:
            for port in self.ports:
                handle.write(f"server 127.0.0.1:{port} {SERVER}{' down' if port in self.down else ''};\n")

    def command(self, *arguments):
        return [NGINX, "-p", WORK, "-c", self.conf, "-e", f"{WORK}/logs/nginx-error.log", *arguments]

    def start(self):
        check = subprocess.run(self.command("-t"), capture_output=True, text=True)
        if check.returncode != 0:
            raise RuntimeError(f"nginx -t refuses the rewritten deploy/nginx.conf: {check.stderr}")
        self.process = subprocess.Popen(self.command(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(0.3)
        self.wait_workers()

    def workers(self):
        """The master's children: (pid, title), the title saying when one is shutting down."""
        out = subprocess.run(["ps", "--ppid", str(self.process.pid), "-o", "pid=,args="], capture_output=True, text=True)
        return [line.strip() for line in out.stdout.splitlines() if line.strip()]

    def wait_workers(self, seconds=30):
        """Until only the current workers run: a reloaded configuration's old workers exit once their
        requests are answered (they close idle upstream connections at once)."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            titles = self.workers()
            if titles and not any("shutting down" in title for title in titles):
                return time.monotonic()
            time.sleep(0.02)
        raise RuntimeError(f"nginx workers still shutting down after {seconds} s: {self.workers()}")

    def set_down(self, port, down):
        (self.down.add if down else self.down.discard)(port)
        self.write_servers()
        started = time.monotonic()
        subprocess.run(self.command("-s", "reload"), check=True, capture_output=True)
        time.sleep(0.2)  # the master starts the new workers, then asks the old ones to finish
        return self.wait_workers() - started

    def stop(self):
        if self.process and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(10)


def migrate():
    # The owner's connection only for these two commands, never in the instances' environment.
    owner = {**ENV, "ISSUERD_MIGRATE_DATABASE_URL": ENV["DRILL_OWNER_URL"], "ISSUERD_SQL_DIR": NEW_SQL}
    out = subprocess.run([NEW_BIN, "migrate"], env=owner, capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"issuerd migrate failed: {out.stderr.strip()}")
    grant = subprocess.run([NEW_BIN, "db", "grant", "--role", ENV["DRILL_SERVICE_ROLE"]], env=owner,
                           capture_output=True, text=True)
    if grant.returncode != 0:
        raise RuntimeError(f"issuerd db grant failed: {grant.stderr.strip()}")
    return sum(1 for line in out.stdout.splitlines() if line.startswith("applied ") and line.endswith(".sql"))


def main():
    cards = json.load(open(os.path.join(WORK, "cards.json")))
    ports = [free_port(), free_port()]
    # The previous release serves as the service role; it cannot migrate, so it does not try.
    old = {"ISSUERD_SQL_DIR": OLD_SQL, "ISSUERD_MIGRATE_ON_START": "false"}
    instances = [Instance(f"old-{i}", OLD_BIN, port, WORK, old) for i, port in enumerate(ports)]
    for instance in instances:
        instance.start()
    nginx = Nginx(ports)
    nginx.start()
    endpoint = Endpoint(nginx.port, os.path.join(nginx.pki, "tsp-client.pem"), os.path.join(nginx.pki, "tsp-client.key"))
    load = Load(endpoint, cards, ENV["ISSUERD_TSP_HMAC_SECRET"], "up", workers=4)
    drains = []
    try:
        say(f"upgrade drill: the previous release on two instances behind nginx; load for {PHASE_SECONDS:g} s")
        load.start()
        time.sleep(PHASE_SECONDS)
        say("upgrade drill: issuerd migrate (the new release, as the owner) under load")
        migrate_started = time.time()
        migrations = migrate()
        migrate_ended = time.time()
        time.sleep(PHASE_SECONDS)
        for i, port in enumerate(ports):
            say(f"upgrade drill: instance {i}: out of nginx, stopped, started as the new release, back in")
            if not SKIP_DRAIN:
                drains.append(nginx.set_down(port, True))
            instances[i].stop()
            instances[i] = Instance(f"new-{i}", NEW_BIN, port, WORK, {"ISSUERD_SQL_DIR": NEW_SQL})
            instances[i].start()
            if not SKIP_DRAIN:
                drains.append(nginx.set_down(port, False))
            else:
                # nginx counted the refused connections: it sends this instance nothing for
                # fail_timeout (5 s) more, so the next one must not stop before then.
                time.sleep(6)
            time.sleep(PHASE_SECONDS)
        records = load.stop()
    finally:
        load.stopping.set()
        nginx.stop()
        for instance in instances:
            instance.stop()

    statuses = [r["status"] for r in records]
    errors = sum(1 for s in statuses if s == 500)
    no_answer = sum(1 for s in statuses if s is None)
    proxy_failures = sum(1 for s in statuses if s in (502, 504)) + no_answer
    other = sum(1 for s in statuses if s is not None and s >= 500 and s not in (500, 502, 504))
    for record in [r for r in records if r["status"] is None or r["status"] >= 500][:10]:
        say(f"  {record['ref']}: {record['status']} {record['error']}")
    refused = sum(1 for s in statuses if s is not None and 400 <= s < 500)
    retried = sum(1 for r in records if r["retried"])
    ok = sum(1 for s in statuses if s == 200)
    passed = errors == 0 and proxy_failures == 0 and ok > 0 and migrations > 0
    # The requests sent while the migration ran, and how long their answers took.
    during = [r for r in records if migrate_started <= r["sent"] <= migrate_ended]
    waits = sorted(1000 * (r["acked"] - r["sent"]) for r in during if r["acked"] is not None)
    p99 = waits[min(len(waits) - 1, int(0.99 * len(waits)))] if waits else 0.0
    say(f"upgrade-drill: requests={len(records)} 500={errors} 5xx_other={other} failed_through_proxy={proxy_failures} "
        f"migrations={migrations} ok={ok} 4xx={refused} no_answer={no_answer} client_retries={retried} drain_max_s={max(drains, default=0):.2f} "
        f"migrate_s={migrate_ended - migrate_started:.1f} during_migrate_requests={len(during)} "
        f"during_migrate_p99_ms={p99:.0f} during_migrate_max_ms={(waits[-1] if waits else 0.0):.0f}")
    return 0 if passed else 1
