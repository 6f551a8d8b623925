#!/usr/bin/env bash
# Smoke test of the Windows installer under wine: installs silently into a
# fresh 64-bit wine prefix (Windows 10 mode), checks the files, Start menu
# entries, registry entries and the service registration, upgrades in place,
# uninstalls silently and checks that nothing is left but the settings the
# user kept, and that the Strata folder was not touched.
#
# Usage: installer/wine-smoke.sh [StrataCompanionSetup-<version>.exe [an older one]]
#   (default: dist/StrataCompanionSetup-<FyneApp.toml version>.exe; with an
#   older installer, the first install is the older one and the upgrade goes
#   from it to the new one)
# Needs: wine, wine64, Xvfb, x86_64-w64-mingw32-gcc. Takes about 2 minutes.
#
# Two known wine problems are handled here:
# Go programs need bcryptprimitives.dll's ProcessPrng, which wine 8 lacks (a
# small shim built with mingw goes into system32), and wine 8 reports
# Windows 7 by default, which the installer refuses (Go needs Windows 10).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
version=${VERSION:-$(sed -n 's/^ *Version *= *"\(.*\)"/\1/p' "$root/FyneApp.toml")}
setup=${1:-$root/dist/StrataCompanionSetup-$version.exe}
[ -f "$setup" ] || { echo "wine-smoke.sh: no installer at $setup: run installer/build.sh first" >&2; exit 1; }
setup=$(cd "$(dirname "$setup")" && pwd)/$(basename "$setup")
first=${2:-$setup}
[ -f "$first" ] || { echo "wine-smoke.sh: no installer at $first" >&2; exit 1; }
first=$(cd "$(dirname "$first")" && pwd)/$(basename "$first")
first_version=$(basename "$first" .exe)
first_version=${first_version#StrataCompanionSetup-}
for t in wine wineserver Xvfb x86_64-w64-mingw32-gcc; do
  command -v "$t" >/dev/null || { echo "wine-smoke.sh: $t is not installed (apt-get install wine wine64 xvfb gcc-mingw-w64-x86-64)" >&2; exit 1; }
done

tmp=$(mktemp -d "${TMPDIR:-/tmp}/strata-wine.XXXXXX")
export WINEPREFIX=$tmp/prefix WINEARCH=win64 WINEDEBUG=-all
# No menu entries, icons or file associations in anybody's home folder: wine's
# menu builder is off, and wine gets a home and XDG folders of its own (the
# prefix's Start menu is still checked inside the prefix).
export WINEDLLOVERRIDES="mscoree,mshtml=;winemenubuilder.exe=d"
export HOME=$tmp/home XDG_CONFIG_HOME=$tmp/home/.config XDG_DATA_HOME=$tmp/home/.local/share \
  XDG_CACHE_HOME=$tmp/home/.cache XDG_STATE_HOME=$tmp/home/.local/state XDG_RUNTIME_DIR=$tmp/run
# Debian's wine keeps wineserver's socket folder in $TMPDIR/wine-XXXXXX.
export TMPDIR=$tmp/tmp
mkdir -p "$HOME" "$XDG_RUNTIME_DIR" "$TMPDIR"
chmod 700 "$XDG_RUNTIME_DIR"
xvfb=""
cleanup() {
  wineserver -k >/dev/null 2>&1 || true
  wineserver -w >/dev/null 2>&1 || true
  [ -n "$xvfb" ] && kill "$xvfb" 2>/dev/null && wait "$xvfb" 2>/dev/null
  # Upstream wine keeps it in /tmp/.wine-<uid>/server-<dev>-<inode of the
  # prefix>, empty once the server is gone: remove it, and the per-user
  # folder when nothing else uses it.
  if [ -d "$WINEPREFIX" ]; then
    rm -rf "/tmp/.wine-$(id -u)/server-$(stat -c '%D' "$WINEPREFIX")-$(printf '%x' "$(stat -c '%i' "$WINEPREFIX")")"
    rmdir "/tmp/.wine-$(id -u)" 2>/dev/null || true
  fi
  rm -rf "$tmp"
}
trap cleanup EXIT

# A private X server on a free display (the installer's silent mode opens no
# window, but wine's explorer and taskkill want a display).
Xvfb -displayfd 3 -screen 0 1024x768x24 -nolisten tcp 3>"$tmp/display" >/dev/null 2>&1 &
xvfb=$!
for _ in $(seq 50); do [ -s "$tmp/display" ] && break; sleep 0.1; done
export DISPLAY=:$(cat "$tmp/display")

log=$tmp/wine.log
# w runs a Windows program, its output in the log, and returns its exit code.
w() { wine "$@" </dev/null >>"$log" 2>&1; }

fails=0
ok() { echo "ok:   $*"; }
bad() { echo "FAIL: $*"; fails=$((fails + 1)); }
check() { # check "what" command...
  local what=$1; shift
  if "$@" >/dev/null 2>&1; then ok "$what"; else bad "$what"; fi
}

echo "== preparing a wine prefix (Windows 10 mode)"
t0=$(date +%s)
mkdir -p "$WINEPREFIX"
# A persistent wineserver started first, with its output away from ours, or
# the pipes of whoever runs this script never close.
wineserver -p 900 </dev/null >/dev/null 2>&1
w cmd /c exit
w winecfg -v win10
cat >"$tmp/shim.c" <<'EOF'
#include <windows.h>
BOOLEAN WINAPI SystemFunction036(PVOID buf, ULONG len); /* RtlGenRandom */
BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T len) {
  while (len > 0) {
    ULONG n = len > 0x40000000 ? 0x40000000 : (ULONG)len;
    if (!SystemFunction036(data, n)) return FALSE;
    data += n; len -= n;
  }
  return TRUE;
}
EOF
printf 'LIBRARY bcryptprimitives\nEXPORTS\n  ProcessPrng\n' >"$tmp/shim.def"
x86_64-w64-mingw32-gcc -O2 -shared -s -o "$WINEPREFIX/drive_c/windows/system32/bcryptprimitives.dll" \
  "$tmp/shim.c" "$tmp/shim.def" -ladvapi32
echo "   ready in $(($(date +%s) - t0)) s"

C=$WINEPREFIX/drive_c
inst="$C/Program Files/Strata Companion"
menu="$C/ProgramData/Microsoft/Windows/Start Menu/Programs/Strata Companion"
data="$C/ProgramData/StrataCompanion"
UNINST='HKLM\Software\Microsoft\Windows\CurrentVersion\Uninstall\StrataCompanion'
RUN='HKLM\Software\Microsoft\Windows\CurrentVersion\Run'

# A stand-in Strata install (only its layout matters to the installer), and
# a fingerprint of it to prove it is never touched.
mkdir -p "$C/Strata/serve" "$C/Strata/engine" "$C/Strata-data/models"
echo "# stand-in for Strata's server" >"$C/Strata/serve/server.py"
echo '{"vision": {"exe": "engine\\strata-vision.exe"}}' >"$C/Strata/strata-iq2_xs.json"
head -c 4096 /dev/urandom >"$C/Strata-data/models/model.gguf"
fingerprint() { (cd "$C" && find Strata Strata-data -type f "$@" -exec sha256sum {} + | sort); }
before=$(fingerprint)
before_no_config=$(fingerprint ! -name 'strata-*.json*')

regval() { # regval KEY VALUE: prints the value's data
  wine reg query "$1" /v "$2" </dev/null 2>/dev/null | tr -d '\r' | awk -v v="$2" '$1 == v { $1 = ""; $2 = ""; sub(/^  */, ""); print }'
}
haskey() { wine reg query "$1" </dev/null >/dev/null 2>&1; }
# services: the services whose program is our strata-service.exe.
services() {
  wine reg export 'HKLM\System\CurrentControlSet\Services' "C:\\svc.reg" /y </dev/null >/dev/null 2>&1 || true
  iconv -f UTF-16LE -t UTF-8 "$C/svc.reg" 2>/dev/null | tr -d '\r' |
    awk '/^\[/ { key = $0 } /ImagePath/ && tolower($0) ~ /strata-service\.exe/ { print key }'
  rm -f "$C/svc.reg"
}
# wait_gone PATH: the silent uninstaller returns at once (it runs from a
# copy in %TEMP%); wait until it has removed PATH.
wait_gone() {
  for _ in $(seq 120); do [ -e "$1" ] || return 0; sleep 0.5; done
  return 1
}

echo "== /STRATA pointing at a folder that is not Strata"
set +e; w "$setup" /S '/STRATA=C:\Windows'; rc=$?; set -e
check "exit code 2 (got $rc)" test "$rc" = 2
check "nothing installed" test ! -e "$inst"

echo "== silent install of $first_version: /S /STRATA=C:\\Strata /TRAYLOGIN=1"
t0=$(date +%s)
set +e; w "$first" /S '/STRATA=C:\Strata' /TRAYLOGIN=1; rc=$?; set -e
echo "   took $(($(date +%s) - t0)) s, exit code $rc"
# Is the service's install command there yet? (It is another part of the
# product; until it lands the installer reports exit code 3.)
service_ready=1
if wine "$inst/strata-service.exe" install --help </dev/null 2>&1 | grep -q "not yet available"; then
  service_ready=0
  echo "   note: this build's strata-service has no 'install' yet: expecting exit code 3, no service"
fi
if [ "$service_ready" = 1 ]; then
  check "exit code 0 (got $rc)" test "$rc" = 0
else
  check "exit code 3: files in, service not registered (got $rc)" test "$rc" = 3
fi
got=$(cd "$inst" && ls | sort | tr '\n' ' ')
check "install folder holds exactly our files ($got)" test "$got" = "LICENSE.txt linux-amd64 linux-arm64 strata-service.exe strata-setup.exe strata-tray.exe strata-vision-relay.exe uninstall.exe "
check "the Linux agents for a second PC are there" test -f "$inst/linux-amd64/strata-vision-relay" -a -f "$inst/linux-arm64/strata-vision-relay"
check "strata-service.exe runs and reports $version" bash -c "wine '$inst/strata-service.exe' --version </dev/null 2>&1 | grep -q ' $version'"
for l in "Strata Companion Setup" "Strata Companion Tray" "Strata Companion Logs" "Uninstall Strata Companion"; do
  check "Start menu: $l" test -f "$menu/$l.lnk"
done
check "Add/Remove: DisplayName" test "$(regval "$UNINST" DisplayName)" = "Strata Companion"
check "Add/Remove: DisplayVersion $first_version" test "$(regval "$UNINST" DisplayVersion)" = "$first_version"
check "Add/Remove: Publisher" test -n "$(regval "$UNINST" Publisher)"
check "Add/Remove: DisplayIcon" test "$(regval "$UNINST" DisplayIcon)" = 'C:\Program Files\Strata Companion\strata-setup.exe,0'
check "Add/Remove: QuietUninstallString" test "$(regval "$UNINST" QuietUninstallString)" = '"C:\Program Files\Strata Companion\uninstall.exe" /S'
check "Add/Remove: UninstallString" test "$(regval "$UNINST" UninstallString)" = '"C:\Program Files\Strata Companion\uninstall.exe"'
check "Add/Remove: InstallLocation" test "$(regval "$UNINST" InstallLocation)" = 'C:\Program Files\Strata Companion'
size=$(regval "$UNINST" EstimatedSize)
check "Add/Remove: EstimatedSize ($size KB) is about the files' size" test "$((size))" -gt 5000
check "remembered Strata folder" test "$(regval 'HKLM\Software\StrataCompanion' StrataRoot)" = 'C:\Strata'
check "tray at login (HKLM Run)" test "$(regval "$RUN" StrataCompanionTray)" = '"C:\Program Files\Strata Companion\strata-tray.exe"'
check "settings folders made" test -d "$data/logs" -a -d "$data/secrets"
if [ "$service_ready" = 1 ]; then
  check "service registered ($(services | tr '\n' ' '))" test -n "$(services)"
fi

echo "== upgrade in place to $version (silent, no options: everything as before)"
# What the user keeps: the companion's own files (settings.json if the
# service wrote one) plus a pinned host key and a key, planted here.
had_settings=0
[ -f "$data/settings.json" ] && had_settings=1
echo "pc2.lan ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIStandIn" >"$data/known_hosts"
echo "not a real key" >"$data/secrets/relay_ed25519"
echo "old log line" >"$data/logs/strata-service.log"
set +e; w "$setup" /S; rc=$?; set -e
if [ "$service_ready" = 1 ]; then check "exit code 0 (got $rc)" test "$rc" = 0; else check "exit code 3 (got $rc)" test "$rc" = 3; fi
check "programs still there" test -f "$inst/strata-tray.exe" -a -f "$inst/uninstall.exe"
check "Add/Remove: DisplayVersion now $version" test "$(regval "$UNINST" DisplayVersion)" = "$version"
check "settings kept" test -f "$data/known_hosts" -a "$had_settings" = 0 -o -f "$data/settings.json"
check "pinned host key kept" grep -q pc2.lan "$data/known_hosts"
check "key kept" test -f "$data/secrets/relay_ed25519"
check "Strata folder still remembered" test "$(regval 'HKLM\Software\StrataCompanion' StrataRoot)" = 'C:\Strata'
check "tray-at-login choice kept" test -n "$(regval "$RUN" StrataCompanionTray)"
if [ "$service_ready" = 1 ]; then
  check "service registered once ($(services | tr '\n' ' '))" test "$(services | wc -l)" = 1
fi

echo "== silent uninstall, keeping settings (the default)"
w "$inst/uninstall.exe" /S
check "install folder removed" wait_gone "$inst"
check "logs removed" wait_gone "$data/logs"
check "Start menu folder removed" test ! -e "$menu"
check "Add/Remove entry removed" bash -c "! wine reg query '$UNINST' </dev/null"
check "HKLM\\Software\\StrataCompanion removed" bash -c "! wine reg query 'HKLM\\Software\\StrataCompanion' </dev/null"
check "login entry removed" test -z "$(regval "$RUN" StrataCompanionTray)"
check "the Strata folder, its config and models are untouched" test "$(fingerprint)" = "$before"
check "settings kept" test -f "$data/known_hosts" -a "$had_settings" = 0 -o -f "$data/settings.json"
check "pinned host key kept" grep -q pc2.lan "$data/known_hosts"
check "key kept" test -f "$data/secrets/relay_ed25519"
if [ "$service_ready" = 1 ]; then
  check "service removed" test -z "$(services)"
fi

echo "== install again, then uninstall with /KEEPSETTINGS=0"
set +e; w "$setup" /S '/STRATA=C:\Strata'; set -e
check "reinstalled" test -f "$inst/strata-service.exe"
check "no login entry without /TRAYLOGIN" test -z "$(regval "$RUN" StrataCompanionTray)"
# The vision block from before the companion: a backup beside the config
# (strataconfig's naming), which /RESTOREVISION=1 must put back.
cfg="$C/Strata/strata-iq2_xs.json"
echo '{"exe": "engine/strata.exe", "args": ["--threads", "8"]}' >"$cfg.bak-20260101T000000Z"
cp "$cfg.bak-20260101T000000Z" "$tmp/expected-config"
dry=$(wine "$inst/strata-service.exe" vision restore --dry-run </dev/null 2>&1 | tr -d '\r' || true)
w "$inst/uninstall.exe" /S /KEEPSETTINGS=0 /RESTOREVISION=1
check "install folder removed" wait_gone "$inst"
check "settings and keys removed" wait_gone "$data"
check "Program Files holds nothing of ours" test ! -e "$inst"
if cmp -s "$cfg" "$tmp/expected-config"; then
  ok "the Strata config's earlier vision block is back"
else
  bad "the Strata config's earlier vision block is back"
  printf '   strata-service vision restore --dry-run said before:\n%s\n   the config now:\n%s\n' "$dry" "$(cat "$cfg")"
fi
# Everything else of Strata's stays as it was (the restore keeps a backup of
# the config it replaced: only config backups may be new).
check "the rest of the Strata folder and its models are untouched" test "$(fingerprint ! -name 'strata-*.json*')" = "$before_no_config"

if [ "$fails" -gt 0 ]; then
  echo "wine smoke test: $fails check(s) failed; wine's output:"
  tail -40 "$log"
  exit 1
fi
echo "wine smoke test: all checks passed"
