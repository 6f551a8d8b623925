#!/usr/bin/env bash
# The relay benchmark: per-picture time through relay + agent + a real sshd +
# the stand-in encoder (1024 tokens, a 10 MB .sve), on loopback and on shaped
# links (tbf + a delaying proxy), against the link's limit and against plain
# OpenSSH (scp the picture, ssh one ENC, scp the result back), run in turn.
# Needs root (network namespaces, tc), sshd, ssh and scp. Prints a table.
#   bench/relay/run.sh [pictures per case, default 10]
set -euo pipefail
cd "$(dirname "$0")/../.."
n=${1:-10}
raw=$(mktemp)
trap 'rm -f "$raw"' EXIT
go test -run '^$' -bench . -benchtime "${n}x" -timeout 60m ./bench/relay/ | tee "$raw" >&2
echo
printf '%-14s %9s %9s %11s %9s %10s %11s %12s %9s\n' link relay-ms encode-ms link-limit vs-limit openssh-ms relay-ovh openssh-ovh ovh-ratio
awk '/^BenchmarkRelay\// {
  name=$1; sub(/-[0-9]+$/, "", name); sub(/^BenchmarkRelay\//, "", name)
  delete m
  for (i = 3; i < NF; i += 2) m[$(i+1)] = $i
  lim = ("limit-ms" in m) ? sprintf("%.1f", m["limit-ms"]) : "-"
  over = ("%over-limit" in m) ? sprintf("%+.1f%%", m["%over-limit"]) : "-"
  printf "%-14s %9.1f %9.1f %11s %9s %10.1f %11.1f %12.1f %8.1fx\n", name, m["relay-ms"], m["encode-ms"], lim, over,
    m["openssh-ms"], m["relay-overhead-ms"], m["openssh-overhead-ms"], m["overhead-ratio"]
}' "$raw"
echo "(ms per picture; overhead = per-picture time minus the encoder's own time; link-limit = bytes/rate + 1 RTT + encode)"
