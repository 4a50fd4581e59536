#!/usr/bin/env python3
"""A fake MDES: calls issuerd's issuer web services over real HTTP, the way Mastercard does.

Every `encryptedPayload` is made by Mastercard's own field-level encryption library
(`mastercard-client-encryption`, PyPI, pinned in scripts/lib/common.sh) to the issuer's certificate,
named by the SHA-1 fingerprint of the certificate (what MDES is reported to send). Test tooling only.

Reads one JSON object on stdin:
  {"baseURL": "http://127.0.0.1:port", "certificatePEM": "...",
   "steps": [{"op": "authorizeService", "body": {...}, "plaintext": {...} | null,
              "oaep": "SHA256"|"SHA512", "headers": {...} | null, "send": "encrypted"|"tampered"}]}
For a step with "plaintext", the library encrypts it into body.fundingAccountInfo.encryptedPayload.
"tampered" flips one byte of the ciphertext after the library made it. {"repeatPrevious": true}
sends the previous step's bytes again (MDES's retry). Headers default to
X-Client-Verify: SUCCESS (the mutual-TLS proxy's). Prints {"answers": [{"status", "body"}]}.

Standalone, against a running issuerd (scripts/run; docs/networks.md, "Try it"), one operation per
call, the answer printed: run it with --help.
"""
import argparse
import copy
import datetime
import hashlib
import json
import os
import sys
import tempfile
import urllib.error
import urllib.request

from cryptography import x509
from cryptography.hazmat.primitives import serialization

import client_encryption.field_level_encryption as fle
from client_encryption.field_level_encryption_config import FieldLevelEncryptionConfig

ENVELOPE = "fundingAccountInfo.encryptedPayload"


def encrypt(body, plaintext, certificate_pem, oaep):
    handle = tempfile.NamedTemporaryFile("w", suffix=".pem", delete=False)
    handle.write(certificate_pem)
    handle.close()
    try:
        certificate = x509.load_pem_x509_certificate(certificate_pem.encode())
        sha1 = hashlib.sha1(certificate.public_bytes(serialization.Encoding.DER)).hexdigest()
        config = FieldLevelEncryptionConfig({
            "paths": {"$": {"toEncrypt": {ENVELOPE + ".encryptedData": ENVELOPE}, "toDecrypt": {}}},
            "ivFieldName": "iv",
            "encryptedKeyFieldName": "encryptedKey",
            "encryptedValueFieldName": "encryptedData",
            "dataEncoding": "hex",
            "encryptionCertificate": handle.name,
            "oaepPaddingDigestAlgorithmFieldName": "oaepHashingAlgorithm",
            "oaepPaddingDigestAlgorithm": oaep,
            "encryptionKeyFingerprintFieldName": "publicKeyFingerprint",
            "encryptionKeyFingerprint": sha1,
        })
        body = copy.deepcopy(body)
        body.setdefault("fundingAccountInfo", {})["encryptedPayload"] = {"encryptedData": plaintext}
        return fle.encrypt_payload(body, config)
    finally:
        os.unlink(handle.name)


def post(url, body_bytes, headers):
    request = urllib.request.Request(url, data=body_bytes, method="POST")
    request.add_header("Content-Type", "application/json")
    for name, value in headers.items():
        request.add_header(name, value)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def main():
    request = json.load(sys.stdin)
    answers = []
    previous = None
    for step in request["steps"]:
        if step.get("repeatPrevious"):  # MDES's retry: the same bytes again
            status, text = post(previous[0], previous[1], previous[2])
            answers.append({"status": status, "body": json.loads(text), "raw": text})
            continue
        body = step["body"]
        if step.get("plaintext") is not None:
            body = encrypt(body, step["plaintext"], request["certificatePEM"], step.get("oaep", "SHA256"))
            if step.get("send") == "tampered":
                data = body["fundingAccountInfo"]["encryptedPayload"]["encryptedData"]
                body["fundingAccountInfo"]["encryptedPayload"]["encryptedData"] = \
                    data[:-2] + ("00" if data[-2:] != "00" else "11")
        headers = step.get("headers")
        if headers is None:
            headers = {"X-Client-Verify": "SUCCESS"}
        raw = step.get("raw")
        data = raw.encode() if raw is not None else json.dumps(body, separators=(",", ":")).encode()
        url = request["baseURL"] + "/mdes/issuerServices/1/0/" + step["op"]
        previous = (url, data, headers)
        status, text = post(url, data, headers)
        try:
            parsed = json.loads(text)
        except ValueError:
            parsed = text
        answers.append({"status": status, "body": parsed, "raw": text})
    json.dump({"answers": answers}, sys.stdout)


CLI_HELP = """A fake MDES for a developer: calls one issuer web service of a running issuerd the way
Mastercard does (the card data encrypted by Mastercard's library to the issuer's certificate,
named by its SHA-1 fingerprint) and prints the HTTP status and the JSON answer.

issuerd must be started with ISSUERD_MDES_ISSUER_KEYS (the key and certificate given here with
--cert) and ISSUERD_TRUSTED_PROXIES=127.0.0.1: this script sends "X-Client-Verify: SUCCESS"
itself, standing in for the mutual-TLS proxy. Without arguments it reads the tests' JSON on stdin.

examples (docs/networks.md, "Try it"):
  fake_mdes.py --cert issuer.pem authorize --pan 5204731600014792 --expiry 12/30 --tur DWSPMC0001
  fake_mdes.py --cert issuer.pem methods --pan 5204731600014792 --expiry 12/30 --tur DWSPMC0001
  fake_mdes.py deliver --tur DWSPMC0001 --method TEXT_TO_CARDHOLDER_NUMBER --value 010-****-5678
  fake_mdes.py validate --tur DWSPMC0001 --code 123456
  fake_mdes.py --cert issuer.pem activated --pan 5204731600014792 --expiry 12/30 --tur DWSPMC0001
  fake_mdes.py updated --tur DWSPMC0001 --status SUSPENDED
"""


def cli(argv):
    parser = argparse.ArgumentParser(
        prog="fake_mdes.py", description=CLI_HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", default="http://127.0.0.1:8080", help="issuerd's base URL (default: %(default)s)")
    parser.add_argument("--cert", help="the issuer encryption certificate (PEM) MDES encrypts to; "
                                       "needed by authorize, methods and activated")
    parser.add_argument("--oaep", choices=["SHA256", "SHA512"], default="SHA256")
    parser.add_argument("--request-id", help="requestId (default: a fresh one; reuse one to replay MDES's retry)")
    parser.add_argument("--correlation-id", default="D11112222333")
    commands = parser.add_subparsers(dest="command", required=True, metavar="operation")

    def card(command, token=False):
        command.add_argument("--pan", required=True, help="the card's number (as the issuer holds it)")
        command.add_argument("--expiry", required=True, help="MM/YY")
        command.add_argument("--tur", required=True, help="tokenUniqueReference")
        command.add_argument("--source", default="ACCOUNT_ON_FILE",
                             choices=["ACCOUNT_ON_FILE", "ACCOUNT_ADDED_MANUALLY", "ACCOUNT_ADDED_VIA_APPLICATION"],
                             help="how the card reached the wallet (default: %(default)s; manually is 'keyed' "
                                  "to the rules)")
        if token:
            command.add_argument("--token", default="5204731600990009", help="the token number (default: %(default)s)")

    authorize = commands.add_parser("authorize", help="Authorize Service")
    card(authorize)
    authorize.add_argument("--recommendation", default="REQUIRE_ADDITIONAL_AUTHENTICATION",
                           choices=["APPROVED", "REQUIRE_ADDITIONAL_AUTHENTICATION", "DECLINED"],
                           help="the wallet's recommendedDecision (default: %(default)s)")
    card(commands.add_parser("methods", help="Request Activation Methods"))
    deliver = commands.add_parser("deliver", help="Deliver Activation Code (issuerd makes and sends the code)")
    deliver.add_argument("--tur", required=True)
    deliver.add_argument("--method", required=True, help="an activationMethods type, e.g. TEXT_TO_CARDHOLDER_NUMBER")
    deliver.add_argument("--value", required=True, help="its value as Request Activation Methods gave it")
    validate = commands.add_parser("validate", help="Validate Activation Code")
    validate.add_argument("--tur", required=True)
    validate.add_argument("--code", required=True)
    card(commands.add_parser("activated", help="Notify Service Activated"), token=True)
    updated = commands.add_parser("updated", help="Notify Token Updated (STATUS_UPDATE)")
    updated.add_argument("--tur", required=True)
    updated.add_argument("--status", required=True, choices=["ACTIVE", "SUSPENDED", "DEACTIVATED", "INACTIVE"])
    arguments = parser.parse_args(argv)

    now = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0)
    stamp = now.strftime("%Y-%m-%dT%H:%M:%SZ")
    request_id = arguments.request_id or "dev-" + os.urandom(6).hex()
    core = {"requestId": request_id, "correlationId": arguments.correlation_id}
    plaintext = None
    if hasattr(arguments, "pan"):
        month, _, year = arguments.expiry.partition("/")
        plaintext = {
            "cardAccountData": {"accountNumber": arguments.pan, "expiryMonth": month, "expiryYear": year[-2:]},
            "source": arguments.source,
            "dataValidUntilTimestamp": (now + datetime.timedelta(minutes=30)).strftime("%Y-%m-%dT%H:%M:%SZ"),
        }
        if getattr(arguments, "token", None):
            plaintext["tokenData"] = {"token": arguments.token, "expiryMonth": month, "expiryYear": year[-2:]}
        if not arguments.cert:
            parser.error(f"{arguments.command} carries encrypted card data: give --cert")
    funding = {"tokenUniqueReference": arguments.tur}
    wallet = {"services": ["DIGITIZATION"], "tokenType": "CLOUD", "tokenRequestorId": "50110030273",
              "walletId": "103", "paymentAppInstanceId": "dev-device-1", "fundingAccountInfo": funding}
    if arguments.command == "authorize":
        op, body = "authorizeService", {
            **core, **wallet,
            "deviceInfo": {"deviceName": "Dev Phone", "formFactor": "PHONE", "osName": "ANDROID",
                           "storageTechnology": "TEE"},
            "walletProviderDecisioningInfo": {"recommendedDecision": arguments.recommendation},
            "activeTokenCount": "0"}
    elif arguments.command == "methods":
        op, body = "requestActivationMethods", {**core, **wallet}
    elif arguments.command == "deliver":
        op, body = "deliverActivationCode", {
            **core, "tokenUniqueReference": arguments.tur,
            "activationMethod": {"type": arguments.method, "value": arguments.value}}
    elif arguments.command == "validate":
        op, body = "validateActivationCode", {
            **core, "tokenUniqueReference": arguments.tur, "activationCode": arguments.code}
    elif arguments.command == "activated":
        op, body = "notifyServiceActivated", {
            **core, **wallet, "accountPanSuffix": arguments.pan[-4:],
            "decision": "REQUIRE_ADDITIONAL_AUTHENTICATION",
            "serviceRequestDateTime": stamp, "tokenActivatedDateTime": stamp}
    else:
        op, body = "notifyTokenUpdated", {
            "requestId": request_id, "reasonCode": "STATUS_UPDATE",
            "tokens": [{"tokenUniqueReference": arguments.tur, "status": arguments.status}]}
    if plaintext is not None:
        with open(arguments.cert) as handle:
            body = encrypt(body, plaintext, handle.read(), arguments.oaep)
    url = arguments.url.rstrip("/") + "/mdes/issuerServices/1/0/" + op
    status, text = post(url, json.dumps(body, separators=(",", ":")).encode(), {"X-Client-Verify": "SUCCESS"})
    print(f"{op} ({request_id}): HTTP {status}")
    try:
        print(json.dumps(json.loads(text), indent=2))
    except ValueError:
        print(text)
    return 0 if status == 200 else 1


if __name__ == "__main__":
    if len(sys.argv) > 1:
        sys.exit(cli(sys.argv[1:]))
    main()
