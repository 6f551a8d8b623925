#!/usr/bin/env bash
# Idle costs: CPU ms per minute (and RSS) of an idle strata-service supervising
# the stand-in Strata server (ready, nothing happening), next to an idle Go
# HTTP server; and, with TRAY=1 (Xvfb, dbus, cgo builds), of strata-tray
# showing that service next to a bare getlantern/systray program with three
# items. CPU is the sum over the process's threads of the scheduler's own
# run time (/proc/PID/task/*/schedstat, ns), read before and after the window.
#   bench/idle/run.sh [seconds, default 60]      (TRAY=1 bench/idle/run.sh)
# BEFORE=<commit> also builds and measures that commit's strata-service (and
# strata-tray) in the same run.
set -euo pipefail
cd "$(dirname "$0")/../.."
secs=${1:-60}
root=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$root"
}
trap cleanup EXIT
bin=$root/bin
mkdir -p "$bin"
go build -o "$bin/strata-service" ./service
go build -o "$bin/strata-standin" ./internal/fakestrata/cmd/strata-standin
go build -o "$bin/barehttp" ./bench/idle/barehttp
before=${BEFORE:-}
if [ -n "$before" ]; then
  mkdir -p "$root/before-src"
  git archive "$before" | tar -x -C "$root/before-src"
  (cd "$root/before-src" && go build -o "$bin/strata-service-before" ./service)
fi
if [ "${TRAY:-0}" = 1 ]; then
  go build -o "$bin/strata-tray" ./app
  go build -o "$bin/baretray" ./bench/idle/baretray
  [ -n "$before" ] && (cd "$root/before-src" && go build -o "$bin/strata-tray-before" ./app)
fi

# CPU: per thread, the scheduler's own run time (ns) from
# /proc/PID/task/TID/schedstat; a thread's share counts from the window's
# start (threads born inside it count whole; one that ends inside it loses
# its share, which only makes a figure smaller, never negative).
declare -A tstart
snap() { # remember every thread's ns of $1
  local t ns
  for t in /proc/"$1"/task/*; do
    read -r ns _ < "$t/schedstat" 2>/dev/null && tstart[$1:${t##*/}]=$ns
  done
}
cpu_delta_ns() { # ns used by $1's threads since snap
  local s=0 t ns
  for t in /proc/"$1"/task/*; do
    read -r ns _ < "$t/schedstat" 2>/dev/null || continue
    s=$((s + ns - ${tstart[$1:${t##*/}]:-0}))
  done
  echo "$s"
}
rss_kib() { awk '/^VmRSS:/ {print $2}' /proc/"$1"/status; }

measure_start() { for p in "$@"; do snap "$p"; done; }
report() { # name pid
  local ns
  if [ ! -d /proc/"$2" ]; then echo "  $1: it exited (see its log under the temp folder)"; return; fi
  ns=$(cpu_delta_ns "$2")
  awk -v n="$1" -v ns="$ns" -v s="$secs" -v r="$(rss_kib "$2")" \
    'BEGIN { printf "  %-26s %8.2f ms CPU per minute   RSS %6.1f MiB\n", n, ns / 1e6 * 60 / s, r / 1024 }'
}

# One service (and its stand-in Strata) per variant, each with its own home.
variants=(after)
[ -n "$before" ] && variants+=(before)
declare -A svc
for v in "${variants[@]}"; do
  home=$root/$v
  mkdir -p "$home"
  "$bin/strata-standin" make-root "$home/strata" --step 50ms >/dev/null
  exe=$bin/strata-service
  [ "$v" = before ] && exe=$bin/strata-service-before
  STRATA_COMPANION_HOME=$home/companion "$exe" run --foreground --strata-root "$home/strata" >"$home/service.log" 2>&1 &
  svc[$v]=$!
  pids+=($!)
done
"$bin/barehttp" >/dev/null &
bare=$!
pids+=($bare)

if [ "${TRAY:-0}" = 1 ]; then
  export XDG_RUNTIME_DIR=$root/xdg
  mkdir -m 700 "$XDG_RUNTIME_DIR"
  disp=:$((90 + RANDOM % 9))
  Xvfb "$disp" -screen 0 1024x768x24 -nolisten tcp >/dev/null 2>&1 &
  pids+=($!)
  export DISPLAY=$disp
  eval "$(dbus-launch --sh-syntax)"
  pids+=("$DBUS_SESSION_BUS_PID")
  sleep 2
  declare -A tray
  for v in "${variants[@]}"; do
    exe=$bin/strata-tray
    [ "$v" = before ] && exe=$bin/strata-tray-before
    # Its own runtime folder: the tray allows one instance per folder.
    mkdir -m 700 "$root/$v/xdg"
    XDG_RUNTIME_DIR=$root/$v/xdg STRATA_COMPANION_HOME=$root/$v/companion "$exe" >"$root/$v/tray.log" 2>&1 &
    tray[$v]=$!
    pids+=($!)
  done
  "$bin/baretray" >/dev/null 2>&1 &
  baretray=$!
  pids+=($baretray)
fi

# Let everything start, the servers become ready and the trays connect (SETTLE
# seconds, default 30), then measure idle.
sleep "${SETTLE:-30}"
for v in "${variants[@]}"; do
  grep -q "ready" "$root/$v/service.log" || echo "warning: the $v service log shows no ready line yet" >&2
done
all=("${svc[@]}" "$bare")
[ "${TRAY:-0}" = 1 ] && all+=("${tray[@]}" "$baretray")
measure_start "${all[@]}"
# STRACE=1: count the trays' system calls over the window too (strace -c -f;
# tracing slows each call, so the CPU figures of a traced run are higher).
traced=()
if [ "${STRACE:-0}" = 1 ] && [ "${TRAY:-0}" = 1 ]; then
  for v in "${variants[@]}" bare; do
    p=${tray[$v]:-$baretray}
    strace -c -f -o "$root/strace-$v.txt" -p "$p" 2>/dev/null &
    traced+=($!)
  done
fi
# SVCTRACE=1: write the (after) service's system calls over the window, with
# times, to svc-strace.txt in the current folder.
if [ "${SVCTRACE:-0}" = 1 ]; then
  strace -f -tt -o "$PWD/svc-strace.txt" -p "${svc[after]}" 2>/dev/null &
  traced+=($!)
fi
sleep "$secs"
for p in "${traced[@]}"; do kill -INT "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
echo "Idle for ${secs} s ($(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)):"
for v in "${variants[@]}"; do report "strata-service ($v)" "${svc[$v]}"; done
report "bare Go HTTP server" "$bare"
if [ "${TRAY:-0}" = 1 ]; then
  for v in "${variants[@]}"; do report "strata-tray ($v)" "${tray[$v]}"; done
  report "bare systray, 3 items" "$baretray"
fi
for f in "$root"/strace-*.txt; do
  [ -f "$f" ] || continue
  echo "system calls of strata-tray (${f##*/strace-}):"; head -n 14 "$f"
done
