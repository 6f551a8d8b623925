#!/usr/bin/env bash
# Installs the Debian packages that building and testing Strata Companion need.
# Safe to run again: it installs only what is missing. Needs root (or sudo).
set -euo pipefail

pkgs=(
  # cgo builds: fyne (GL, X11) and getlantern/systray (GTK3, ayatana appindicator)
  pkg-config gcc libgl1-mesa-dev xorg-dev libgtk-3-dev libayatana-appindicator3-dev
  # Windows cross-builds of the cgo programs
  gcc-mingw-w64-x86-64
  # a real X server, a window manager, a tray host and a session bus for GUI tests and screenshots
  xvfb xauth xdotool openbox dbus-x11 libglib2.0-bin trayer imagemagick fonts-dejavu-core
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

missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -eq 0 ]; then
  exit 0
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO=sudo; fi
echo "installing: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
