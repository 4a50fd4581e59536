#!/usr/bin/env python3
"""Authorize Service bodies for scripts/bench-api --mode mdes, made before the timed run.

Usage: mdes_payloads.py CARDS.jsonl FIRST CERT.pem WARM OUT-PREFIX
Each card from line FIRST of CARDS.jsonl on gets one Authorize Service body with its own
requestId, tokenUniqueReference and paymentAppInstanceId, its card data field-level encrypted by
Mastercard's own library (`mastercard-client-encryption`, as tests/fake_mdes.py does: RSA-OAEP
SHA-256, AES-128-CBC, hex, named by the certificate's SHA-1 fingerprint) to the issuer key. The
first WARM bodies go to OUT-PREFIX-warm.requests, the rest to OUT-PREFIX-run.requests, one JSON
body a line, so the load generator does no crypto while it is timed. Two worker processes.
Test tooling only (the test venv, scripts/lib/common.sh ensure_test_python).
"""
import datetime
import hashlib
import json
import multiprocessing
import sys

from cryptography import x509
from cryptography.hazmat.primitives import serialization

import client_encryption.field_level_encryption as fle
from client_encryption.field_level_encryption_config import FieldLevelEncryptionConfig

ENVELOPE = "fundingAccountInfo.encryptedPayload"
config = None
valid_until = None


def setup(certificate_path):
    global config, valid_until
    pem = open(certificate_path, "rb").read()
    certificate = x509.load_pem_x509_certificate(pem)
    sha1 = hashlib.sha1(certificate.public_bytes(serialization.Encoding.DER)).hexdigest()
    config = FieldLevelEncryptionConfig({
        "paths": {"$": {"toEncrypt": {ENVELOPE + ".encryptedData": ENVELOPE}, "toDecrypt": {}}},
        "ivFieldName": "iv", "encryptedKeyFieldName": "encryptedKey", "encryptedValueFieldName": "encryptedData",
        "dataEncoding": "hex", "encryptionCertificate": certificate_path,
        "oaepPaddingDigestAlgorithmFieldName": "oaepHashingAlgorithm", "oaepPaddingDigestAlgorithm": "SHA256",
        "encryptionKeyFingerprintFieldName": "publicKeyFingerprint", "encryptionKeyFingerprint": sha1,
    })
    # Valid for the whole run (issuerd refuses a payload past dataValidUntilTimestamp).
    valid_until = (datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(hours=2)).strftime("%Y-%m-%dT%H:%M:%SZ")


def body(item):
    i, line = item
    card = json.loads(line)
    month, year = card["expiration"].split("/")
    plaintext = {"cardAccountData": {"accountNumber": card["accountNumber"], "expiryMonth": month, "expiryYear": year},
                 "source": "ACCOUNT_ADDED_MANUALLY", "dataValidUntilTimestamp": valid_until}
    request = {
        "requestId": f"bench-mdes-{i}", "services": ["DIGITIZATION"], "correlationId": f"C{i:011d}", "tokenType": "CLOUD",
        "tokenRequestorId": "50110030273", "walletId": "103", "paymentAppInstanceId": f"mdes-device-{i}",
        "fundingAccountInfo": {"tokenUniqueReference": f"DWSPMC{i:016d}", "encryptedPayload": {"encryptedData": plaintext}},
        "deviceInfo": {"deviceName": "My Phone", "formFactor": "PHONE", "osName": "ANDROID", "storageTechnology": "TEE"},
        "walletProviderDecisioningInfo": {"recommendedDecision": "APPROVED", "deviceScore": "4", "accountScore": "5",
                                          "recommendationReasons": []},
        "activeTokenCount": "1",
    }
    return json.dumps(fle.encrypt_payload(request, config), separators=(",", ":"))


def main():
    cards_path, first, certificate_path, warm, prefix = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), sys.argv[5]
    with open(cards_path) as cards:
        items = [(i, line) for i, line in enumerate(cards) if i >= first]
    with multiprocessing.Pool(2, setup, (certificate_path,)) as pool, \
            open(prefix + "-warm.requests", "w") as warm_out, open(prefix + "-run.requests", "w") as run_out:
        for n, text in enumerate(pool.imap(body, items, chunksize=256)):
            (warm_out if n < warm else run_out).write(text + "\n")
            if n and n % 5000 == 0:
                print(f"  {n:,} of {len(items):,} payloads", file=sys.stderr)


if __name__ == "__main__":
    main()
