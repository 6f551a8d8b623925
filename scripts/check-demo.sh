#!/usr/bin/env bash
# Checks `make run`'s demo (scripts/run.sh) as a new user reads it: its
# figures agree with each other, and every command it suggests runs as
# printed from the checkout. Builds the pure-Go programs the demo needs when
# bin/ lacks them. Exit 1 with what is wrong.
set -euo pipefail
cd "$(dirname "$0")/.."
for p in "strata-service ./service" "strata-vision-relay ./relay" \
  "strata-standin ./internal/fakestrata/cmd/strata-standin" \
  "strata-vision-standin ./internal/fakeencoder/cmd/strata-vision-standin"; do
  set -- $p
  [ -x "bin/$1" ] || CGO_ENABLED=0 go build -trimpath -o "bin/$1" "$2"
done

out=$(mktemp)
trap 'rm -f "$out"' EXIT
STRATA_DEMO=1 bash scripts/run.sh </dev/null >"$out" 2>&1 || { cat "$out"; echo "check-demo: the demo failed" >&2; exit 1; }

fail=0
bad() { echo "check-demo: $*" >&2; fail=1; }

# One story about the GPU: no GPU found, no VRAM figures after it.
if grep -q '^    none found' "$out"; then
  if grep -nE 'expert cache \(|GiB of VRAM|Experts: ' "$out"; then
    bad "the probe found no GPU, but the demo reports a GPU expert cache (lines above)"
  fi
fi
# Figures from the reference machine say so wherever they are quoted.
while IFS= read -r line; do
  case "$line" in *"reference machine"*) ;; *) bad "a reference-machine figure is not labelled: $line" ;; esac
done < <(grep -E '15\.27 s|1\.63 s|2\.83 s' "$out" || true)
# The ending says what ran and that it stopped.
grep -q '^== What ran' "$out" || bad "the demo does not end by saying what ran"
grep -q 'stopped now' "$out" || bad "the demo does not say it stopped the server"

# Every suggested command runs as printed (the server run for a few seconds).
n=0
while IFS= read -r cmd; do
  n=$((n + 1))
  case "$cmd" in
    *"make run"*) continue ;; # needs a real Strata install
    *" run "*"--foreground"*)
      rc=0; timeout --preserve-status -s INT 8 bash -c "$cmd" >/dev/null 2>&1 || rc=$?
      # 0: it stopped on the signal, as Ctrl-C stops it.
      [ "$rc" = 0 ] || bad "suggested command failed (exit $rc): $cmd" ;;
    *)
      rc=0; bash -c "$cmd" >/dev/null 2>&1 || rc=$?
      [ "$rc" = 0 ] || bad "suggested command failed (exit $rc): $cmd" ;;
  esac
done < <(sed -n '/^== Try next/,$p' "$out" | grep -E '^  [^ ]' | sed 's/^  //')
[ "$n" -ge 3 ] || bad "the demo suggests only $n commands"

if [ "$fail" = 0 ]; then
  echo "check-demo: the demo's figures agree and its $n suggested commands run"
fi
exit "$fail"
