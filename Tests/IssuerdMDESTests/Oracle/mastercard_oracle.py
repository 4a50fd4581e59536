#!/usr/bin/env python3
"""Independent oracle: Mastercard's own Python libraries from PyPI.

`mastercard-client-encryption` (field-level encryption) and `mastercard-oauth1-signer` (OAuth 1.0a),
pinned in scripts/lib/common.sh. Test tooling only. Reads one JSON request on stdin, prints one JSON
answer on stdout; a failure of the library exits 1 with its message on stderr.

Operations ("op"):
  encrypt  {certificatePEM, plaintext (JSON text), oaep "SHA256"|"SHA512", aesKeyBytes 16|32,
            withIV bool, upperCase bool, fingerprint "library"|"certificate-sha256"|"certificate-sha1"
            |"public-key-sha1"}
           -> {"body": the Authorize Service request body Mastercard's library produced}
           Mastercard's library makes AES-128 keys with a random IV; for AES-256 and for "no iv" its
           own wrap and cipher routines are driven with the key/IV the case needs.
  encrypt_pkcs1 {certificatePEM, plaintext, withIV} -> {"payload"}: PKCS#1 v1.5 key wrap, which
           Mastercard's library cannot make, with Python `cryptography` (another independent
           implementation); the fingerprint is the library's default (SHA-256 of the key).
  decrypt  {privateKeyPEM, body (an answer with "encryptedPayload")} -> {"plaintext": object}
  sign     {url, method, body (text), consumerKey, privateKeyPEM, nonce, timestamp}
           -> {"header", "baseString"} from Mastercard's signer with the nonce and timestamp fixed
  verify   {url, method, body, header, publicKeyPEM} -> {"valid", "baseString", "bodyHashMatches"}:
           the header's parameters through Mastercard's base-string code, the signature checked.
"""
import base64
import hashlib
import json
import os
import sys
import tempfile
from urllib.parse import unquote

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from cryptography.hazmat.primitives import padding as symmetric_padding

import client_encryption.field_level_encryption as fle
from client_encryption.encoding_utils import encode_bytes
from client_encryption.field_level_encryption_config import FieldLevelEncryptionConfig
from client_encryption.session_key_params import SessionKeyParams
import oauth1.coreutils as oauth_util
from oauth1.oauth import OAuth

ENVELOPE = "fundingAccountInfo.encryptedPayload"


def write_temp(text):
    handle = tempfile.NamedTemporaryFile("w", suffix=".pem", delete=False)
    handle.write(text)
    handle.close()
    return handle.name


def mdes_config(**extra):
    """The configuration Mastercard documents for MDES payloads (hex, publicKeyFingerprint)."""
    config = {
        "paths": {"$": {"toEncrypt": {ENVELOPE + ".encryptedData": ENVELOPE},
                        "toDecrypt": {"encryptedPayload": "encryptedPayload.encryptedData"}}},
        "ivFieldName": "iv",
        "encryptedKeyFieldName": "encryptedKey",
        "encryptedValueFieldName": "encryptedData",
        "dataEncoding": "hex",
        "oaepPaddingDigestAlgorithmFieldName": "oaepHashingAlgorithm",
        "oaepPaddingDigestAlgorithm": "SHA256",
    }
    config.update(extra)
    return config


def encrypt(request):
    cert_path = write_temp(request["certificatePEM"])
    try:
        certificate = x509.load_pem_x509_certificate(request["certificatePEM"].encode())
        cert_der = certificate.public_bytes(serialization.Encoding.DER)
        extra = {"encryptionCertificate": cert_path, "oaepPaddingDigestAlgorithm": request["oaep"]}
        form = request["fingerprint"]
        if form == "library":  # the library's own: SHA-256 of the SubjectPublicKeyInfo
            extra["encryptionKeyFingerprintFieldName"] = "publicKeyFingerprint"
        elif form == "certificate-sha256":  # the library's own certificate fingerprint
            extra["encryptionCertificateFingerprintFieldName"] = "publicKeyFingerprint"
        elif form == "certificate-sha1":  # what MDES sends; the library takes it as given
            extra["encryptionKeyFingerprintFieldName"] = "publicKeyFingerprint"
            extra["encryptionKeyFingerprint"] = hashlib.sha1(cert_der).hexdigest()
        elif form == "public-key-sha1":
            spki = certificate.public_key().public_bytes(
                serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
            extra["encryptionKeyFingerprintFieldName"] = "publicKeyFingerprint"
            extra["encryptionKeyFingerprint"] = hashlib.sha1(spki).hexdigest()
        else:
            raise ValueError(form)
        config = FieldLevelEncryptionConfig(mdes_config(**extra))
        body = {"requestId": "123456", "services": ["DIGITIZATION"], "correlationId": "D98765432104",
                "tokenType": "CLOUD",
                "fundingAccountInfo": {"encryptedPayload": {"encryptedData": json.loads(request["plaintext"])}}}
        params = None
        if request["aesKeyBytes"] != 16 or not request["withIV"]:
            key = os.urandom(request["aesKeyBytes"])
            iv = os.urandom(16) if request["withIV"] else bytes(16)
            wrapped = SessionKeyParams._SessionKeyParams__wrap_secret_key(key, config)
            params = SessionKeyParams(config, wrapped, encode_bytes(iv, config.data_encoding))
            params._key, params._iv = key, iv
        encrypted = fle.encrypt_payload(body, config, params)
        envelope = encrypted["fundingAccountInfo"]["encryptedPayload"]
        if params is not None:  # the library leaves the key fields to its caller when given params
            fle._populate_node_with_key_params(envelope, config, params)
            if not request["withIV"]:
                del envelope["iv"]
        if request["upperCase"]:
            for field in ("encryptedData", "encryptedKey", "iv", "publicKeyFingerprint"):
                if field in envelope:
                    envelope[field] = envelope[field].upper()
        return {"body": encrypted}
    finally:
        os.unlink(cert_path)


def encrypt_pkcs1(request):
    certificate = x509.load_pem_x509_certificate(request["certificatePEM"].encode())
    public_key = certificate.public_key()
    key, iv = os.urandom(16), (os.urandom(16) if request["withIV"] else bytes(16))
    padder = symmetric_padding.PKCS7(128).padder()
    padded = padder.update(request["plaintext"].encode()) + padder.finalize()
    encryptor = Cipher(algorithms.AES(key), modes.CBC(iv)).encryptor()
    spki = public_key.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    payload = {"encryptedData": (encryptor.update(padded) + encryptor.finalize()).hex(),
               "encryptedKey": public_key.encrypt(key, padding.PKCS1v15()).hex(),
               "publicKeyFingerprint": hashlib.sha256(spki).hexdigest()}
    if request["withIV"]:
        payload["iv"] = iv.hex()
    return {"payload": payload}


def decrypt(request):
    key_path = write_temp(request["privateKeyPEM"])
    try:
        config = FieldLevelEncryptionConfig(mdes_config(decryptionKey=key_path))
        answer = fle.decrypt_payload(json.loads(json.dumps(request["body"])), config)
        plaintext = answer["encryptedPayload"]["encryptedData"]
        if not isinstance(plaintext, dict):
            raise ValueError("the library did not decrypt the payload into an object")
        return {"plaintext": plaintext}
    finally:
        os.unlink(key_path)


def sign(request):
    key = serialization.load_pem_private_key(request["privateKeyPEM"].encode(), password=None)
    oauth_util.get_nonce = lambda length=16: request["nonce"]
    oauth_util.get_timestamp = lambda: request["timestamp"]
    params = OAuth.get_oauth_parameters(request["url"], request["method"], request["body"], request["consumerKey"], key)
    header = OAuth.get_authorization_header(
        request["url"], request["method"], request["body"], request["consumerKey"], key)
    base = dict(params.get_base_parameters_dict())
    base.pop("oauth_signature")
    return {"header": header, "baseString": OAuth.get_base_string(request["url"], request["method"], base)}


def verify(request):
    header = request["header"]
    if not header.startswith("OAuth "):
        raise ValueError("not an OAuth header")
    params = {}
    for item in header[len("OAuth "):].split(","):
        name, _, value = item.partition("=")
        params[name] = value.strip('"')
    signature = base64.b64decode(unquote(params.pop("oauth_signature")), validate=True)
    base_string = OAuth.get_base_string(request["url"], request["method"], params)
    expected_hash = oauth_util.base64_encode(oauth_util.sha256_encode(request["body"] or ""))
    public_key = serialization.load_pem_public_key(request["publicKeyPEM"].encode())
    try:
        public_key.verify(signature, base_string.encode(), padding.PKCS1v15(), hashes.SHA256())
        valid = True
    except InvalidSignature:
        valid = False
    return {"valid": valid, "baseString": base_string, "bodyHashMatches": params["oauth_body_hash"] == expected_hash}


OPERATIONS = {"encrypt": encrypt, "encrypt_pkcs1": encrypt_pkcs1, "decrypt": decrypt, "sign": sign, "verify": verify}

if __name__ == "__main__":
    request = json.load(sys.stdin)
    json.dump(OPERATIONS[request["op"]](request), sys.stdout)
