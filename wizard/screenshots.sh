#!/usr/bin/env bash
# Screenshots of every strata-setup page, from the real program under Xvfb,
# built with -tags demo (the shipped build has no demo machine), with the
# demo machine (STRATA_SETUP_DEMO=1) and the autopilot, which prints
# "shot NAME" when a page has settled and waits for a line before going on.
# It shows the lending view first (lend: its code), then walks the setup; on the Second PC page it pairs by code
# (remote-found, remote-code-wrong, remote-code), or by the address and ssh
# when no PC lends (remote-empty, remote-hostkey, remote-probed, remote).
#
#   bash wizard/screenshots.sh                  # docs/wizard-*.png, light, 100 %
#   STOP_AT=remote EXTRA_ENV=STRATA_SETUP_DEMO_LENDERS=none bash wizard/screenshots.sh
#                                               # the Second PC page by its address (no PC lends)
#   PREFIX=wizard-dark FYNE_THEME=dark STOP_AT=review bash wizard/screenshots.sh
#   PREFIX=wizard-150 FYNE_SCALE=1.5 STOP_AT=placement bash wizard/screenshots.sh
#   PREFIX=wizard-failed STOP_AT=apply EXTRA_ENV=STRATA_SETUP_DEMO_FAIL=follow bash wizard/screenshots.sh
#
# Needs Xvfb, openbox, xdotool and ImageMagick's import (scripts/install-deps.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-docs}
PREFIX=${PREFIX:-wizard}
BIN=${BIN:-bin/strata-setup-demo}
mkdir -p "$OUT" "$(dirname "$BIN")"
[ -x "$BIN" ] || CGO_ENABLED=1 go build -trimpath -tags demo -o "$BIN" ./wizard

disp=:$(( 90 + RANDOM % 9 ))
Xvfb "$disp" -screen 0 1280x900x24 -nolisten tcp >/dev/null 2>&1 &
xpid=$!
rt=$(mktemp -d); chmod 700 "$rt"
trap 'kill $xpid ${opid:-} ${APP_PID:-} 2>/dev/null; rm -rf "$rt"' EXIT
sleep 1
export DISPLAY=$disp XDG_RUNTIME_DIR=$rt
# Reproducible pictures: light unless asked (else fyne follows the desktop).
export FYNE_THEME=${FYNE_THEME:-light}
openbox >/dev/null 2>&1 & opid=$!
sleep 1
coproc APP { STRATA_SETUP_DEMO=1 STRATA_SETUP_AUTOPILOT=1 env ${EXTRA_ENV:-} "$BIN" 2>"$rt/app.err"; }
while read -r -t 120 line <&"${APP[0]}"; do
  case "$line" in
  shot\ *)
    name=${line#shot }
    wid=$(xdotool search --name "Strata Companion setup" | head -1)
    /usr/bin/import -window "$wid" -frame "$OUT/$PREFIX-$name.png"
    echo "saved $OUT/$PREFIX-$name.png"
    echo >&"${APP[1]}"
    [ "$name" = "${STOP_AT:-done}" ] && break
    ;;
  esac
done
