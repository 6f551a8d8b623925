#!/usr/bin/env bash
# Exercises the signing path end to end with a throwaway self-signed
# code-signing certificate: builds the programs and the installer with
# STRATA_SIGN_CERT/KEY set (build.sh signs the four programs, the NSIS script
# signs the uninstaller and the installer), then verifies every signature
# again from the outside, the uninstaller as unpacked from the installer.
#
# Usage: installer/test-signing.sh [--skip-build]
#   DIST   output folder (default: a temporary folder, removed at the end;
#          when set, the signed files stay there)
# Needs: openssl, osslsigncode, makensis, 7zz (to unpack the uninstaller), and
# what build.sh needs.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
for t in openssl osslsigncode 7zz; do
  if ! command -v "$t" >/dev/null; then
    echo "test-signing.sh: $t is not installed (scripts/install-deps.sh installs it)" >&2
    exit 1
  fi
done

tmp=$(mktemp -d "${TMPDIR:-/tmp}/strata-signing.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
if [ -z "${DIST:-}" ]; then
  export DIST=$tmp/dist
fi

# A throwaway certificate, valid for a day, usable for code signing only.
openssl req -x509 -newkey rsa:3072 -sha256 -days 1 -nodes \
  -keyout "$tmp/key.pem" -out "$tmp/cert.pem" \
  -subj "/CN=Strata Companion test signing (throwaway)" \
  -addext "keyUsage=critical,digitalSignature" \
  -addext "extendedKeyUsage=codeSigning" 2>/dev/null
export STRATA_SIGN_CERT=$tmp/cert.pem STRATA_SIGN_KEY=$tmp/key.pem STRATA_SIGN_CA=$tmp/cert.pem
unset STRATA_SIGN_PFX STRATA_SIGN_TIMESTAMP_URL

bash "$here/build.sh" "$@"

version=${VERSION:-$(sed -n 's/^ *Version *= *"\(.*\)"/\1/p' "$here/../FyneApp.toml")}
installer=$DIST/StrataCompanionSetup-$version.exe
mkdir -p "$tmp/unpacked"
(cd "$tmp/unpacked" && 7zz x -y "$installer" uninstall.exe >/dev/null)

fail=0
for f in "$DIST"/windows-amd64/*.exe "$tmp/unpacked/uninstall.exe" "$installer"; do
  if out=$(osslsigncode verify -CAfile "$STRATA_SIGN_CA" -in "$f" 2>&1); then
    subject=$(printf '%s\n' "$out" | sed -n 's/^[[:space:]]*Subject: //p' | head -1)
    echo "verified: $(basename "$f") (signer: $subject)"
  else
    echo "NOT SIGNED OR INVALID: $f" >&2
    printf '%s\n' "$out" >&2
    fail=1
  fi
done
# A signature made with another certificate must not pass as ours.
openssl req -x509 -newkey rsa:2048 -sha256 -days 1 -nodes -keyout "$tmp/other.key" \
  -out "$tmp/other.pem" -subj "/CN=someone else" 2>/dev/null
if osslsigncode verify -CAfile "$tmp/other.pem" -in "$installer" >/dev/null 2>&1; then
  echo "the installer verifies against an unrelated certificate: verification is not checking anything" >&2
  fail=1
fi
if [ "$fail" = 0 ]; then
  echo "signing: all signatures verify"
fi
exit "$fail"
