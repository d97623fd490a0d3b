#!/usr/bin/env bash
# make demo: the pipeline on embedded defaults. Starts `evidence run` on a temporary watched
# folder, drops samples/ into it the way a capture device would (temp name, then rename),
# waits until every item is done, prints the status table and each item's record, checks
# the store, and stops the service with SIGTERM.
set -euo pipefail
bin=${1:?usage: demo.sh path/to/evidence}
cd "$(dirname "$0")/.."
work=$(mktemp -d /tmp/evidence-demo.XXXXXX)
home="$work/home"; drop="$work/drop"; rules="$work/watch-rules"
mkdir -p "$drop" "$rules"
cat > "$rules/demo.toml" <<TOML
# The demo's watch rule: take files from the drop folder once they are quiet for 500 ms.
path = "$drop"
settle = "500ms"
note = "make demo"
TOML
ev() { "$bin" --home "$home" "$@"; }

echo "== evidence rules check"
ev rules check "$rules"
echo
echo "== evidence run (logs: $work/run.log)"
ev run --rules "$rules" 2>"$work/run.log" &
run=$!
trap 'kill -TERM $run 2>/dev/null || true' EXIT
for _ in $(seq 100); do grep -q "initial scan" "$work/run.log" && break; sleep 0.1; done

count=0
for f in samples/*; do
  name=$(basename "$f")
  cp "$f" "$drop/.$name.part"          # written under a temp name…
  mv "$drop/.$name.part" "$drop/$name" # …and renamed into place when complete
  count=$((count + 1))
done
echo "dropped $count files into $drop; waiting for the pipeline"
for _ in $(seq 300); do
  done_n=$(ev status --json 2>/dev/null | tr -d ' \n' | grep -o '"states":{[^}]*}' | grep -o '"done":[0-9]*' | cut -d: -f2 || true)
  [ "${done_n:-0}" -ge "$count" ] && break
  sleep 0.1
done

echo
echo "== evidence status"
ev status || true
for id in $(seq 1 "$count"); do
  echo
  echo "== evidence show $id"
  ev show "$id"
done
echo
echo "== evidence fsck"
ev fsck
kill -TERM "$run"
wait "$run" && echo "evidence run stopped cleanly (SIGTERM)"
trap - EXIT
echo
echo "Service log:"
sed 's/^/  /' "$work/run.log"
echo
echo "Everything is in $work (remove it when done)."
