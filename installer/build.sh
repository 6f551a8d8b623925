#!/usr/bin/env bash
# Builds the Windows installer on Linux:
#   1. cross-compiles the four programs for windows/amd64 with their Windows
#      resources (icon, version information, manifest) made by go-winres,
#   2. signs them when a certificate is configured (see installer/sign.sh),
#   3. runs makensis (warnings are errors) to make
#      dist/StrataCompanionSetup-<version>.exe (its uninstaller and itself
#      signed too when a certificate is configured).
#
# Usage: installer/build.sh [--skip-build] [--binaries-only]
#   --skip-build     package the programs already in $DIST/windows-amd64
#   --binaries-only  build (and sign) the programs, no installer
# Environment:
#   DIST             output folder (default: <repo>/dist)
#   VERSION          product version (default: FyneApp.toml's Version)
#   STRATA_SIGN_*    see installer/sign.sh
#   STRATA_NSIS_FAST=1  zlib instead of solid LZMA (test repacks only)
#   STRATA_WINDOWS_PREBUILT  a folder an earlier unsigned build wrote (make
#                    build-windows: bin/windows-amd64): its programs are
#                    copied instead of built when they were built from this
#                    same source, version and Go (its .source-stamp says so);
#                    the installer test and CI share one build this way
#
# The resource files (rsrc_windows_amd64.syso) are made for each build in a
# snapshot of the source tree under a temporary folder, never in the working
# tree: they carry the version, so a committed copy would go stale, and other
# builds running in the same tree are not disturbed.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
cd "$root"

skip_build=0
binaries_only=0
for a in "$@"; do
  case "$a" in
    --skip-build) skip_build=1 ;;
    --binaries-only) binaries_only=1 ;;
    -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
    *) echo "build.sh: unknown option $a (try --help)" >&2; exit 2 ;;
  esac
done

GO_WINRES=github.com/tc-hib/go-winres@v0.3.3
PKG=github.com/strata-companion/companion
DIST=${DIST:-$root/dist}
mkdir -p "$DIST"
DIST=$(cd "$DIST" && pwd)
BINDIR=$DIST/windows-amd64
VERSION=${VERSION:-$(sed -n 's/^ *Version *= *"\(.*\)"/\1/p' FyneApp.toml)}
BUILD=$(sed -n 's/^ *Build *= *\([0-9]*\).*/\1/p' FyneApp.toml)
if [ -z "$VERSION" ]; then
  echo "build.sh: no version: FyneApp.toml has no Version line and VERSION is not set" >&2
  exit 1
fi
# Windows wants four numbers: major.minor.patch.build ("0.1.0-rc1" -> 0.1.0.<Build>).
IFS=. read -r v1 v2 v3 _ <<<"${VERSION%%[-+]*}"
VERSION4="${v1:-0}.${v2:-0}.${v3:-0}.${BUILD:-0}"

signing=0
if [ -n "${STRATA_SIGN_PFX:-}" ] || { [ -n "${STRATA_SIGN_CERT:-}" ] && [ -n "${STRATA_SIGN_KEY:-}" ]; }; then
  signing=1
fi

need() {
  if ! command -v "$1" >/dev/null; then
    echo "build.sh: $1 is not installed: $2 (scripts/install-deps.sh installs it)" >&2
    exit 1
  fi
}
need makensis "apt-get install nsis"
if [ "$skip_build" = 0 ]; then
  need go "install Go"
  need x86_64-w64-mingw32-gcc "apt-get install gcc-mingw-w64-x86-64"
fi
[ "$signing" = 1 ] && need osslsigncode "apt-get install osslsigncode"

start=$(date +%s)
work=$(mktemp -d "${TMPDIR:-/tmp}/strata-installer.XXXXXX")
trap 'rm -rf "$work"' EXIT

# name|package dir|file description|cgo|gui|execution level
# Only the installer asks for administrator rights. strata-service runs as
# the service (where the manifest does not apply) and as the command line,
# whose everyday commands (status, probe) must not raise a UAC prompt; its
# install/start/stop/uninstall say when they need an administrator prompt.
# The tray and the wizard run as the signed-in user; the wizard applies
# changes through the service's control API.
programs=(
  "strata-service|service|Strata Companion service and command line|0|0|"
  "strata-vision-relay|relay|Strata Companion vision relay (remote image encoder)|0|0|"
  "strata-tray|app|Strata Companion tray icon|1|1|"
  "strata-setup|wizard|Strata Companion setup|1|1|"
)

# Linux second PCs the installer can prepare without Go installed.
agent_arches=(amd64 arm64)

winres_json() { # name desc gui level
  local name=$1 desc=$2 gui=$3 level=$4 dpi="system" cc=false
  if [ "$gui" = 1 ]; then dpi="per monitor v2"; cc=true; fi
  cat <<EOF
{
  "RT_GROUP_ICON": { "APP": { "0000": "app.ico" } },
  "RT_MANIFEST": { "#1": { "0409": {
    "description": "$desc",
    "minimum-os": "win10",
    "execution-level": "$level",
    "dpi-awareness": "$dpi",
    "long-path-aware": true,
    "use-common-controls-v6": $cc
  } } },
  "RT_VERSION": { "#1": { "0000": {
    "fixed": { "file_version": "$VERSION4", "product_version": "$VERSION4" },
    "info": { "0409": {
      "CompanyName": "Strata Companion project",
      "FileDescription": "$desc",
      "FileVersion": "$VERSION",
      "InternalName": "$name",
      "LegalCopyright": "Copyright (c) the Strata Companion authors. MIT License.",
      "OriginalFilename": "$name.exe",
      "ProductName": "Strata Companion",
      "ProductVersion": "$VERSION"
    } }
  } } }
}
EOF
}

# source_stamp names what a build is made of: the source (tracked files and
# new ones git does not ignore), the version and the Go toolchain.
source_stamp() {
  {
    if git -C "$root" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
      git -C "$root" ls-files -co --exclude-standard -z |
        while IFS= read -r -d '' f; do [ -f "$f" ] && printf '%s\0' "$f"; done
    else
      find . \( -path ./.git -o -path ./bin -o -path ./dist \) -prune -o -type f -print0
    fi | sort -z | xargs -0 sha256sum
    echo "$VERSION $VERSION4 $(go version)"
  } | sha256sum | cut -d' ' -f1
}

reused=0
if [ "$skip_build" = 0 ] && [ -n "${STRATA_WINDOWS_PREBUILT:-}" ]; then
  mkdir -p "$BINDIR"
  # Wait for a build that may be making it right now (see the lock below).
  exec 9>"$(go env GOCACHE)/strata-companion-windows-build.lock"
  if command -v flock >/dev/null && ! flock -n 9; then
    echo "   waiting for another Windows build of Strata Companion on this machine"
    flock 9
  fi
  stamp=$(source_stamp)
  if [ "$(cat "$STRATA_WINDOWS_PREBUILT/.source-stamp" 2>/dev/null)" = "$stamp" ]; then
    echo "== reusing the Windows programs built from this same source in $STRATA_WINDOWS_PREBUILT"
    (cd "$STRATA_WINDOWS_PREBUILT" && cp -r ./*.exe ./linux-* "$BINDIR/")
    reused=1
  else
    echo "   $STRATA_WINDOWS_PREBUILT was not built from this source (or not at all): building"
  fi
  exec 9>&-
fi

if [ "$skip_build" = 0 ] && [ "$reused" = 0 ]; then
  echo "== building the Windows programs $VERSION ($VERSION4) into $BINDIR"
  stamp=$(source_stamp)
  rm -f "$BINDIR/.source-stamp"
  # A snapshot of the source: tracked files plus new ones git does not ignore.
  src=$work/src
  mkdir -p "$src"
  if git -C "$root" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    git -C "$root" ls-files -co --exclude-standard -z |
      while IFS= read -r -d '' f; do [ -e "$f" ] && printf '%s\0' "$f"; done |
      tar --null -T - -cf - | tar -xf - -C "$src"
  else
    tar --exclude=./.git --exclude=./bin --exclude=./dist -cf - . | tar -xf - -C "$src"
  fi
  mkdir -p "$BINDIR"
  # One Windows build at a time on this machine: a second one (make test's
  # installer test next to CI's background build) waits, then finds the cgo
  # packages in the Go build cache instead of compiling fyne twice at once.
  # The lock sits in the Go build cache, the thing the builds share: not in
  # /tmp (where it would stay behind) and the same for every TMPDIR.
  exec 9>"$(go env GOCACHE)/strata-companion-windows-build.lock"
  if command -v flock >/dev/null && ! flock -n 9; then
    echo "   waiting for another Windows build of Strata Companion on this machine"
    flock 9
  fi
  for p in "${programs[@]}"; do
    IFS='|' read -r name dir desc cgo gui level <<<"$p"
    rdir=$work/winres/$name
    mkdir -p "$rdir"
    cp assets/app.ico "$rdir/app.ico"
    winres_json "$name" "$desc" "$gui" "$level" >"$rdir/winres.json"
    go run "$GO_WINRES" make --in "$rdir/winres.json" --arch amd64 --out "$src/$dir/rsrc"
    ldflags="-s -w -X $PKG/internal/version.Version=$VERSION"
    envs=(GOOS=windows GOARCH=amd64 CGO_ENABLED=0)
    if [ "$cgo" = 1 ]; then
      envs=(GOOS=windows GOARCH=amd64 CGO_ENABLED=1 CC=x86_64-w64-mingw32-gcc)
    fi
    if [ "$gui" = 1 ]; then
      ldflags="$ldflags -H=windowsgui"
    fi
    t0=$(date +%s)
    # -trimpath as everywhere else in the project, so the warm cgo builds
    # of fyne and systray in the Go build cache are reused.
    (cd "$src" && env "${envs[@]}" go build -trimpath -ldflags "$ldflags" -o "$BINDIR/$name.exe" "./$dir")
    echo "   $name.exe: $(($(date +%s) - t0)) s, $(stat -c %s "$BINDIR/$name.exe") bytes"
  done
  # The relay's agent for a Linux second PC: `strata-service remote prepare`
  # finds it in <install folder>\<os>-<arch>\ and uploads it there.
  for arch in "${agent_arches[@]}"; do
    (cd "$src" && GOOS=linux GOARCH=$arch CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X $PKG/internal/version.Version=$VERSION" -o "$BINDIR/linux-$arch/strata-vision-relay" ./relay)
    echo "   linux-$arch/strata-vision-relay (the second PC's agent): $(stat -c %s "$BINDIR/linux-$arch/strata-vision-relay") bytes"
  done
  # Unsigned programs can be reused by a later build of the same source.
  if [ "$signing" = 0 ]; then
    echo "$stamp" >"$BINDIR/.source-stamp"
  fi
  exec 9>&-
elif [ "$skip_build" = 1 ]; then
  for f in $(for p in "${programs[@]}"; do echo "${p%%|*}.exe"; done) $(for a in "${agent_arches[@]}"; do echo "linux-$a/strata-vision-relay"; done); do
    if [ ! -f "$BINDIR/$f" ]; then
      echo "build.sh: --skip-build, but $BINDIR/$f is missing: run without --skip-build" >&2
      exit 1
    fi
  done
fi

if [ "$signing" = 1 ] && [ "$skip_build" = 0 ]; then
  echo "== signing the programs"
  for p in "${programs[@]}"; do
    bash "$here/sign.sh" "$BINDIR/${p%%|*}.exe"
  done
fi

if [ "$binaries_only" = 1 ]; then
  echo "== done in $(($(date +%s) - start)) s (programs only)"
  exit 0
fi

out=$DIST/StrataCompanionSetup-$VERSION.exe
echo "== makensis -> $out"
defs=(
  "-DVERSION=$VERSION" "-DVERSION4=$VERSION4" "-DBINDIR=$BINDIR" "-DASSETS=$root/assets"
  "-DLICENSE=$here/LICENSE.txt" "-DOUTFILE=$out"
)
# The welcome and finish pages' side picture (164x314, BMP as NSIS wants),
# drawn from the app icon in the product's colours. ImageMagick is called by
# full path: another "convert" may come first on PATH.
magick=/usr/bin/convert
[ -x "$magick" ] || magick=$(command -v convert || true)
if [ -n "$magick" ]; then
  "$magick" -size 164x314 gradient:'#2B3A86'-'#141B45' \( assets/app.png -resize 112x112 \) \
    -gravity north -geometry +0+36 -composite \
    -font DejaVu-Sans-Bold -pointsize 15 -fill white -annotate +0+160 'Strata' \
    -font DejaVu-Sans -pointsize 13 -fill '#9EF0E1' -annotate +0+180 'Companion' \
    -type TrueColor "BMP3:$work/welcome.bmp"
  defs+=("-DWELCOME_BMP=$work/welcome.bmp")
else
  echo "   note: ImageMagick is not installed: the welcome page keeps NSIS's default picture"
fi
if [ "$signing" = 1 ]; then
  defs+=("-DSIGN_CMD=bash '$here/sign.sh'")
fi
# A throwaway repack for a test (the wine test's "older version") needs no
# small file: zlib instead of solid LZMA, seconds instead of a minute.
if [ "${STRATA_NSIS_FAST:-}" = 1 ]; then
  defs+=("-DFAST_COMPRESSION")
fi
rm -f "$out"
# -WX: a warning (an unused variable, a missing string) fails the build.
makensis -WX -V2 -NOCD "-XTarget amd64-unicode" "${defs[@]}" "$here/strata-companion.nsi"
echo "== $out: $(stat -c %s "$out") bytes, built in $(($(date +%s) - start)) s"
