"""A real SMTP server on loopback for the e-mail tests (aiosmtpd): STARTTLS required, AUTH
required after it, a certificate for 127.0.0.1 and localhost from a CA made for this run.

    smtp_server.py DIRECTORY USER PASSWORD

Writes DIRECTORY/ca.pem, then prints the port it listens on (one line) and serves until its
standard input closes. Each accepted message is written as DIRECTORY/mail-N.eml (the bytes as
received) with DIRECTORY/mail-N.json ({"tls": bool, "login": user, "mailFrom", "rcptTos"}).
A file DIRECTORY/answer, when present, holds the reply given to RCPT instead of accepting
(for instance "451 4.3.0 Try again later" or "550 5.1.1 <x@y>: Recipient address rejected").
The reply to DATA names a queue id as Postfix does: "250 2.0.0 Ok: queued as QN".
"""
import asyncio
import datetime
import ipaddress
import json
import os
import ssl
import sys
import threading

from aiosmtpd.smtp import SMTP, AuthResult
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID


def make_pki(directory):
    now = datetime.datetime.now(datetime.timezone.utc)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "issuerd test mail CA")])
    ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name)
          .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
          .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=1))
          .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
          .add_extension(x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True)
          .sign(ca_key, hashes.SHA256()))
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")]))
            .issuer_name(ca_name).public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName(
                [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
            .sign(ca_key, hashes.SHA256()))
    with open(os.path.join(directory, "ca.pem"), "wb") as f:
        f.write(ca.public_bytes(serialization.Encoding.PEM))
    with open(os.path.join(directory, "server.pem"), "wb") as f:
        f.write(cert.public_bytes(serialization.Encoding.PEM))
        f.write(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                  serialization.NoEncryption()))
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(os.path.join(directory, "server.pem"))
    return context


class Handler:
    def __init__(self, directory):
        self.directory = directory
        self.count = 0

    async def handle_RCPT(self, server, session, envelope, address, rcpt_options):
        answer = os.path.join(self.directory, "answer")
        if os.path.exists(answer):
            with open(answer) as f:
                return f.read().strip()
        envelope.rcpt_tos.append(address)
        return "250 2.1.5 Ok"

    async def handle_DATA(self, server, session, envelope):
        self.count += 1
        base = os.path.join(self.directory, f"mail-{self.count}")
        meta = {"tls": session.ssl is not None, "login": getattr(session.auth_data, "login", b"").decode() if session.authenticated else "",
                "mailFrom": envelope.mail_from, "rcptTos": envelope.rcpt_tos}
        with open(base + ".eml.part", "wb") as f:
            f.write(envelope.original_content)
        with open(base + ".json", "w") as f:
            json.dump(meta, f)
        os.rename(base + ".eml.part", base + ".eml")
        return f"250 2.0.0 Ok: queued as Q{self.count}"


def main():
    directory, user, password = sys.argv[1], sys.argv[2].encode(), sys.argv[3].encode()
    context = make_pki(directory)
    handler = Handler(directory)

    def authenticator(server, session, envelope, mechanism, auth_data):
        ok = auth_data.login == user and auth_data.password == password
        return AuthResult(success=ok, handled=False, auth_data=auth_data)

    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    server = loop.run_until_complete(loop.create_server(
        lambda: SMTP(handler, hostname="localhost", tls_context=context, require_starttls=True,
                     auth_required=True, auth_require_tls=True, authenticator=authenticator),
        host="127.0.0.1", port=0))
    print(server.sockets[0].getsockname()[1], flush=True)
    threading.Thread(target=lambda: (sys.stdin.read(), loop.call_soon_threadsafe(loop.stop)), daemon=True).start()
    loop.run_forever()


if __name__ == "__main__":
    main()
