#!/usr/bin/env python3
"""Independent oracle for Mastercard's opaque payment card of a Google Pay push: Mastercard's own
field-level encryption library (PyPI `mastercard-client-encryption`, pinned in scripts/lib/common.sh)
opens the encrypted card data, and Python `cryptography` (OpenSSL, but not issuerd's code) checks
the TAV's RSA signature. Test tooling only. Reads one JSON request on stdin, prints one JSON
answer; a failure exits 1 with its message on stderr.

Operation ("op"):
  open_mastercard {opaquePaymentCard (Base64), mastercardPrivateKeyPEM, tavPrivateKeyPEM}
      -> {"envelope": the decoded JSON, "plaintext": the decrypted FundingAccountData,
          "tav": the decoded TAV JSON, "tavValid": bool, "signedData": text}
      The TAV's signature is checked with the public half of the TAV key over the values its
      `includedFieldsInOrder` names, joined with "|", taken from the decrypted card data.
"""
import base64
import json
import os
import sys
import tempfile

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding

import client_encryption.field_level_encryption as fle
from client_encryption.field_level_encryption_config import FieldLevelEncryptionConfig

ENVELOPE = "fundingAccountInfo.encryptedPayload"


def open_mastercard(request):
    envelope = json.loads(base64.b64decode(request["opaquePaymentCard"], validate=True))
    handle = tempfile.NamedTemporaryFile("w", suffix=".pem", delete=False)
    handle.write(request["mastercardPrivateKeyPEM"])
    handle.close()
    try:
        config = FieldLevelEncryptionConfig({
            "paths": {"$": {"toEncrypt": {}, "toDecrypt": {ENVELOPE: ENVELOPE + ".encryptedData"}}},
            "ivFieldName": "iv",
            "encryptedKeyFieldName": "encryptedKey",
            "encryptedValueFieldName": "encryptedData",
            "dataEncoding": "hex",
            "oaepPaddingDigestAlgorithmFieldName": "oaepHashingAlgorithm",
            "oaepPaddingDigestAlgorithm": "SHA256",
            "decryptionKey": handle.name,
        })
        opened = fle.decrypt_payload(json.loads(json.dumps(envelope)), config)
    finally:
        os.unlink(handle.name)
    plaintext = opened["fundingAccountInfo"]["encryptedPayload"]["encryptedData"]
    if not isinstance(plaintext, dict):
        raise ValueError("the library did not decrypt the card data into an object")

    tav = json.loads(base64.b64decode(envelope["tokenizationAuthenticationValue"], validate=True))
    card = plaintext["cardAccountData"]
    values = {
        "accountNumber": card["accountNumber"],
        "accountExpiry": card["expiryMonth"] + card["expiryYear"],
        "dataValidUntilTimestamp": tav["dataValidUntilTimestamp"],
    }
    signed = "|".join(values[name] for name in tav["includedFieldsInOrder"].split("|"))
    key = serialization.load_pem_private_key(request["tavPrivateKeyPEM"].encode(), password=None).public_key()
    try:
        key.verify(base64.b64decode(tav["signature"], validate=True), signed.encode(), padding.PKCS1v15(),
                   hashes.SHA256())
        valid = True
    except InvalidSignature:
        valid = False
    return {"envelope": envelope, "plaintext": plaintext, "tav": tav, "tavValid": valid, "signedData": signed}


def main():
    request = json.load(sys.stdin)
    try:
        answer = {"open_mastercard": open_mastercard}[request["op"]](request)
    except Exception as error:  # the library's message is the test's diagnosis
        print(f"{type(error).__name__}: {error}", file=sys.stderr)
        sys.exit(1)
    json.dump(answer, sys.stdout)


if __name__ == "__main__":
    main()
