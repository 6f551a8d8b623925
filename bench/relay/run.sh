#!/usr/bin/env bash
# The relay benchmark (see relay_bench_test.go for what each column is):
# the shipped strata-vision-relay against a raw TCP floor and OpenSSH
# (fair: ControlMaster + one ssh per picture; naive: three connections),
# encoder start-up 0 and 1.5 s, on loopback, 1 Gbit/s + 1 ms, 100 Mbit/s +
# 20 ms; then the relay's and the agent's RSS after small and 30 MiB pictures.
# BEFORE=<commit> (default: the commit before issue 17's changes) also builds
# that commit's relay and measures it in the same run, picture by picture.
# Needs root (network namespaces, tc, useradd), sshd, ssh, scp.
#   bench/relay/run.sh [pictures per case, default 8]
set -euo pipefail
cd "$(dirname "$0")/../.."
n=${1:-8}
export RELAYBENCH_BEFORE=${BEFORE-48d02ef}
raw=$(mktemp)
trap 'rm -f "$raw"' EXIT
go test -run '^$' -bench 'BenchmarkRelay$' -benchtime "${n}x" -timeout 60m ./bench/relay/ | tee "$raw" >&2
go test -run '^$' -bench 'BenchmarkRelayRSS$' -benchtime 1x -timeout 30m ./bench/relay/ | tee -a "$raw" >&2
go test -run '^$' -bench 'BenchmarkRelayIdle$' -benchtime 1x -timeout 30m ./bench/relay/ | tee -a "$raw" >&2
echo
awk -v before="$RELAYBENCH_BEFORE" '
/^BenchmarkRelay\// {
  name=$1; sub(/-[0-9]+$/, "", name); sub(/^BenchmarkRelay\//, "", name)
  delete m
  for (i = 3; i < NF; i += 2) m[$(i+1)] = $i
  printf "%s (ms per picture: floor %.1f, floor+file %.1f, fair %.1f, fair+warm-up %.1f, naive %.1f)\n", name, m["floor-ms"], m["floorfile-ms"], m["fair-ms"], m["fairwarm-ms"], m["naive-ms"]
  for (k = 0; k < 2; k++) {
    v = (k == 0) ? "after" : "before"
    if (!((v "-relay-ms") in m)) continue
    printf "  %-6s relay %7.1f ms (encode %5.1f)  relay-encode vs floor %5.3fx (floor+file %5.3fx)  fair/relay %5.2fx  fair+warm-up/relay %5.2fx  naive/relay %5.2fx  CPU/picture relay %5.1f ms agent %5.1f ms  context switches/picture relay %4.0f agent %4.0f\n",
      v, m[v "-relay-ms"], m[v "-encode-ms"], m[v "-relay/floor"], m[v "-relay/floorfile"], m[v "-fair/relay"], m[v "-fairwarm/relay"], m[v "-naive/relay"], m[v "-relay-cpu-ms"], m[v "-agent-cpu-ms"], m[v "-relay-switches"], m[v "-agent-switches"]
  }
}
/^BenchmarkRelayRSS/ {
  delete m
  for (i = 3; i < NF; i += 2) m[$(i+1)] = $i
  print "RSS (loopback; after 8 pictures of 300 KiB, then after 8 of 30 MiB):"
  for (k = 0; k < 2; k++) {
    v = (k == 0) ? "after" : "before"
    if (!((v "-relay-rss-small-MiB") in m)) continue
    printf "  %-6s relay %.1f -> %.1f MiB (%.2fx, high-water %.1f)  agent %.1f -> %.1f MiB (%.2fx, high-water %.1f)\n", v,
      m[v "-relay-rss-small-MiB"], m[v "-relay-rss-30MiB-MiB"], m[v "-relay-rss-ratio"], m[v "-relay-hwm-MiB"],
      m[v "-agent-rss-small-MiB"], m[v "-agent-rss-30MiB-MiB"], m[v "-agent-rss-ratio"], m[v "-agent-hwm-MiB"]
  }
}
/^BenchmarkRelayIdle/ {
  delete m
  for (i = 3; i < NF; i += 2) m[$(i+1)] = $i
  print "Idle with a kept connection (loopback, after one picture), CPU ms per minute:"
  for (k = 0; k < 2; k++) {
    v = (k == 0) ? "after" : "before"
    if (!((v "-relay-idle-ms/min") in m)) continue
    printf "  %-6s relay %.1f  agent %.1f\n", v, m[v "-relay-idle-ms/min"], m[v "-agent-idle-ms/min"]
  }
}' "$raw"
echo "(relay-encode vs floor: the relay's time minus the encoder's own, over one kept raw TCP connection carrying the same bytes)"
