#!/usr/bin/env bash
# How soon a lender is listed: bench/lend/run.sh [N] (N announcements / browses per case, default 10).
# Needs root (network namespaces); everything runs on a testenv.LAN, never on this machine's own network.
set -euo pipefail
cd "$(dirname "$0")/../.."
n=${1:-10}
exec go test -count=1 -run '^$' -bench . -benchtime "${n}x" ./bench/lend
