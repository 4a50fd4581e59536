"""etcd and a two-node Patroni cluster on loopback, for scripts/failover.

The nodes run deploy/ha/patroni.yml itself: what differs between them comes from Patroni's
environment variables, as in production (deploy/ha/patroni_env.conf), and OVERRIDES below lists
the only changes this test makes to the file. Every process is started detached (its own session)
with its pid in the run's state file, so that a later command of the same run (the faults, the
clean-up) can find, kill and restart it. As root, etcd, Patroni and PostgreSQL run as the postgres
user (PostgreSQL refuses root).

Test tooling only (Python standard library, plus PyYAML, which Debian's patroni package brings).
"""

import base64
import json
import os
import pwd
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
TEMPLATE = os.path.join(ROOT, "deploy", "ha", "patroni.yml")
RESTAPI_USER = "patroni"
CUT_TABLE = "issuerd_failover_cut"


def overrides(node_dir):
    """What this test changes in deploy/ha/patroni.yml, for one node: its own socket folder (two
    nodes and the host's own PostgreSQL would otherwise share /var/run/postgresql) and PostgreSQL's
    log in the node's folder."""
    return {"postgresql": {"parameters": {
        "unix_socket_directories": os.path.join(node_dir, "sock"),
        "logging_collector": "on", "log_directory": os.path.join(node_dir, "pglog"),
        "log_min_messages": "warning"}}}


def nft(*words):
    subprocess.run(["nft", *words], check=True)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def merged(base, extra):
    result = dict(base)
    for key, value in extra.items():
        result[key] = merged(result.get(key) or {}, value) if isinstance(value, dict) else value
    return result


def as_owner():
    """Popen's user/group for the processes PostgreSQL's rules apply to: postgres when root."""
    if os.getuid() != 0:
        return {}
    entry = pwd.getpwnam("postgres")
    return {"user": entry.pw_uid, "group": entry.pw_gid, "extra_groups": []}


def chown_tree(path):
    if os.getuid() != 0:
        return
    entry = pwd.getpwnam("postgres")
    for folder, dirs, files in os.walk(path):
        os.chown(folder, entry.pw_uid, entry.pw_gid)
        for name in files:
            os.chown(os.path.join(folder, name), entry.pw_uid, entry.pw_gid)


def alive(pid):
    if not pid:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie (a detached child nobody waited for) counts as dead.
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def children(pid):
    """The direct children of a process (a postmaster's backends and helpers)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                if int(fields[1]) == pid:
                    found.append(int(entry))
            except (OSError, IndexError, ValueError):
                pass
    return found


class Cluster:
    """The run's etcd and Patroni nodes, kept in WORK/cluster.json between commands."""

    def __init__(self, work):
        self.work = work
        self.state_file = os.path.join(work, "cluster.json")
        if os.path.exists(self.state_file):
            with open(self.state_file) as f:
                self.state = json.load(f)
        else:
            self.state = None

    def save(self):
        with open(self.state_file, "w") as f:
            json.dump(self.state, f, indent=1)

    # ------------------------------------------------------------ starting

    def create(self, passwords, bin_dir):
        nodes = []
        for name in ("pg1", "pg2"):
            nodes.append({"name": name, "port": free_port(), "rest": free_port(), "dir": os.path.join(self.work, name), "pid": None})
        self.state = {"etcd": {"port": free_port(), "peer": free_port(), "pid": None}, "nodes": nodes,
                      "passwords": passwords, "bin_dir": bin_dir}
        os.makedirs(os.path.join(self.work, "etcd"), exist_ok=True)
        with open(TEMPLATE) as f:
            template = yaml.safe_load(f)
        for node in nodes:
            for sub in ("sock", "pglog"):
                os.makedirs(os.path.join(node["dir"], sub), exist_ok=True)
            with open(os.path.join(node["dir"], "patroni.yml"), "w") as f:
                yaml.safe_dump(merged(template, overrides(node["dir"])), f, sort_keys=False)
        chown_tree(self.work)
        self.save()

    def start_etcd(self):
        etcd = self.state["etcd"]
        client, peer = f"http://127.0.0.1:{etcd['port']}", f"http://127.0.0.1:{etcd['peer']}"
        log = open(os.path.join(self.work, "etcd.log"), "ab")
        process = subprocess.Popen(
            ["etcd", "--name", "failover", "--data-dir", os.path.join(self.work, "etcd", "data"),
             "--listen-client-urls", client, "--advertise-client-urls", client,
             "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
             "--initial-cluster", f"failover={peer}", "--initial-cluster-state", "new", "--log-level", "warn"],
            stdout=log, stderr=log, stdin=subprocess.DEVNULL, start_new_session=True, cwd=self.work, **as_owner())
        etcd["pid"] = process.pid
        self.save()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(f"{client}/health", timeout=2) as answer:
                    if json.load(answer).get("health") == "true":
                        return
            except (OSError, ValueError):
                pass
            time.sleep(0.2)
        raise RuntimeError("etcd did not become healthy within 30 s (see etcd.log)")

    def node(self, name):
        return next(n for n in self.state["nodes"] if n["name"] == name)

    def node_env(self, node):
        passwords = self.state["passwords"]
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": node["dir"], "LANG": "C.UTF-8",
            "PATRONI_NAME": node["name"],
            "PATRONI_RESTAPI_LISTEN": f"127.0.0.1:{node['rest']}", "PATRONI_RESTAPI_CONNECT_ADDRESS": f"127.0.0.1:{node['rest']}",
            "PATRONI_POSTGRESQL_LISTEN": f"127.0.0.1:{node['port']}",
            "PATRONI_POSTGRESQL_CONNECT_ADDRESS": f"127.0.0.1:{node['port']}",
            "PATRONI_POSTGRESQL_DATA_DIR": os.path.join(node["dir"], "data"),
            "PATRONI_POSTGRESQL_PGPASS": os.path.join(node["dir"], "pgpass"),
            "PATRONI_POSTGRESQL_BIN_DIR": self.state["bin_dir"],
            "PATRONI_ETCD3_HOSTS": f"127.0.0.1:{self.state['etcd']['port']}",
            "PATRONI_SUPERUSER_PASSWORD": passwords["superuser"],
            "PATRONI_REPLICATION_PASSWORD": passwords["replication"],
            "PATRONI_REWIND_PASSWORD": passwords["rewind"],
            "PATRONI_RESTAPI_USERNAME": RESTAPI_USER, "PATRONI_RESTAPI_PASSWORD": passwords["restapi"],
        }
        return env

    def start_node(self, name):
        node = self.node(name)
        log = open(os.path.join(node["dir"], "patroni.log"), "ab")
        process = subprocess.Popen(
            ["patroni", os.path.join(node["dir"], "patroni.yml")], env=self.node_env(node),
            stdout=log, stderr=log, stdin=subprocess.DEVNULL, start_new_session=True, cwd=node["dir"], **as_owner())
        node["pid"] = process.pid
        self.save()

    # ------------------------------------------------------------ looking

    def rest(self, node, method="GET", path="/cluster", body=None, timeout=5):
        """One call to a node's REST API: (status, parsed body or text), (None, error) when unreachable."""
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(f"http://127.0.0.1:{node['rest']}{path}", data=data, method=method)
        if method != "GET":
            token = base64.b64encode(f"{RESTAPI_USER}:{self.state['passwords']['restapi']}".encode()).decode()
            request.add_header("Authorization", f"Basic {token}")
            request.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(request, timeout=timeout) as answer:
                text = answer.read().decode(errors="replace")
                status = answer.status
        except urllib.error.HTTPError as error:
            text, status = error.read().decode(errors="replace"), error.code
        except (OSError, ValueError) as error:
            return None, str(error)
        try:
            return status, json.loads(text)
        except ValueError:
            return status, text

    def members(self):
        """The cluster as Patroni's /cluster tells it, from whichever node answers: {name: member}."""
        for node in self.state["nodes"]:
            if not alive(node["pid"]):
                continue
            status, body = self.rest(node)
            if status == 200 and isinstance(body, dict):
                return {m["name"]: m for m in body.get("members", [])}
        return {}

    def leader(self):
        return next((name for name, m in self.members().items() if m.get("role") == "leader" and m.get("state") == "running"), None)

    def conninfo(self, user, password, dbname, read_write=True):
        hosts = ",".join("127.0.0.1" for _ in self.state["nodes"])
        ports = ",".join(str(n["port"]) for n in self.state["nodes"])
        text = f"host={hosts} port={ports} user={user} password={password} dbname={dbname} connect_timeout=2"
        return text + (" target_session_attrs=read-write" if read_write else "")

    def psql(self, sql, dbname="postgres", node=None):
        """psql as the superuser on the leader (or on one node); the rows, or None when it fails."""
        if node is None:
            target = self.conninfo("postgres", self.state["passwords"]["superuser"], dbname)
        else:
            target = (f"host=127.0.0.1 port={self.node(node)['port']} user=postgres "
                      f"password={self.state['passwords']['superuser']} dbname={dbname} connect_timeout=2")
        out = subprocess.run(["psql", "-X", "-q", "-tA", "-d", target, "-c", sql], capture_output=True, text=True, timeout=60)
        if out.returncode != 0:
            return None
        return [line for line in out.stdout.splitlines() if line]

    def healthy(self):
        """A running leader whose synchronous standby is streaming: every commit on two nodes."""
        members = self.members()
        leader = next((n for n, m in members.items() if m.get("role") == "leader" and m.get("state") == "running"), None)
        sync = [n for n, m in members.items() if m.get("role") == "sync_standby" and m.get("state") in ("running", "streaming")]
        if not leader or not sync:
            return False
        rows = self.psql("SELECT application_name FROM pg_stat_replication WHERE state = 'streaming' AND sync_state = 'sync'", node=leader)
        return bool(rows) and rows[0] in sync

    def wait_healthy(self, seconds):
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if self.healthy():
                return True
            time.sleep(0.25)
        return False

    # ------------------------------------------------------------ faults

    def postmaster(self, name):
        try:
            with open(os.path.join(self.node(name)["dir"], "data", "postmaster.pid")) as f:
                pid = int(f.readline())
        except (OSError, ValueError):
            return None
        return pid if alive(pid) else None

    def postgres_pids(self, name):
        postmaster = self.postmaster(name)
        return [postmaster] + children(postmaster) if postmaster else []

    def kill_postgres(self, name):
        """SIGKILL to the node's postmaster and every process it started, at once: a crash."""
        pids = self.postgres_pids(name)
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        return len(pids)

    def kill_node(self, name):
        """SIGKILL to the node's Patroni and all of its PostgreSQL together: a host that died."""
        node = self.node(name)
        pids = ([node["pid"]] if alive(node["pid"]) else []) + self.postgres_pids(name)
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        return len(pids)

    def cut_off(self, name):
        """Drops every packet to and from the node's PostgreSQL and REST ports (nftables, in the
        run's own network namespace): a dead host answers nothing, not even a reset, so its peers
        notice it only by timeouts."""
        node = self.node(name)
        ports = f"{{ {node['port']}, {node['rest']} }}"
        nft("add", "table", "inet", CUT_TABLE)
        nft("add", "chain", "inet", CUT_TABLE, "input", "{ type filter hook input priority 0; policy accept; }")
        nft("add", "rule", "inet", CUT_TABLE, "input", "tcp", "dport", ports, "drop")
        nft("add", "rule", "inet", CUT_TABLE, "input", "tcp", "sport", ports, "drop")

    @staticmethod
    def reconnect():
        subprocess.run(["nft", "delete", "table", "inet", CUT_TABLE], capture_output=True)

    def switchover(self, leader, candidate):
        return self.rest(self.node(leader), "POST", "/switchover", {"leader": leader, "candidate": candidate}, timeout=60)

    # ------------------------------------------------------------ stopping

    def stop(self):
        """Everything this run started: the issuerd instances the driver left (killed), each
        Patroni asked to stop (it stops its PostgreSQL), then whatever is left killed, then etcd.
        Safe to call more than once."""
        if not self.state:
            return
        for pid in self.state.get("instances", []):
            if alive(pid):
                os.kill(pid, signal.SIGKILL)
        if os.environ.get("FAILOVER_NETNS"):
            self.reconnect()
        for node in self.state["nodes"]:
            if alive(node["pid"]):
                os.kill(node["pid"], signal.SIGTERM)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and any(alive(n["pid"]) for n in self.state["nodes"]):
            time.sleep(0.2)
        for node in self.state["nodes"]:
            for pid in ([node["pid"]] if alive(node["pid"]) else []) + self.postgres_pids(node["name"]):
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        etcd = self.state["etcd"]["pid"]
        if alive(etcd):
            os.kill(etcd, signal.SIGTERM)
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline and alive(etcd):
                time.sleep(0.1)
            if alive(etcd):
                os.kill(etcd, signal.SIGKILL)
