#!/usr/bin/env bash
# The GPU observation check (README.md): on a PC with an NVIDIA GPU, the
# agent's reported VRAM against nvidia-smi's own reading, the idle stop
# giving it back, the wake taking it again. Exit 0: passed; 1: a check
# failed; 2: no GPU here; 3: no way to hold VRAM from Python here.
#   bench/gpu/run.sh [-card N] [-idle S] [-mib M]
set -uo pipefail
cd "$(dirname "$0")/../.."
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
go build -o "$bin/gpubench" ./bench/gpu || exit 1
"$bin/gpubench" "$@"
