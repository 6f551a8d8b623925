#!/usr/bin/env bash
# The switch time a user sees, end to end (issue #14): POST /v1/vision (what the
# tray's "Vision: second PC / CPU / off" sends) to the next picture read at the
# new place, through a real `strata-service run` supervising the stand-in
# Strata whose config names the built strata-vision-relay, with a real sshd as
# the second PC; against a restart of the stand-in server (POST
# /v1/server/restart to the next picture read). The stand-in starts in about
# half a second; a real Strata start is 30-90 s with a 50 GB model (docs/strata.md),
# without text meanwhile. Repeats the test RUNS times (default 3) and prints
# each run's lines. Needs sshd (the test starts its own on loopback).
#   bench/relay/switch.sh [RUNS]
set -euo pipefail
cd "$(dirname "$0")/../.."
runs=${1:-3}
for i in $(seq 1 "$runs"); do
  echo "== run $i"
  go test -count=1 -v -run 'TestVisionFollowsTheSettingsThroughTheServiceIntegration$' ./service |
    grep -E 'SWITCH to|RESTART of|SUMMARY|--- (PASS|FAIL)' | sed -E 's/^ +relay_integration_linux_test.go:[0-9]+: //'
done
