#!/usr/bin/env python3
"""Independent oracle: PGPy (PyPI `pgpy`, pinned in scripts/lib/common.sh), an OpenPGP implementation
that shares no code with RNP. Test tooling only. Reads one JSON request on stdin, prints one JSON
answer on stdout; a failure exits 1 with its message on stderr.

Operations ("op"):
  keys  {names: [..], protect: passphrase?} -> {name: {"secret": armoured secret key, "public": armoured
        public key}}: an RSA-2048 signing primary key with an RSA-2048 encryption subkey each, made
        in the test (throwaway keys); with "protect", the secret keys are passphrase-protected.
  open  {message: Base64 of a binary OpenPGP message, recipientSecret, signerPublic}
        -> {"plaintext": text, "signatureValid": bool, "signers": [key ids], "encrypted": bool,
            "signed": bool}: decrypted with the recipient's secret key, the signature checked
            against the signer's public key.
"""
import base64
import json
import sys
import warnings

warnings.filterwarnings("ignore")

import pgpy
from pgpy.constants import (CompressionAlgorithm, HashAlgorithm, KeyFlags, PubKeyAlgorithm,
                            SymmetricKeyAlgorithm)


def make_key(name, passphrase=None):
    key = pgpy.PGPKey.new(PubKeyAlgorithm.RSAEncryptOrSign, 2048)
    uid = pgpy.PGPUID.new(name, email=f"{name}@example.com")
    key.add_uid(uid, usage={KeyFlags.Sign, KeyFlags.Certify}, hashes=[HashAlgorithm.SHA256],
                ciphers=[SymmetricKeyAlgorithm.AES256], compression=[CompressionAlgorithm.Uncompressed])
    subkey = pgpy.PGPKey.new(PubKeyAlgorithm.RSAEncryptOrSign, 2048)
    key.add_subkey(subkey, usage={KeyFlags.EncryptCommunications, KeyFlags.EncryptStorage})
    if passphrase:
        key.protect(passphrase, SymmetricKeyAlgorithm.AES256, HashAlgorithm.SHA256)
    return {"secret": str(key), "public": str(key.pubkey)}


def keys(request):
    return {name: make_key(name, request.get("protect")) for name in request["names"]}


def open_message(request):
    message = pgpy.PGPMessage.from_blob(base64.b64decode(request["message"], validate=True))
    recipient, _ = pgpy.PGPKey.from_blob(request["recipientSecret"])
    signer, _ = pgpy.PGPKey.from_blob(request["signerPublic"])
    encrypted = message.is_encrypted
    opened = recipient.decrypt(message)
    plaintext = opened.message
    if isinstance(plaintext, (bytes, bytearray)):
        plaintext = bytes(plaintext).decode("utf-8")
    try:
        valid = bool(signer.verify(opened))
    except pgpy.errors.PGPError:  # no signature by this key at all
        valid = False
    return {
        "plaintext": plaintext,
        "signatureValid": valid,
        "signers": sorted(opened.signers),
        "encrypted": encrypted,
        "signed": opened.is_signed,
    }


def main():
    request = json.load(sys.stdin)
    operations = {"keys": keys, "open": open_message}
    try:
        answer = operations[request["op"]](request)
    except Exception as error:  # the library's message is the test's diagnosis
        print(f"{type(error).__name__}: {error}", file=sys.stderr)
        sys.exit(1)
    json.dump(answer, sys.stdout)


if __name__ == "__main__":
    main()
