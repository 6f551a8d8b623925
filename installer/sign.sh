#!/usr/bin/env bash
# Signs Windows programs in place with osslsigncode (Authenticode, SHA-256),
# then verifies the signature. Used by build.sh for the four programs and by
# the NSIS script (!uninstfinalize / !finalize) for the uninstaller and the
# installer.
#
#   installer/sign.sh FILE...
#
# The certificate comes from the environment (never from the command line, so
# it stays out of process lists and logs):
#   STRATA_SIGN_CERT + STRATA_SIGN_KEY   PEM certificate (chain) and private key
#   STRATA_SIGN_KEY_PASSWORD             the key's passphrase, if it has one
#   STRATA_SIGN_PFX + STRATA_SIGN_PFX_PASSWORD   or a PKCS#12 file instead
#   STRATA_SIGN_TIMESTAMP_URL            an RFC 3161 timestamp server (optional;
#                                        without one the signature expires with
#                                        the certificate)
#   STRATA_SIGN_CA                       CA bundle for the verification
#                                        (default: the system's; a self-signed
#                                        test certificate passes itself)
set -euo pipefail

if [ $# -eq 0 ]; then
  echo "usage: $0 FILE..." >&2
  exit 2
fi
if ! command -v osslsigncode >/dev/null; then
  echo "sign.sh: osslsigncode is not installed (apt-get install osslsigncode)" >&2
  exit 1
fi

args=(-h sha256 -n "Strata Companion" -i "https://github.com/Niko1221/Strata")
if [ -n "${STRATA_SIGN_PFX:-}" ]; then
  args+=(-pkcs12 "$STRATA_SIGN_PFX")
  [ -n "${STRATA_SIGN_PFX_PASSWORD:-}" ] && args+=(-readpass /dev/fd/3)
  pass=${STRATA_SIGN_PFX_PASSWORD:-}
elif [ -n "${STRATA_SIGN_CERT:-}" ] && [ -n "${STRATA_SIGN_KEY:-}" ]; then
  args+=(-certs "$STRATA_SIGN_CERT" -key "$STRATA_SIGN_KEY")
  [ -n "${STRATA_SIGN_KEY_PASSWORD:-}" ] && args+=(-readpass /dev/fd/3)
  pass=${STRATA_SIGN_KEY_PASSWORD:-}
else
  echo "sign.sh: no certificate: set STRATA_SIGN_CERT and STRATA_SIGN_KEY (PEM) or STRATA_SIGN_PFX" >&2
  exit 1
fi
if [ -n "${STRATA_SIGN_TIMESTAMP_URL:-}" ]; then
  args+=(-ts "$STRATA_SIGN_TIMESTAMP_URL")
fi
verify=()
if [ -n "${STRATA_SIGN_CA:-}" ]; then
  verify+=(-CAfile "$STRATA_SIGN_CA")
fi

for f in "$@"; do
  tmp="$f.signing"
  rm -f "$tmp"
  # The password goes through file descriptor 3, not argv.
  if ! out=$(osslsigncode sign "${args[@]}" -in "$f" -out "$tmp" 3< <(printf '%s' "$pass") 2>&1); then
    rm -f "$tmp"
    echo "sign.sh: signing $f failed:" >&2
    echo "$out" >&2
    exit 1
  fi
  mv -f "$tmp" "$f"
  if ! out=$(osslsigncode verify "${verify[@]}" -in "$f" 2>&1); then
    echo "sign.sh: the signature of $f does not verify:" >&2
    echo "$out" >&2
    exit 1
  fi
  echo "signed and verified: $(basename "$f")"
done
