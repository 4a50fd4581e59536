#!/usr/bin/env python3
"""deploy/nginx-mdes.conf and deploy/nginx.conf under the real nginx: mutual TLS for /mdes/.

Throwaway PKI made with the openssl CLI: a server CA and the server certificate, the client CA
nginx trusts (standing in for Mastercard's) with a client certificate, and another CA with a
client certificate of its own. Both deploy files are included in one http block, as in
production, used as written but for their listen addresses, certificate paths and (nginx.conf's)
upstream servers, rewritten to throwaway ones (each rewrite must match exactly once, so a changed
file fails here rather than testing something else). Behind them, a small Python upstream
records the headers of every request that reaches it. With --issuerd, nginx-mdes.conf is also
included a second time (another port, its proxy_pass rewritten to an upstream holding the real
`issuerd serve`: the built binary on the PostgreSQL of --database-url, migrated, with a throwaway
MDES issuer key and ISSUERD_TRUSTED_PROXIES=127.0.0.1).

Checks, one "✔ nginx mtls: …" or "✘ nginx mtls: …" line each (scripts/test counts them):
  1. a valid client certificate → the upstream sees exactly one X-Client-Verify, SUCCESS;
  2. the same with a client-supplied "X-Client-Verify: FAILED" and "…: SUCCESS" → still only
     nginx's own SUCCESS (the client's header is replaced, not passed alongside);
  3. no client certificate, with a client-supplied "X-Client-Verify: SUCCESS" → refused by nginx,
     nothing reaches the upstream;
  4. a client certificate from another CA, with "X-Client-Verify: SUCCESS" → refused, nothing
     reaches the upstream;
  5. a valid client certificate on a path outside /mdes/ → 404 from nginx, nothing reaches it;
  6. nginx.conf's main server: /mdes/ → 404 there, nothing reaches the upstream;
  7. nginx.conf's main server: a client-supplied "X-Client-Verify: SUCCESS" on another route is
     not passed to the upstream.
With --issuerd:
  8. a valid client certificate (and a client-supplied "X-Client-Verify: FAILED") → issuerd's own
     answer: the operation's ErrorsResponse for an incomplete body, with its responseId, not 403;
  9. no client certificate → refused by nginx; issuerd's request counter for /mdes/ unchanged;
 10. straight to issuerd from 127.0.0.2 (not in ISSUERD_TRUSTED_PROXIES) with a forged
     "X-Client-Verify: SUCCESS" → 403 from issuerd; from 127.0.0.1 (nginx's address) the same
     forged header is let through, which is why issuerd must listen where only the proxy reaches it.
 11. a head whose Content-Length libmicrohttpd 0.9.75 answers itself with its head twice
     ("Content-Length: +2") → behind nginx.conf's main server and (with --issuerd) in front of the
     real issuerd, nginx answers it with exactly one well-formed 400 (one head, the counted body and
     nothing after it), and nothing reaches the upstream or issuerd.

Usage: nginx_mtls_test.py [--nginx PATH] [--keep] [--issuerd PATH --database-url URL]
"""
import argparse
import http.client
import json
import os
import re
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEPLOY_FILE = os.path.join(ROOT, "deploy", "nginx-mdes.conf")
MAIN_FILE = os.path.join(ROOT, "deploy", "nginx.conf")
PATH = "/mdes/issuerServices/1/0/authorizeService"

seen = []
seen_lock = threading.Lock()


class Upstream(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_POST(self):
        length = int(self.headers.get("Content-Length", "0"))
        self.rfile.read(length)
        with seen_lock:
            seen.append({"path": self.path,
                         "verify": self.headers.get_all("X-Client-Verify") or [],
                         "subject": self.headers.get("X-Client-Cert-Subject")})
        body = json.dumps({"responseId": "fake-upstream"}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def openssl(*args, cwd):
    subprocess.run(["openssl", *args], cwd=cwd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def make_ca(directory, name):
    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", f"/CN={name}",
            "-keyout", f"{name}.key", "-out", f"{name}.pem",
            "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign",
            cwd=directory)


def make_leaf(directory, name, ca, extensions):
    openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", f"/CN={name}", "-keyout", f"{name}.key",
            "-out", f"{name}.csr", cwd=directory)
    with open(os.path.join(directory, f"{name}.ext"), "w") as handle:
        handle.write(extensions)
    openssl("x509", "-req", "-in", f"{name}.csr", "-CA", f"{ca}.pem", "-CAkey", f"{ca}.key", "-CAcreateserial",
            "-days", "2", "-extfile", f"{name}.ext", "-out", f"{name}.pem", cwd=directory)


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def rewrite(name, text, replacements):
    for old, new in replacements:
        if text.count(old) != 1:
            raise SystemExit(f"✘ nginx mtls: deploy/{name} no longer has exactly one '{old}'")
        text = text.replace(old, new)
    return text


def request(port, pki, client=None, headers=None, path=PATH, method="POST", answer=None):
    """POSTs over TLS (verifying nginx's certificate); returns the status, or the TLS/connection error.
    With `answer` (a list), the response's body is appended to it."""
    context = ssl.create_default_context(cafile=os.path.join(pki, "server-ca.pem"))
    if client:
        context.load_cert_chain(os.path.join(pki, f"{client}.pem"), os.path.join(pki, f"{client}.key"))
    connection = http.client.HTTPSConnection("localhost", port, context=context, timeout=10)
    try:
        connection.request(method, path, body=b'{"requestId":"1"}',
                           headers={"Content-Type": "application/json", **(headers or {})})
        response = connection.getresponse()
        if answer is not None:
            answer.append(response.read().decode(errors="replace"))
        return response.status
    except (ssl.SSLError, ConnectionError, OSError) as error:
        return f"refused ({type(error).__name__})"
    finally:
        connection.close()


def raw_tls(port, pki, data, client=None):
    """Sends `data` as written over TLS and returns every byte read until nginx closes (or 10 s)."""
    context = ssl.create_default_context(cafile=os.path.join(pki, "server-ca.pem"))
    if client:
        context.load_cert_chain(os.path.join(pki, f"{client}.pem"), os.path.join(pki, f"{client}.key"))
    received = b""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=10) as plain_socket:
            with context.wrap_socket(plain_socket, server_hostname="localhost") as connection:
                connection.sendall(data)
                while True:
                    chunk = connection.recv(65536)
                    if not chunk:
                        break
                    received += chunk
    except (ssl.SSLError, OSError):
        pass
    return received


def one_well_formed_400(answer):
    """True when `answer` is one HTTP 400: a single head whose Content-Length counts exactly the
    bytes after it."""
    head, separator, body = answer.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    lengths = [line.split(":", 1)[1].strip() for line in lines[1:] if line.lower().startswith("content-length:")]
    return (separator != b"" and lines[0].startswith("HTTP/1.1 400 ") and answer.count(b"HTTP/1.") == 1
            and lengths == [str(len(body))])


def plain(port, source, headers, path=PATH):
    """A plain HTTP POST straight to issuerd from the address `source`; returns (status, body)."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10, source_address=(source, 0))
    try:
        connection.request("POST", path, body=b'{"requestId":"direct-1"}',
                           headers={"Content-Type": "application/json", **headers})
        response = connection.getresponse()
        return response.status, response.read().decode(errors="replace")
    except OSError as error:
        return f"refused ({type(error).__name__})", ""
    finally:
        connection.close()


class Issuerd:
    """`issuerd serve` on a free loopback port: migrated, a throwaway MDES issuer key (openssl),
    ISSUERD_TRUSTED_PROXIES=127.0.0.1. Its log goes to WORK/logs/issuerd.log."""

    def __init__(self, binary, database_url, work):
        self.port = free_port()
        self.log = os.path.join(work, "logs", "issuerd.log")
        keys = os.path.join(work, "issuerd")
        os.mkdir(keys)
        openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=mdes-issuer-encryption",
                "-keyout", "issuer.key", "-out", "issuer.crt", cwd=keys)
        with open(os.path.join(keys, "issuer.pem"), "w") as handle:
            for name in ("issuer.key", "issuer.crt"):
                with open(os.path.join(keys, name)) as part:
                    handle.write(part.read())
        secrets = lambda n: subprocess.run(["openssl", "rand", "-base64", str(n)], capture_output=True, text=True,
                                           check=True).stdout.strip()
        self.environment = {
            **{k: v for k, v in os.environ.items() if not k.startswith("ISSUERD_")},
            "ISSUERD_DATABASE_URL": database_url, "ISSUERD_LISTEN": f"127.0.0.1:{self.port}",
            "ISSUERD_MASTER_KEY": secrets(32), "ISSUERD_APP_JWT_SECRET": secrets(48),
            "ISSUERD_TSP_HMAC_SECRET": secrets(32), "ISSUERD_LOG_LEVEL": "notice",
            "ISSUERD_NOTIFY_LOG_FILE": os.path.join(work, "logs", "notifications.jsonl"),
            "ISSUERD_MDES_ISSUER_KEYS": os.path.join(keys, "issuer.pem"),
            "ISSUERD_TRUSTED_PROXIES": "127.0.0.1",
        }
        migrate = subprocess.run([binary, "migrate"], env=self.environment, capture_output=True, text=True)
        if migrate.returncode != 0:
            raise SystemExit("✘ nginx mtls: issuerd migrate failed: " + migrate.stderr[-2000:])
        with open(self.log, "w") as log:
            self.process = subprocess.Popen([binary, "serve"], env=self.environment, stdout=log,
                                            stderr=subprocess.STDOUT)
        deadline = time.time() + 30
        while time.time() < deadline:
            if self.process.poll() is not None:
                raise SystemExit("✘ nginx mtls: issuerd serve exited: " + self.tail())
            try:
                connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=2)
                connection.request("GET", "/readyz")
                if connection.getresponse().status == 200:
                    return
            except OSError:
                pass
            time.sleep(0.1)
        self.stop()
        raise SystemExit("✘ nginx mtls: issuerd did not become ready: " + self.tail())

    def tail(self):
        with open(self.log, errors="replace") as handle:
            return "".join(handle.readlines()[-20:])

    def mdes_requests(self):
        """issuerd's own count of /mdes/ requests (issuerd_http_requests_total), refused ones included."""
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=5)
        connection.request("GET", "/metrics")
        text = connection.getresponse().read().decode()
        return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
                   if line.startswith("issuerd_http_requests_total{") and re.search(r'"/mdes/', line))

    def stop(self):
        if self.process.poll() is None:
            self.process.terminate()  # SIGTERM: the process this test started, by its own handle
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--nginx", default=shutil.which("nginx") or "/usr/sbin/nginx")
    parser.add_argument("--keep", action="store_true", help="keep the work directory")
    parser.add_argument("--issuerd", help="the built issuerd binary: also run checks 8-10 against it")
    parser.add_argument("--database-url", help="with --issuerd: ISSUERD_DATABASE_URL of an empty database")
    arguments = parser.parse_args()
    if bool(arguments.issuerd) != bool(arguments.database_url):
        parser.error("--issuerd and --database-url go together")

    work = tempfile.mkdtemp(prefix="issuerd-nginx-mtls-")
    os.chmod(work, 0o755)  # nginx workers (another user when run as root) read below it
    nginx = None
    issuerd = None
    upstream = ThreadingHTTPServer(("127.0.0.1", 0), Upstream)
    upstream.daemon_threads = True
    threading.Thread(target=upstream.serve_forever, daemon=True).start()
    failures = 0
    try:
        pki = os.path.join(work, "pki")
        os.mkdir(pki)
        os.chmod(pki, 0o755)
        make_ca(pki, "server-ca")
        make_ca(pki, "client-ca")
        make_ca(pki, "other-ca")
        make_leaf(pki, "server", "server-ca",
                  "subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n")
        make_leaf(pki, "mastercard-client", "client-ca", "extendedKeyUsage=clientAuth\n")
        make_leaf(pki, "stranger-client", "other-ca", "extendedKeyUsage=clientAuth\n")

        for directory in ("logs", "tmp"):
            os.mkdir(os.path.join(work, directory))
            os.chmod(os.path.join(work, directory), 0o777)
        port, main_port, real_port = free_port(), free_port(), free_port()
        if arguments.issuerd:
            issuerd = Issuerd(arguments.issuerd, arguments.database_url, work)
        with open(MAIN_FILE) as handle:
            main_site = rewrite("nginx.conf", handle.read(), [
                ("listen 443 ssl http2;", f"listen 127.0.0.1:{main_port} ssl http2;"),
                ("server 10.0.1.11:8080", f"server 127.0.0.1:{upstream.server_address[1]}"),
                ("    server 10.0.1.12:8080 max_fails=3 fail_timeout=5s max_conns=96;\n", ""),
                ("    server 10.0.1.13:8080 max_fails=3 fail_timeout=5s max_conns=96;\n", ""),
                ("/etc/nginx/tls/issuerd.crt", os.path.join(pki, "server.pem")),
                ("/etc/nginx/tls/issuerd.key", os.path.join(pki, "server.key")),
                ("/etc/nginx/tls/tsp-client-ca.pem", os.path.join(pki, "other-ca.pem")),
            ])
        with open(os.path.join(work, "nginx-main.conf"), "w") as handle:
            handle.write(main_site)
        with open(DEPLOY_FILE) as handle:
            site = rewrite("nginx-mdes.conf", handle.read(), [
                ("listen 443 ssl;", f"listen 127.0.0.1:{port} ssl;"),
                ("/etc/nginx/tls/mdes-server.crt", os.path.join(pki, "server.pem")),
                ("/etc/nginx/tls/mdes-server.key", os.path.join(pki, "server.key")),
                ("/etc/nginx/tls/mastercard-client-ca.pem", os.path.join(pki, "client-ca.pem")),
            ])
        with open(os.path.join(work, "nginx-mdes.conf"), "w") as handle:
            handle.write(site)
        real_site = ""
        if issuerd:
            # The same file again in front of the real issuerd: only its port, session cache name
            # and upstream differ.
            with open(DEPLOY_FILE) as handle:
                real_site = f"upstream issuerd_real {{ server 127.0.0.1:{issuerd.port}; }}\n" + rewrite(
                    "nginx-mdes.conf", handle.read(), [
                        ("listen 443 ssl;", f"listen 127.0.0.1:{real_port} ssl;"),
                        ("shared:MDES_TLS:10m", "shared:MDES_TLS_REAL:10m"),
                        ("proxy_pass         http://issuerd;", "proxy_pass         http://issuerd_real;"),
                        ("/etc/nginx/tls/mdes-server.crt", os.path.join(pki, "server.pem")),
                        ("/etc/nginx/tls/mdes-server.key", os.path.join(pki, "server.key")),
                        ("/etc/nginx/tls/mastercard-client-ca.pem", os.path.join(pki, "client-ca.pem")),
                    ])
        with open(os.path.join(work, "nginx-mdes-issuerd.conf"), "w") as handle:
            handle.write(real_site)
        # One http block holding both deploy files, as /etc/nginx/nginx.conf includes them.
        with open(os.path.join(work, "nginx.conf"), "w") as handle:
            handle.write(f"""daemon off;
pid {work}/nginx.pid;
error_log {work}/logs/error.log info;
worker_processes 1;
events {{ worker_connections 64; }}
http {{
    access_log off;
    client_body_temp_path {work}/tmp/body;
    proxy_temp_path {work}/tmp/proxy;
    fastcgi_temp_path {work}/tmp/fastcgi;
    uwsgi_temp_path {work}/tmp/uwsgi;
    scgi_temp_path {work}/tmp/scgi;
    include {work}/nginx-main.conf;
    include {work}/nginx-mdes.conf;
    include {work}/nginx-mdes-issuerd.conf;
}}
""")
        check = subprocess.run([arguments.nginx, "-t", "-p", work, "-c", f"{work}/nginx.conf", "-e",
                                f"{work}/logs/error.log"], capture_output=True, text=True)
        if check.returncode != 0:
            print(check.stderr, file=sys.stderr)
            raise SystemExit("✘ nginx mtls: nginx -t refuses deploy/nginx-mdes.conf")
        nginx = subprocess.Popen([arguments.nginx, "-p", work, "-c", f"{work}/nginx.conf", "-e",
                                  f"{work}/logs/error.log"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.time() + 10
        while time.time() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                socket.create_connection(("127.0.0.1", main_port), timeout=0.2).close()
                if issuerd:
                    socket.create_connection(("127.0.0.1", real_port), timeout=0.2).close()
                break
            except OSError:
                if nginx.poll() is not None:
                    raise SystemExit("✘ nginx mtls: nginx exited: " + nginx.stderr.read().decode())
                time.sleep(0.05)

        def verdict(name, ok, detail):
            nonlocal failures
            print(f"{'✔' if ok else '✘'} nginx mtls: {name} ({detail})", flush=True)
            failures += 0 if ok else 1

        def reached(action):
            with seen_lock:
                before = len(seen)
            status = action()
            with seen_lock:
                return status, seen[before:]

        status, got = reached(lambda: request(port, pki, client="mastercard-client"))
        verdict("a client certificate from the configured CA reaches the upstream with X-Client-Verify: SUCCESS",
                status == 200 and len(got) == 1 and got[0]["verify"] == ["SUCCESS"]
                and "CN=mastercard-client" in (got[0]["subject"] or ""),
                f"status {status}, upstream saw {got}")

        status, got = reached(lambda: request(port, pki, client="mastercard-client",
                                              headers={"X-Client-Verify": "FAILED"}))
        ok_failed = status == 200 and len(got) == 1 and got[0]["verify"] == ["SUCCESS"]
        status2, got2 = reached(lambda: request(port, pki, client="mastercard-client",
                                                headers={"X-Client-Verify": "SUCCESS, NONE"}))
        verdict("a client-supplied X-Client-Verify is replaced by nginx's verdict, never passed along",
                ok_failed and status2 == 200 and len(got2) == 1 and got2[0]["verify"] == ["SUCCESS"],
                f"upstream saw {got + got2}")

        status, got = reached(lambda: request(port, pki, headers={"X-Client-Verify": "SUCCESS"}))
        verdict("no client certificate (and a forged X-Client-Verify: SUCCESS) is refused; nothing reaches the upstream",
                status != 200 and got == [], f"status {status}, upstream saw {got}")

        status, got = reached(lambda: request(port, pki, client="stranger-client",
                                              headers={"X-Client-Verify": "SUCCESS"}))
        verdict("a client certificate from another CA is refused; nothing reaches the upstream",
                status != 200 and got == [], f"status {status}, upstream saw {got}")

        status, got = reached(lambda: request(port, pki, client="mastercard-client", path="/v1/cards"))
        verdict("a path outside /mdes/ is 404 at nginx; nothing reaches the upstream",
                status == 404 and got == [], f"status {status}, upstream saw {got}")

        status, got = reached(lambda: request(main_port, pki, headers={"X-Client-Verify": "SUCCESS"}))
        verdict("nginx.conf's main server answers /mdes/ with 404; nothing reaches the upstream",
                status == 404 and got == [], f"status {status}, upstream saw {got}")

        status, got = reached(lambda: request(main_port, pki, headers={"X-Client-Verify": "SUCCESS"},
                                              path="/v1/wallet/verifications"))
        verdict("nginx.conf's main server never passes a client's X-Client-Verify on",
                status == 200 and len(got) == 1 and got[0]["verify"] == [], f"status {status}, upstream saw {got}")

        malformed = b"POST /v1/wallet/verifications HTTP/1.1\r\nHost: localhost\r\nContent-Length: +2\r\n\r\nab"
        with seen_lock:
            before = len(seen)
        answer = raw_tls(main_port, pki, malformed)
        with seen_lock:
            got = seen[before:]
        verdict("nginx.conf's main server answers a Content-Length of '+2' with one well-formed 400; nothing "
                "reaches the upstream", one_well_formed_400(answer) and got == [], f"answer {answer[:300]!r}, upstream saw {got}")

        if issuerd:
            before = issuerd.mdes_requests()
            answer = raw_tls(real_port, pki, malformed.replace(b"/v1/wallet/verifications", PATH.encode()),
                             client="mastercard-client")
            after = issuerd.mdes_requests()
            verdict("in front of issuerd, a Content-Length of '+2' gets nginx's one well-formed 400 and never "
                    "reaches issuerd", one_well_formed_400(answer) and after == before,
                    f"answer {answer[:300]!r}, issuerd's /mdes/ requests {before} → {after}")

            answer = []
            status = request(real_port, pki, client="mastercard-client", headers={"X-Client-Verify": "FAILED"},
                             answer=answer)
            try:
                body = json.loads(answer[0]) if answer else {}
            except ValueError:
                body = {}
            body = body if isinstance(body, dict) else {}
            verdict("behind nginx, a valid client certificate gets issuerd's own answer (its ErrorsResponse "
                    "for an incomplete Authorize Service, not 403), a client's X-Client-Verify: FAILED notwithstanding",
                    status == 400 and body.get("responseId") == "1" and body.get("errorCode") == "INVALID_FIELD_VALUE",
                    f"status {status}, body {answer[:1]}")

            before = issuerd.mdes_requests()
            answer = []
            status = request(real_port, pki, headers={"X-Client-Verify": "SUCCESS"}, answer=answer)
            after = issuerd.mdes_requests()
            refusal = answer[0] if answer else ""
            verdict("behind nginx, no client certificate (a forged X-Client-Verify: SUCCESS) is refused by nginx "
                    "and never reaches issuerd",
                    status == 400 and "No required SSL certificate was sent" in refusal
                    and before >= 1 and after == before,
                    f"status {status}, issuerd's /mdes/ requests {before} → {after}")

            forged = {"X-Client-Verify": "SUCCESS"}
            status, text = plain(issuerd.port, "127.0.0.2", forged)
            trusted_status, _ = plain(issuerd.port, "127.0.0.1", forged)
            verdict("straight to issuerd from 127.0.0.2 (not in ISSUERD_TRUSTED_PROXIES) a forged "
                    "X-Client-Verify: SUCCESS is 403 (from 127.0.0.1 it passes the gate: issuerd must listen "
                    "where only the proxy reaches it)",
                    status == 403 and trusted_status == 400, f"status {status} {text[:200]}, from 127.0.0.1 {trusted_status}")
    finally:
        if issuerd is not None:
            issuerd.stop()
        if nginx is not None:
            nginx.send_signal(signal.SIGQUIT)  # graceful stop of the nginx this test started
            try:
                nginx.wait(timeout=10)
            except subprocess.TimeoutExpired:
                nginx.kill()
                nginx.wait()
        upstream.shutdown()
        if arguments.keep:
            print(f"work directory kept: {work}", file=sys.stderr)
        else:
            shutil.rmtree(work, ignore_errors=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
