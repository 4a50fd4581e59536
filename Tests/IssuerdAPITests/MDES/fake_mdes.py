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
"""
import copy
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


if __name__ == "__main__":
    main()
