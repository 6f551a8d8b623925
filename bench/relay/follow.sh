#!/usr/bin/env bash
# Times what the relay's placement checks log, on this machine (no timing is
# asserted in the tests): a switch of placement (settings written as the
# backend writes them, to the next picture's reply), pictures while the second
# PC is known down (ERR at once, fallback on the CPU) against pictures on the
# live loopback link, and how fast QUIT / end of input / SIGTERM end a picture.
# Needs sshd (the tests start their own on loopback).
#   bench/relay/follow.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
go test -count=1 -v -run 'TestPlacementFollowsTheSettingsInOneProcessIntegration$|TestSecondPCDownFallsBackAndReturnsIntegration$|TestStopDuringAPictureIntegration$|TestHungAgentQuitEndsEverythingIntegration$' ./relay |
  grep -E 'switch to|ERR while known down|fallback picture|relay gone|everything gone|--- (PASS|FAIL)'
