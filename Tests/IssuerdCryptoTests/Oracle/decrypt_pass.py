#!/usr/bin/env python3
"""Independent oracle for issuerd's ECC_V2 and RSA_V2 output, built on Python `cryptography`.

Reads one JSON object on stdin:
  {"scheme": "ECC_V2" | "RSA_V2",
   "recipientPrivateKeyPEM": "...",
   "encryptedPassData": "<base64>",
   "ephemeralPublicKey": "<base64>"      (ECC_V2)
   "wrappedKey": "<base64>"}             (RSA_V2)
and prints {"plaintext": <the decrypted JSON object>, "plaintextHex": "..."} or exits 1 with a
message on stderr. It shares no code with the Swift implementation: the KDF is
cryptography's ConcatKDFHash, ECDH/OAEP/GCM are cryptography's own.
"""
import base64
import json
import sys

from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, padding
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.concatkdf import ConcatKDFHash

ZERO_IV = bytes(12)


def ecc_v2(request, private_key):
    ephemeral = base64.b64decode(request["ephemeralPublicKey"], validate=True)
    if len(ephemeral) != 65 or ephemeral[0] != 0x04:
        raise ValueError("ephemeralPublicKey is not a 65-byte uncompressed point")
    peer = ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), ephemeral)
    z = private_key.exchange(ec.ECDH(), peer)
    other_info = b"\x0d" + b"id-aes256-GCM" + b"Apple" + ephemeral
    key = ConcatKDFHash(algorithm=hashes.SHA256(), length=32, otherinfo=other_info).derive(z)
    return AESGCM(key).decrypt(ZERO_IV, base64.b64decode(request["encryptedPassData"], validate=True), None)


def rsa_v2(request, private_key):
    wrapped = base64.b64decode(request["wrappedKey"], validate=True)
    oaep = padding.OAEP(mgf=padding.MGF1(algorithm=hashes.SHA256()), algorithm=hashes.SHA256(), label=None)
    key = private_key.decrypt(wrapped, oaep)
    if len(key) != 32:
        raise ValueError("unwrapped key is not 32 bytes")
    return AESGCM(key).decrypt(ZERO_IV, base64.b64decode(request["encryptedPassData"], validate=True), None)


def main():
    request = json.load(sys.stdin)
    private_key = serialization.load_pem_private_key(request["recipientPrivateKeyPEM"].encode(), password=None)
    scheme = request["scheme"]
    if scheme == "ECC_V2":
        plaintext = ecc_v2(request, private_key)
    elif scheme == "RSA_V2":
        plaintext = rsa_v2(request, private_key)
    else:
        raise ValueError("unknown scheme " + scheme)
    document = json.loads(plaintext.decode("utf-8"))
    json.dump({"plaintext": document, "plaintextHex": plaintext.hex()}, sys.stdout, ensure_ascii=False)


if __name__ == "__main__":
    try:
        main()
    except Exception as error:  # noqa: BLE001 - every failure is a test failure with its reason
        print(f"oracle: {type(error).__name__}: {error}", file=sys.stderr)
        sys.exit(1)
