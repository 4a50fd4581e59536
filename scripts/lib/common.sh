# Shared helpers for scripts/*. Source it; do not run it.
# shellcheck shell=bash

ISSUERD_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
ISSUERD_DEBIAN_PACKAGES=(libssl-dev libpq-dev libmicrohttpd-dev libcurl4 libcurl4-openssl-dev libsmpp34-dev postgresql openssl python3-venv curl libp11-kit-dev softhsm2 librnp-dev)
# Only the tests need these (the console's browser test, the console script's syntax check, the
# nginx mutual-TLS test of deploy/nginx-mdes.conf, promtool for deploy/prometheus/alerts.yml):
# scripts/test installs them, scripts/run does not.
ISSUERD_TEST_DEBIAN_PACKAGES=(chromium chromium-driver nodejs nginx prometheus)

say() { printf '\033[1m==> %s\033[0m\n' "$*" >&2; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

# The entry script's --help: prints its header, the comment block after the shebang up to the
# first line that is not a comment, each line without its "#" and one space, then exits 0.
# scripts/lib/check_help.py holds every script's --help to exactly that text.
usage() {
    awk 'NR == 1 { next } !/^#/ { exit } { sub(/^# ?/, ""); print }' "$0"
    exit 0
}

# Installs the Debian packages issuerd builds and tests against, if any is missing.
ensure_packages() {
    local missing=()
    for pkg in "${ISSUERD_DEBIAN_PACKAGES[@]}" "$@"; do
        dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    say "installing Debian packages: ${missing[*]}"
    local sudo=""
    [ "$(id -u)" -ne 0 ] && sudo="sudo"
    $sudo apt-get update -qq >/dev/null || die "apt-get update failed"
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null \
        || die "could not install: ${missing[*]}"
}

# A Python virtual environment with the independent test oracles (cryptography for the
# ECC_V2/RSA_V2 decryptor; Mastercard's own field-level encryption and OAuth 1.0a signer for the
# MDES tests, pinned: the oracle script drives their internals for AES-256 and IV-less payloads),
# PGPy (an OpenPGP implementation of its own, which opens and verifies Google's opaque payment card),
# jwcrypto (a JOSE implementation of its own, which opens Visa's encrypted payment instrument),
# Selenium, which drives Debian's Chromium for the console's browser test, aiosmtpd, the SMTP
# server (STARTTLS, AUTH) the e-mail tests submit to, and smpp34, whose SMPP server is the SMS
# centre the SMS tests, the fault run and the benchmark talk to. Python is test tooling only,
# never part of the product.
ISSUERD_MC_ENCRYPTION_VERSION=1.23.3
ISSUERD_MC_OAUTH1_VERSION=1.9.2
ISSUERD_PGPY_VERSION=0.6.0
ISSUERD_JWCRYPTO_VERSION=1.6.1
ISSUERD_AIOSMTPD_VERSION=1.4.6
ISSUERD_SMPP34_VERSION=1.5.0
ensure_test_python() {
    local venv="$ISSUERD_ROOT/.venv-test"
    if ! "$venv/bin/python" - "$ISSUERD_MC_ENCRYPTION_VERSION" "$ISSUERD_MC_OAUTH1_VERSION" "$ISSUERD_PGPY_VERSION" "$ISSUERD_JWCRYPTO_VERSION" <<'PY' 2>/dev/null; then
import sys
from importlib.metadata import version
import cryptography, selenium, client_encryption, oauth1, pgpy, jwcrypto, aiosmtpd, smpp34
assert version("mastercard-client-encryption") == sys.argv[1] and version("mastercard-oauth1-signer") == sys.argv[2]
assert version("pgpy") == sys.argv[3] and version("jwcrypto") == sys.argv[4]
PY
        say "setting up $venv with Python cryptography and Mastercard's libraries (test oracles) and Selenium (browser test)"
        [ -x "$venv/bin/pip" ] || python3 -m venv "$venv" || die "python3 -m venv failed"
        "$venv/bin/pip" install -q --disable-pip-version-check 'cryptography>=42' 'selenium>=4.20,<5' \
            "mastercard-client-encryption==$ISSUERD_MC_ENCRYPTION_VERSION" \
            "mastercard-oauth1-signer==$ISSUERD_MC_OAUTH1_VERSION" "pgpy==$ISSUERD_PGPY_VERSION" \
            "jwcrypto==$ISSUERD_JWCRYPTO_VERSION" "aiosmtpd==$ISSUERD_AIOSMTPD_VERSION" \
            "smpp34==$ISSUERD_SMPP34_VERSION" \
            || die "pip install cryptography selenium mastercard-client-encryption mastercard-oauth1-signer pgpy jwcrypto aiosmtpd smpp34 failed"
    fi
    export ISSUERD_TEST_PYTHON="$venv/bin/python"
}

# The test Python plus Schemathesis (PyPI), for scripts/fuzz-api's schema fuzzing. Pinned: the
# driver uses its Python API (strategies, checks), which moves between minor versions.
ISSUERD_SCHEMATHESIS_VERSION=4.32.5
ensure_fuzz_python() {
    ensure_test_python
    local venv="$ISSUERD_ROOT/.venv-test"
    if ! "$venv/bin/python" -c "import schemathesis, sys; sys.exit(schemathesis.__version__ != '$ISSUERD_SCHEMATHESIS_VERSION')" 2>/dev/null; then
        say "installing Schemathesis $ISSUERD_SCHEMATHESIS_VERSION into $venv (schema fuzzing)"
        "$venv/bin/pip" install -q --disable-pip-version-check "schemathesis==$ISSUERD_SCHEMATHESIS_VERSION" \
            || die "pip install schemathesis failed"
    fi
    export ISSUERD_FUZZ_PYTHON="$venv/bin/python"
}
