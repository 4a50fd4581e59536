#!/usr/bin/env python3
"""A fake MDES Customer Service API for issuerd's tests (test tooling only).

Every request's OAuth 1.0a header is checked with Mastercard's own signer library
(`mastercard-oauth1-signer`, pinned in scripts/lib/common.sh): the signature base string is rebuilt
by `OAuth.get_base_string` from the URL the request reached and the header's parameters, the body
hash by the library's own SHA-256/Base64 helpers, and the RSA-SHA256 signature is verified with the
public key of the issuer's signing key. A request that fails any check is answered 401 in
Mastercard's error shape. The body is checked against the CSAPI 2.1.7 schema (root object,
TokenUniqueReference 48-64, the operation's ReasonCodes, AuditInfo lengths).

Answers: `Token<Op>Response` by default; a planned answer for a token unique reference
(POST /_plan {"<TUR>": [{"status": 503, "errors": [{...}]}, ...]}) is used once, in order.
GET /_requests returns every request seen, with the checks' results.

`/token/update` (a card's tokens moved to new account data): with --decryption-key (the private
key of the certificate issuerd encrypts to), `EncryptedAccountInformation` is decrypted by
Mastercard's own `mastercard-client-encryption` and recorded as "decrypted"; the answer lists the
tokens registered for the decrypted `CurrentAccount.AccountPan` (POST /_accounts {"<PAN>":
["<TUR>", ...]}). Planned answers for updates are keyed "update".

GET /_summary counts the requests by operation and answered status, the ones failing a check, and
lists the decrypted `CurrentAccount.AccountPan` of every `/token/update` answered 200, once per
request (a benchmark compares them with the updates it queued). --brief keeps only what the
summary needs of each request, so a run of 100,000 calls stays small.

Usage: fake_csapi.py (--signing-key PEM_FILE | --public-key PEM_FILE) --consumer-key KEY
       [--decryption-key PEM_FILE] [--port N] [--verbose] [--brief]
Prints "listening <port>" on stdout once ready; stops on SIGTERM, Ctrl-C or when stdin closes.
--verbose prints one line per request on stderr (a developer's terminal: docs/networks.md, "Try it").
"""
import argparse
import base64
import json
import re
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import unquote

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding

import client_encryption.field_level_encryption as fle
from client_encryption.field_level_encryption_config import FieldLevelEncryptionConfig
import oauth1.coreutils as oauth_util
from oauth1.oauth import OAuth

REASONS = {"activate": "AC", "suspend": "LSTZ", "unsuspend": "FTZ", "delete": "LSFTCDZ"}
PATH = re.compile(r"^/mdes/csapi/v2/token/(activate|suspend|unsuspend|delete|update)$")
ENCRYPTED_FIELDS = ("EncryptedData", "PublicKeyFingerprint", "EncryptedKey", "OaepHashingAlgorithm", "Iv")

lock = threading.Lock()
seen = []
plans = {}
accounts = {}


def errors(status, source, reason, code, description, recoverable):
    return status, {"Errors": {"Error": [{"Source": source, "ReasonCode": reason, "ErrorCode": code,
                                          "Description": description, "Recoverable": recoverable}]}}


def check_signature(handler, url, body_text):
    """The header's parameters through Mastercard's base-string code, the signature verified."""
    header = handler.headers.get("Authorization", "")
    if not header.startswith("OAuth "):
        return {"signatureValid": False, "problem": "no OAuth header"}
    params = {}
    for item in header[len("OAuth "):].split(","):
        name, _, value = item.partition("=")
        if not (value.startswith('"') and value.endswith('"')):
            return {"signatureValid": False, "problem": "unquoted parameter " + name}
        params[name] = value[1:-1]
    problems = []
    if params.get("oauth_consumer_key") != handler.server.consumer_key:
        problems.append("consumer key")
    if params.get("oauth_signature_method") != "RSA-SHA256" or params.get("oauth_version") != "1.0":
        problems.append("method or version")
    if not re.fullmatch(r"[0-9A-Za-z]{16}", params.get("oauth_nonce", "")):
        problems.append("nonce")
    if abs(int(params.get("oauth_timestamp", "0")) - time.time()) > 300:
        problems.append("timestamp")
    body_hash_ok = params.get("oauth_body_hash") == oauth_util.base64_encode(oauth_util.sha256_encode(body_text))
    if not body_hash_ok:
        problems.append("body hash")
    signature_text = params.pop("oauth_signature", "")
    base_string = OAuth.get_base_string(url, "POST", params)
    try:
        handler.server.public_key.verify(base64.b64decode(unquote(signature_text), validate=True),
                                         base_string.encode(), padding.PKCS1v15(), hashes.SHA256())
        signature_ok = True
    except (InvalidSignature, ValueError):
        signature_ok = False
        problems.append("signature")
    return {"signatureValid": signature_ok, "bodyHashValid": body_hash_ok, "baseString": base_string,
            "nonce": params.get("oauth_nonce"), "problem": ", ".join(problems) or None}


def check_update(root):
    """TokenUpdateRequest (CSAPI 2.1.7): the five encrypted fields, no ReasonCode, the indicator."""
    encrypted = root.get("EncryptedAccountInformation")
    if not isinstance(encrypted, dict) or any(not isinstance(encrypted.get(f), str) for f in ENCRYPTED_FIELDS):
        return "EncryptedAccountInformation"
    if "ReasonCode" in root:
        return "ReasonCode"
    if root.get("UpdateWalletProviderIndicator") not in (None, "0", "1"):
        return "UpdateWalletProviderIndicator"
    if "TokenUniqueReference" in root and "CurrentAccount" in root:
        return "TokenUniqueReference"
    return None


def decryption_config(key_file):
    """Mastercard's client-encryption configuration for TokenUpdateRequest (its key read once)."""
    return FieldLevelEncryptionConfig({
        "paths": {"$": {"toEncrypt": {}, "toDecrypt": {
            "TokenUpdateRequest.EncryptedAccountInformation":
                "TokenUpdateRequest.EncryptedAccountInformation.EncryptedData"}}},
        "ivFieldName": "Iv", "encryptedKeyFieldName": "EncryptedKey", "encryptedValueFieldName": "EncryptedData",
        "dataEncoding": "hex", "oaepPaddingDigestAlgorithmFieldName": "OaepHashingAlgorithm",
        "oaepPaddingDigestAlgorithm": "SHA256", "decryptionKey": key_file})


def decrypt_account(server, root):
    """The account data, decrypted by Mastercard's client-encryption library."""
    answer = fle.decrypt_payload(json.loads(json.dumps({"TokenUpdateRequest": root})), server.decryption_config)
    plaintext = answer["TokenUpdateRequest"]["EncryptedAccountInformation"]["EncryptedData"]
    if not isinstance(plaintext, dict):
        raise ValueError("not an object")
    return plaintext


def check_body(operation, body):
    root = body.get("Token" + operation.capitalize() + "Request") if isinstance(body, dict) else None
    if not isinstance(root, dict) or len(body) != 1:
        return "root object"
    if operation == "update":
        problem = check_update(root)
        if problem:
            return problem
        return check_audit(operation, root)
    tur = root.get("TokenUniqueReference")
    if not isinstance(tur, str) or not 48 <= len(tur) <= 64:
        return "TokenUniqueReference"
    reason = root.get("ReasonCode")
    if not isinstance(reason, str) or len(reason) != 1 or reason not in REASONS[operation]:
        return "ReasonCode"
    return check_audit(operation, root)


def check_audit(operation, root):
    audit = root.get("AuditInfo")
    if not isinstance(audit, dict):
        return "AuditInfo"
    for field, low, high in (("UserId", 4, 50), ("UserName", 4, 200), ("Organization", 4, 200)):
        if not isinstance(audit.get(field), str) or not low <= len(audit[field]) <= high:
            return "AuditInfo." + field
    comment = root.get("CommentText")
    if comment is not None and not (isinstance(comment, str) and 1 <= len(comment) <= 500):
        return "CommentText"
    if "DeleteFromConsumerApp" in root and (operation != "delete" or root["DeleteFromConsumerApp"] not in ("true", "false")):
        return "DeleteFromConsumerApp"
    return None


def account_pan(record):
    """The decrypted current Account PAN of an update request, or None."""
    if "account" in record:
        return record["account"]
    return ((record.get("decrypted") or {}).get("CurrentAccount") or {}).get("AccountPan")


def brief(record):
    """What /_summary needs of a request, without its body (--brief)."""
    return {"operation": record["operation"], "answeredStatus": record["answeredStatus"],
            "problem": record["problem"], "schemaProblem": record["schemaProblem"], "account": account_pan(record)}


def summary(records):
    """GET /_summary: counts, and the accounts of the updates answered 200 (one entry per request)."""
    operations, statuses = {}, {}
    for record in records:
        operations[record["operation"]] = operations.get(record["operation"], 0) + 1
        statuses[str(record["answeredStatus"])] = statuses.get(str(record["answeredStatus"]), 0) + 1
    return {"requests": len(records), "byOperation": operations, "byStatus": statuses,
            "failedChecks": sum(1 for r in records if r["problem"] or r["schemaProblem"]),
            "updatedAccounts": [account_pan(r) for r in records
                                if r["operation"] == "update" and r["answeredStatus"] == 200]}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # The head and the body of an answer are two writes: with Nagle's algorithm the body would
    # wait for the client's delayed ACK of the head (about 40 ms a request on a kept-alive
    # connection), and that, not the checks, would bound how fast a client can call.
    disable_nagle_algorithm = True

    def log_message(self, *args):
        pass

    def answer(self, status, payload):
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        if self.path == "/_requests":
            with lock:
                return self.answer(200, {"requests": list(seen)})
        if self.path == "/_summary":
            with lock:
                return self.answer(200, summary(seen))
        self.answer(404, {})

    def do_POST(self):
        raw = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        if self.path == "/_plan":
            with lock:
                for tur, answers in json.loads(raw).items():
                    plans.setdefault(tur, []).extend(answers)
            return self.answer(200, {})
        if self.path == "/_accounts":
            with lock:
                accounts.update(json.loads(raw))
            return self.answer(200, {})
        match = PATH.match(self.path)
        if not match:
            return self.answer(*errors(404, "System", "NOT_FOUND", "E0000404", "No such resource", "false"))
        operation = match.group(1)
        url = "http://" + self.headers.get("Host", "") + self.path
        body_text = raw.decode("utf-8")
        record = {"operation": operation, "path": self.path, "contentType": self.headers.get("Content-Type")}
        record.update(check_signature(self, url, body_text))
        try:
            body = json.loads(body_text)
        except ValueError:
            body = None
        record["body"] = body
        record["schemaProblem"] = check_body(operation, body)
        root = (body or {}).get("Token" + operation.capitalize() + "Request") or {}
        tur = root.get("TokenUniqueReference")
        if operation == "update" and not record["schemaProblem"] and self.server.decryption_key:
            try:
                record["decrypted"] = decrypt_account(self.server, root)
            except Exception as error:  # recorded for the test to show
                record["schemaProblem"] = "EncryptedAccountInformation does not decrypt: " + str(error)
        if operation == "update":
            tur = "update"
        if record["problem"]:
            status, payload = errors(401, "Authorization", "AUTHENTICATION_FAILED", "E0000401",
                                     "OAuth signature check failed", "false")
        elif record["schemaProblem"]:
            status, payload = errors(400, record["schemaProblem"], "INVALID_FIELD_VALUE", "E0010020",
                                     "Field does not match the schema", "false")
        else:
            with lock:
                planned = plans.get(tur, [])
                plan = planned.pop(0) if planned else None
            if plan:
                status, payload = plan["status"], {"Errors": {"Error": plan["errors"]}}
            elif operation == "update":
                pan = account_pan(record)
                with lock:
                    moved = list(accounts.get(pan, []))
                status, payload = 200, {"TokenUpdateResponse": {"Tokens": {"Token": [
                    {"TokenUniqueReference": token, "CommentId": "C" + str(len(seen) + 100000)} for token in moved]}}}
            else:
                token = {"TokenUniqueReference": tur}
                if root.get("CommentText"):
                    token["CommentId"] = "C" + str(len(seen) + 100000)
                status, payload = 200, {"Token" + operation.capitalize() + "Response": {"Token": token}}
        record["answeredStatus"] = status
        if self.server.brief:
            record = brief(record)
        with lock:
            seen.append(record)
        if self.server.verbose:
            verdict = record["problem"] or record["schemaProblem"] or "signature and body hash valid"
            print(f"{operation} {tur} reason {root.get('ReasonCode')}: {verdict} → {status}", file=sys.stderr,
                  flush=True)
        self.answer(status, payload)


def main():
    parser = argparse.ArgumentParser(description="Fake MDES Customer Service API for tests: checks every "
                                     "request's OAuth signature with Mastercard's signer library")
    key = parser.add_mutually_exclusive_group(required=True)
    key.add_argument("--signing-key", help="PEM file of the issuer's signing key (only its public half is used)")
    key.add_argument("--public-key", help="PEM file of the signing key's public key (a key kept in an HSM)")
    parser.add_argument("--consumer-key", required=True)
    parser.add_argument("--decryption-key", help="PEM file of the private key /token/update data is encrypted to")
    parser.add_argument("--port", type=int, default=0, help="the port on 127.0.0.1 (default: a free one)")
    parser.add_argument("--verbose", action="store_true", help="one line per request on stderr")
    parser.add_argument("--brief", action="store_true", help="keep only what /_summary needs of each request")
    arguments = parser.parse_args()
    if arguments.public_key:
        with open(arguments.public_key, "rb") as handle:
            public_key = serialization.load_pem_public_key(handle.read())
    else:
        with open(arguments.signing_key, "rb") as handle:
            public_key = serialization.load_pem_private_key(handle.read(), password=None).public_key()
    server = ThreadingHTTPServer(("127.0.0.1", arguments.port), Handler)
    server.daemon_threads = True
    server.public_key = public_key
    server.consumer_key = arguments.consumer_key
    server.verbose = arguments.verbose
    server.brief = arguments.brief
    server.decryption_key = arguments.decryption_key
    server.decryption_config = decryption_config(arguments.decryption_key) if arguments.decryption_key else None
    threading.Thread(target=server.serve_forever, daemon=True).start()
    print("listening", server.server_address[1], flush=True)
    try:
        sys.stdin.read()  # the test closes stdin (or exits) to stop the fake
    except KeyboardInterrupt:
        pass
    server.shutdown()


if __name__ == "__main__":
    main()
