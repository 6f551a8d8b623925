#!/usr/bin/env bash
# `make run`: the product's main job on this machine.
#
# - With a Strata install (STRATA_ROOT=DIR, or one the companion finds): the
#   setup, in a window when there is a display (strata-setup), else in this
#   terminal (strata-service setup --cli).
# - Without one (a fresh machine, CI): a demo on a stand-in Strata server that
#   behaves as the real one (see docs/service.md): probe this PC, place vision
#   where the probe recommends, run Strata supervised, show its state through
#   the control API, then stop it (or keep it running until Ctrl-C when run
#   from a terminal).
set -euo pipefail
cd "$(dirname "$0")/.."
svc=bin/strata-service

if [ -n "${STRATA_ROOT:-}" ] || { [ -z "${STRATA_DEMO:-}" ] && $svc status >/dev/null 2>&1; }; then
  args=()
  [ -n "${STRATA_ROOT:-}" ] && args+=(--strata-root "$STRATA_ROOT")
  if [ -n "${DISPLAY:-}" ]; then
    exec bin/strata-setup "${args[@]}"
  fi
  exec $svc setup --cli "${args[@]}"
fi

demo=$PWD/.demo
rm -rf "$demo"
mkdir -p "$demo"
export STRATA_COMPANION_HOME=$demo/companion
echo "No Strata install here: a demo on a stand-in Strata server (set STRATA_ROOT=DIR to use a real one)."
echo
echo "== strata-service probe (this PC)"
$svc probe || true
echo
bin/strata-standin make-root "$demo/strata" --step 500ms --encoder bin/strata-vision-standin
# The recommendation's placement (the JSON is indented, one key a line).
recommended=$($svc probe --json | sed -n '/"recommendation"/,/"placement"/s/.*"placement": *"\([a-z]*\)".*/\1/p' | head -1)
case "$recommended" in
  gpu|cpu) placement=$recommended why="the probe's recommendation" ;;
  *) placement=cpu why="the probe recommends ${recommended:-nothing}, which needs a second PC paired first: the demo reads pictures on the CPU" ;;
esac
echo
echo "== strata-service vision $placement ($why)"
$svc vision "$placement" --strata-root "$demo/strata"
echo
echo "== strata-service run (supervises the server; the control API answers the tray and the wizard)"
$svc run --strata-root "$demo/strata" --foreground > "$demo/run.log" 2>&1 &
runpid=$!
stopped=0
# stop ends what the demo started (strata-service run, and with it the
# stand-in server), once, and says so.
stop() {
  [ "$stopped" = 1 ] && return
  stopped=1
  kill -TERM "$runpid" 2>/dev/null || true
  wait "$runpid" 2>/dev/null || true
}
trap stop EXIT
for _ in $(seq 1 120); do
  if $svc status 2>/dev/null | grep -q '^Server: *ready'; then break; fi
  sleep 0.5
done
sed 's/^/  | /' "$demo/run.log"
echo
echo "== strata-service status"
$svc status || true
home="STRATA_COMPANION_HOME=$STRATA_COMPANION_HOME"
if [ -t 0 ] && [ -t 1 ]; then
  echo
  echo "Strata (the stand-in) runs supervised. In another terminal, from $PWD:"
  echo "  $home $svc status"
  echo "Press Ctrl-C to stop it."
  trap 'true' INT
  wait "$runpid" 2>/dev/null || true
  trap - INT
fi
stop
port=$(sed -n 's/.*"port": *\([0-9]*\).*/\1/p' "$demo/strata/strata-demo.json" | head -1)
echo
echo "== What ran"
echo "  $svc run supervised the stand-in Strata server ($demo/strata, port $port), with pictures read on"
echo "  this PC's $([ "$placement" = gpu ] && echo GPU || echo CPU) ($why). Both are stopped now; its log is $demo/run.log."
echo "  The demo's companion settings are in $STRATA_COMPANION_HOME (nothing was written to your home folder)."
echo
echo "== Try next (from $PWD)"
echo "  $home $svc status"
echo "      the demo install, as the tray and the wizard see it (nothing runs now: no Server line)"
echo "  $home $svc run --strata-root $demo/strata --foreground"
echo "      run the stand-in server supervised again (Ctrl-C stops it)"
echo "  $home $svc vision off --strata-root $demo/strata --dry-run"
echo "      what turning pictures off would change in its config"
echo "  $svc probe --json"
echo "      this PC's probe as JSON"
echo "  STRATA_ROOT=/path/to/Strata make run"
echo "      the setup on a real Strata install"
