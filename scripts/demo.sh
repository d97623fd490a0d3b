#!/usr/bin/env bash
# make demo: ingest samples/ into a fresh store on embedded defaults, then show what the
# catalog knows: the status table and each item's record.
set -euo pipefail
bin=${1:?usage: demo.sh path/to/evidence}
cd "$(dirname "$0")/.."
home=$(mktemp -d /tmp/evidence-demo.XXXXXX)
echo "== evidence home: $home"
echo "== evidence ingest samples/"
"$bin" --home "$home" ingest samples/
echo
echo "== evidence status"
"$bin" --home "$home" status || true
# A fresh home numbers its items 1..N.
count=$("$bin" --home "$home" status --json | sed -n 's/^  "items" : \([0-9]*\),*$/\1/p')
for id in $(seq 1 "${count:-0}"); do
  echo
  echo "== evidence show $id"
  "$bin" --home "$home" show "$id"
done
echo
echo "== evidence fsck"
"$bin" --home "$home" fsck
echo
echo "The store and catalog are in $home (remove it when done)."
