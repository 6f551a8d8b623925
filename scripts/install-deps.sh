#!/usr/bin/env bash
# Installs the Debian packages Strata Companion needs, in two sets:
#
#   scripts/install-deps.sh run    what building and running the four programs
#                                  needs (`make run`): a C compiler and the GL,
#                                  X11, GTK3 and appindicator headers for the
#                                  cgo programs (fyne, getlantern/systray).
#                                  No server, no wine, nothing that starts.
#   scripts/install-deps.sh test   that, plus what the tests and the Windows
#                                  builds need (`make test`, `make build`,
#                                  `make installer`): Xvfb, OpenSSH's server,
#                                  systemd-nspawn, mingw, NSIS, 7-Zip, wine.
#   (no argument: test)
#   --list                         print the packages it would install (the
#                                  missing ones) and install nothing.
#
# Safe to run again: it installs only what is missing. Needs root (or sudo).
set -euo pipefail

run_pkgs=(
  # the Makefile itself (a fresh Debian has no make; .ci/run calls this script first)
  make
  # cgo builds: fyne (GL, X11) and getlantern/systray (GTK3, ayatana appindicator)
  pkg-config gcc libgl1-mesa-dev xorg-dev libgtk-3-dev libayatana-appindicator3-dev
)
test_pkgs=(
  # Windows cross-builds of the cgo programs
  gcc-mingw-w64-x86-64
  # a real X server, a window manager, a tray host and a session bus for GUI tests and screenshots
  xvfb xauth xdotool openbox dbus-x11 libglib2.0-bin trayer imagemagick fonts-dejavu-core
  # xwininfo: where a window is inside wine's desktop (the Windows GUI test)
  x11-utils
  # git: the tests of Strata's own update (a git checkout of an origin), and
  # the installer's build lists the sources with it
  git
  # a real OpenSSH server and client for the second-PC and relay tests
  openssh-server openssh-client
  # network namespaces and rate limits (ip, tc) for the slow-link tests
  iproute2
  # the Windows installer, and reading it back (7zz lists its files)
  nsis osslsigncode 7zip
  # running the Windows builds: the installer's silent install/uninstall, the
  # Windows service and the tray (wine 8 runs Go programs with a small shim)
  wine wine64
  # a real systemd for the service tests (systemd-nspawn)
  systemd-container
)

set_=test
list=0
for a in "$@"; do
  case "$a" in
    run|test) set_=$a ;;
    --list) list=1 ;;
    -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
    *) echo "install-deps.sh: unknown argument $a (use run, test or --list)" >&2; exit 2 ;;
  esac
done
pkgs=("${run_pkgs[@]}")
if [ "$set_" = test ]; then
  pkgs+=("${test_pkgs[@]}")
fi

missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "$list" = 1 ]; then
  echo "install-deps.sh $set_ needs: ${pkgs[*]}"
  echo "missing here (would be installed): ${missing[*]:-none}"
  exit 0
fi
if [ "${#missing[@]}" -eq 0 ]; then
  exit 0
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO=sudo; fi
echo "installing ($set_): ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
