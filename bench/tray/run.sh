#!/usr/bin/env bash
# The tray library comparison (docs/tray.md "Which tray library"): the same
# small tray on github.com/getlantern/systray and on fyne.io/systray, each
# started TRAYBENCH_RUNS times (default 3) under Xvfb with a StatusNotifier
# host (gtk-sni-tray-standalone, with its own watcher) and with only an
# XEmbed tray (trayer). Prints two Markdown tables: what shows and works, and
# what each costs (binary, cgo, shared libraries).
#   bench/tray/run.sh
# Needs Xvfb, dbus-daemon, trayer, xdotool, ImageMagick's import and
# gtk-sni-tray-standalone (Debian: haskell-gtk-sni-tray-utils), and the
# tray's build packages (libgtk-3-dev libayatana-appindicator3-dev).
set -euo pipefail
cd "$(dirname "$0")"
exec go test -run '^$' -bench TrayLibraries -benchtime 1x -v .
