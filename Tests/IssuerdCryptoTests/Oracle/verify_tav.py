#!/usr/bin/env python3
"""Independent oracle: verifies a Mastercard TAV v3 signed in the HSM.

Reads JSON on stdin: {"modulusHex", "exponentHex", "tav" (the TAV JSON text), "pan", "expiry" (MMYY)}.
Builds the RSA public key from the token's modulus and exponent with Python `cryptography`,
recomputes the signed string PAN|MMYY|dataValidUntilTimestamp and checks RSASSA-PKCS1-v1_5
SHA-256. Prints {"valid": bool, "bits": int}; exits 0 either way (the test reads the answer).
"""
import base64
import json
import sys

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import padding, rsa

request = json.load(sys.stdin)
public_key = rsa.RSAPublicNumbers(int(request["exponentHex"], 16), int(request["modulusHex"], 16)).public_key()
tav = json.loads(request["tav"])
assert tav["version"] == "3" and tav["signatureAlgorithm"] == "RSA-SHA256", tav
assert tav["includedFieldsInOrder"] == "accountNumber|accountExpiry|dataValidUntilTimestamp", tav
message = f'{request["pan"]}|{request["expiry"]}|{tav["dataValidUntilTimestamp"]}'.encode()
try:
    public_key.verify(base64.b64decode(tav["signature"], validate=True), message, padding.PKCS1v15(), hashes.SHA256())
    valid = True
except InvalidSignature:
    valid = False
json.dump({"valid": valid, "bits": public_key.key_size}, sys.stdout)
