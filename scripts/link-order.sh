#!/usr/bin/env bash
# Regenerates scripts/link-order.txt: the functions that `evidence hash` and `evidence ingest`
# run, then those that `evidence run` runs for files through the whole pipeline (QED and an
# RFC 3161 TSA from evidence-sandbox, both certificates, an archive to `rclone serve webdav`),
# which the release link (Package.swift, releaseLinkerSettings) places together at the start of
# the code, in that order. The kernel maps a program's code 64 KB around each first touch, so the
# same few thousand functions spread over 27 MB of code cost about 16 MB of memory in
# `ingest`, and 9 MB together; `run`'s, over 30 MB, cost 23 MB before they were listed. Run it
# after large changes to those paths (about a minute here: callgrind runs each 50 times slower):
#   scripts/link-order.sh [path/to/release/evidence]    (evidence-sandbox beside it; rclone)
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

# The pipeline: evidence run under callgrind, its peers natively, twelve files dropped, until
# every item is done; then a clean stop (SIGTERM), on which callgrind writes its profile.
sandbox_bin="$(dirname "$bin")/evidence-sandbox"
command -v rclone >/dev/null || { echo "link-order.sh: needs rclone (apt-get install -y rclone)" >&2; exit 2; }
[ -x "$sandbox_bin" ] || { echo "link-order.sh: needs evidence-sandbox beside $bin" >&2; exit 2; }
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
peers=()
stop_peers() { for p in "${peers[@]}"; do kill -TERM "$p" 2>/dev/null || true; done; rm -rf "$work"; }
trap stop_peers EXIT
pipe="$work/pipe"; mkdir -p "$pipe/drop" "$pipe/rules" "$pipe/dav" "$pipe/src"
"$sandbox_bin" --port 0 --state-dir "$pipe/sandbox" --pending-seconds 0 > "$pipe/sandbox.out" 2> "$pipe/sandbox.log" &
peers+=($!)
for _ in $(seq 100); do grep -q "^listening on " "$pipe/sandbox.out" 2>/dev/null && break; sleep 0.1; done
url=$(sed -n 's/^listening on //p' "$pipe/sandbox.out" | head -1)
[ -n "$url" ] || { echo "link-order.sh: evidence-sandbox did not start: $(tail -3 "$pipe/sandbox.log")" >&2; exit 1; }
curl -sf -o "$pipe/tsa-ca.pem" "$url/tsa/ca.pem"
dav_port=$(free_port)
rclone serve webdav "$pipe/dav" --addr "127.0.0.1:$dav_port" --baseurl /remote.php/dav/files/order \
  --etag-hash SHA1 --user order --pass order-pass --config /dev/null 2> "$pipe/dav.log" &
peers+=($!)
for _ in $(seq 100); do curl -s -o /dev/null -u order:order-pass "http://127.0.0.1:$dav_port/remote.php/dav/files/order/" && break; sleep 0.1; done
(umask 077; printf 'order-pass' > "$pipe/dav.pass")
metrics_port=$(free_port)
cat > "$pipe/config.toml" <<TOML
[metrics]
listen = "127.0.0.1:$metrics_port"
[notaries.qed]
kind = "qed"
base_url = "$url/v1/"
api_key_env = "EVIDENCE_ORDER_QED_KEY"
poll_first = "200ms"
poll_max = "1s"
[notaries.tsa]
kind = "rfc3161"
urls = ["$url/tsa"]
ca_file = "$pipe/tsa-ca.pem"
[archives.dav]
kind = "owncloud"
url = "http://127.0.0.1:$dav_port"
user = "order"
password_file = "$pipe/dav.pass"
etag = "sha1"
TOML
printf 'path = "%s"\nsettle = "0s"\nnotary = ["qed", "tsa"]\narchive = "dav"\nremote_path = "/order/{sha8}-{name}"\n' \
  "$pipe/drop" > "$pipe/rules/drop.toml"
export EVIDENCE_ORDER_QED_KEY=sandbox-key
valgrind --tool=callgrind --demangle=no --callgrind-out-file="$work/cg.run" \
  "$work/evidence" --config "$pipe/config.toml" --home "$pipe/home" run --rules "$pipe/rules" > /dev/null 2> "$work/log.run" &
runpid=$!
for _ in $(seq 1200); do grep -q "initial scan" "$work/log.run" 2>/dev/null && break; sleep 0.1; done
# Twelve files at once (a time-stamp batch of several, group commits of several writes), a
# text file among them; the metrics scraped while they go through, as a monitor would.
printf 'a text file\n' > "$pipe/src/note.txt"
for i in $(seq 1 11); do head -c $((i * 9000)) /dev/urandom > "$pipe/src/clip-$i.bin"; done
mv "$pipe/src"/* "$pipe/drop/"
done_items=0
for _ in $(seq 1200); do
  curl -sf -o /dev/null "http://127.0.0.1:$metrics_port/metrics" || true
  done_items=$("$work/evidence" --config "$pipe/config.toml" --home "$pipe/home" status --json 2>/dev/null \
    | python3 -c 'import json, sys; print(json.load(sys.stdin)["states"].get("done", 0))' 2>/dev/null || echo 0)
  [ "$done_items" -ge 12 ] && break
  sleep 0.5
done
kill -TERM "$runpid"; wait "$runpid" || true
[ "$done_items" -ge 12 ] || { echo "link-order.sh: the pipeline did not finish ($done_items of 12 done):" >&2; tail -5 "$work/log.run" >&2; exit 1; }
[ -s "$work/cg.run" ] || { echo "link-order.sh: callgrind wrote no profile of run" >&2; exit 1; }

functions() { grep -hoE '^c?fn=\([0-9]+\) .*' "$@" | sed -E 's/^c?fn=\([0-9]+\) //' | sort -u; }
nm --defined-only "$work/evidence" | awk '$2 ~ /^[tTwW]$/ {print $3}' | sort -u > "$work/code"
functions "$work"/cg.hash "$work"/cg.ingest-* | comm -12 - "$work/code" > "$work/first"
functions "$work/cg.run" | comm -12 - "$work/code" | comm -23 - "$work/first" > "$work/then"
cat "$work/first" "$work/then" > scripts/link-order.txt
echo "scripts/link-order.txt: $(wc -l < "$work/first") functions of hash and ingest, then $(wc -l < "$work/then") more of run"
