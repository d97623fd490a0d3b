#!/usr/bin/env bash
# Regenerates scripts/link-order.txt: the functions that `evidence hash` and `evidence ingest`
# run, which the release link (Package.swift, releaseLinkerSettings) places together at the
# start of the code. The kernel maps a program's code 64 KB around each first touch, so the
# same few thousand functions spread over 27 MB of code cost about 16 MB of memory in
# `ingest`, and 9 MB together. Run it after large changes to those paths:
#   scripts/link-order.sh [path/to/release/evidence]
# A stale list is harmless (missing names are skipped): the binary only gets bigger in memory.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-"$(swift build -c release --static-swift-stdlib --show-bin-path)/evidence"}
command -v valgrind >/dev/null || { echo "link-order.sh: needs valgrind (apt-get install -y valgrind)" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# valgrind 3.19 cannot read this toolchain's DWARF 5; the symbol table is all it needs.
objcopy --strip-debug "$bin" "$work/evidence"
printf 'one line\n' > "$work/small.txt"
printf 'another line\n' > "$work/second.txt"
truncate -s 64M "$work/sparse.bin"
profile() {
  local name=$1; shift
  valgrind --tool=callgrind --demangle=no --callgrind-out-file="$work/cg.$name" "$@" > /dev/null 2> "$work/log.$name" \
    || { echo "link-order.sh: profiling '$name' failed:" >&2; tail -5 "$work/log.$name" >&2; exit 1; }
}
profile hash "$work/evidence" hash "$work/small.txt"
profile ingest-new "$work/evidence" --home "$work/home" ingest --quiet "$work/small.txt"
profile ingest-again "$work/evidence" --home "$work/home" ingest --quiet "$work/second.txt"
profile ingest-sparse "$work/evidence" --home "$work/home" ingest --quiet "$work/sparse.bin"
grep -hoE '^c?fn=\([0-9]+\) .*' "$work"/cg.* | sed -E 's/^c?fn=\([0-9]+\) //' | sort -u > "$work/functions"
nm --defined-only "$work/evidence" | awk '$2 ~ /^[tTwW]$/ {print $3}' | sort -u > "$work/code"
comm -12 "$work/functions" "$work/code" > scripts/link-order.txt
echo "scripts/link-order.txt: $(wc -l < scripts/link-order.txt) functions"
