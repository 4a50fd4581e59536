#!/usr/bin/env python3
"""Independent opener of issuerd's compact JWE (A256GCMKW + A256GCM, the envelope of Visa's
encrypted payment instrument): jwcrypto (PyPI, pinned in scripts/lib/common.sh), a JOSE
implementation of its own, with the key-encryption key computed here as SHA-256 of the shared
secret's UTF-8 bytes. Test tooling only. Reads one JSON request on stdin, prints one JSON answer;
a failure of the script itself exits 1 with its message on stderr.

Request: {"jwe": "<compact JWE>", "secret": "<shared secret>"}
Answer:  {"opened": true, "header": the protected header object, "plaintext": text,
          "cek": hex of the unwrapped content key, "wrapIV": the header's iv, "contentIV": hex,
          "parts": 5}
      or {"opened": false, "error": jwcrypto's message} when jwcrypto refuses (a wrong secret).
"""
import base64
import hashlib
import json
import sys

from jwcrypto import jwe, jwk
from jwcrypto.common import base64url_decode


def open_jwe(request):
    parts = request["jwe"].split(".")
    key = jwk.JWK(kty="oct", k=base64.urlsafe_b64encode(
        hashlib.sha256(request["secret"].encode("utf-8")).digest()).rstrip(b"=").decode())
    token = jwe.JWE(algs=["A256GCMKW", "A256GCM"])
    try:
        token.deserialize(request["jwe"], key=key)
    except Exception as error:  # jwcrypto's refusal is the answer
        return {"opened": False, "error": f"{type(error).__name__}: {error}"}
    header = json.loads(base64url_decode(parts[0]))
    return {
        "opened": True,
        "header": header,
        "plaintext": token.payload.decode("utf-8"),
        "cek": token.cek.hex(),
        "wrapIV": header.get("iv"),
        "contentIV": base64url_decode(parts[2]).hex(),
        "parts": len(parts),
    }


def main():
    request = json.load(sys.stdin)
    try:
        answer = open_jwe(request)
    except Exception as error:
        print(f"{type(error).__name__}: {error}", file=sys.stderr)
        sys.exit(1)
    json.dump(answer, sys.stdout)


if __name__ == "__main__":
    main()
