#!/usr/bin/env bash
# From `lend` on the second PC to the first picture read on its GPU, as a user
# goes: bench/lend/first-picture.sh [N] (default 3 runs). Each run is the
# home-network integration test (three namespaces on a bridge, a real sshd,
# the real CLI, relay and agent, the stand-in encoder on the lent "GPU"); it
# prints each step's time and the min / median / max over the runs. Root.
set -euo pipefail
cd "$(dirname "$0")/../.."
n=${1:-3}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for i in $(seq "$n"); do
  go test -count=1 -v -run '^TestLendAndPairWithACodeIntegration$' ./service/cli > "$out/run$i.log" 2>&1 || { cat "$out/run$i.log"; exit 1; }
done
cat "$out"/run*.log | sed -n 's/.*bench: //p' | sed 's/ *ms$//' | awk '
  { ms=$NF; $NF=""; step=$0; sub(/ +$/, "", step); v[step]=v[step] " " ms; if (!(step in seen)) { seen[step]=1; order[++k]=step } }
  END {
    printf "%-42s %9s %9s %9s\n", "step", "min ms", "median", "max"
    for (i=1; i<=k; i++) { s=order[i]; m=split(substr(v[s],2), a, " ")
      for (x=1; x<=m; x++) for (y=x+1; y<=m; y++) if (a[y]+0 < a[x]+0) { t=a[x]; a[x]=a[y]; a[y]=t }
      printf "%-42s %9d %9d %9d\n", s, a[1], a[int((m+1)/2)], a[m] }
  }'
