#!/usr/bin/env bash
# make bench: performance as ratios against reference tools run in this same script, on the
# same files and in the same page-cache state (each command is run once to warm up, then the
# best, or the median, of N runs counts). Not a test: it prints a table.
#
#   BENCH_SIZE_MB (1024)   size of the big file        BENCH_RSS_MB (4096)  size for the RSS run
#   BENCH_FILES (1000)     small files, BENCH_FILE_KB (100) each            BENCH_RUNS (3)
#   BENCH_STAT (best)      best or median of the runs
#   BENCH_ONLY (all)       rows to run, comma-separated: hash,ingest,digests,rss,small,upload,run,s3,tsa,link,custody
#   BENCH_CUSTODY_EVENTS (1000000) events in the custody log of the custody row
#   BENCH_TSA_FILES (2000) files dropped at once for the batched time-stamp row (tsa)
#   BENCH_LINK_RATE (20mbit), BENCH_LINK_MB (32): the shaped-link row (link; needs root): one
#                          file through a network namespace whose loopback tc shapes to the rate
#                          (run needs small: the burst's reference is the small-file one)
set -euo pipefail
bin=${1:?usage: bench.sh path/to/evidence}
size_mb=${BENCH_SIZE_MB:-1024}
rss_mb=${BENCH_RSS_MB:-4096}
nfiles=${BENCH_FILES:-1000}
file_kb=${BENCH_FILE_KB:-100}
runs=${BENCH_RUNS:-3}
stat=${BENCH_STAT:-best}
only=${BENCH_ONLY:-all}
case "$stat" in best|median) ;; *) echo "BENCH_STAT is best or median" >&2; exit 2 ;; esac
want() { [ "$only" = all ] || [[ ",$only," == *",$1,"* ]]; }
if want run && ! want small; then only="$only,small"; fi
work=$(mktemp -d "${BENCH_DIR:-/var/tmp}/evidence-bench.XXXXXX")
trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT

now() { date +%s.%N; }
# the best (smallest) or the median of the numbers on stdin, one a line, as BENCH_STAT says
pick() {
  if [ "$stat" = median ]; then sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'
  else sort -g | head -1; fi
}
# wall time of $runs runs of "$@" (after one warm-up run), picked
best() {
  local t0 t1
  "$@" >/dev/null 2>&1
  for _ in $(seq "$runs"); do
    t0=$(now); "$@" >/dev/null 2>&1; t1=$(now)
    echo "$t1 - $t0" | bc -l
  done | pick
}
# $runs timed runs (after one warm-up) of a command taking a fresh target path as its last
# argument, picked
best_fresh() {
  local t0 t1 target
  for k in $(seq 0 "$runs"); do
    target="$work/target-$RANDOM$RANDOM"
    t0=$(now); "$@" "$target" >/dev/null 2>&1; t1=$(now)
    chmod -R u+w "$target" 2>/dev/null; rm -rf "$target"
    [ "$k" = 0 ] || echo "$t1 - $t0" | bc -l
  done | pick
}
# peak RSS (MB) of one run of "$@" (GNU time's "Maximum resident set size", in KiB)
peak_rss() { /usr/bin/time -v "$@" 2>&1 >/dev/null | sed -n 's/.*Maximum resident set size (kbytes): *//p' | tail -1 | awk '{printf "%.1f", $1/1024}'; }
fmt() { printf "%.3f" "$1"; }

echo "evidence bench: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), $stat of $runs runs, rows: $only, work dir $work"
big="$work/big.bin"
if want hash || want ingest || want upload || want digests; then
  openssl rand -out "$big" $((size_mb * 1024 * 1024)) 2>/dev/null || head -c $((size_mb * 1024 * 1024)) /dev/urandom > "$big"
fi

# 1. hash vs openssl dgst
if want hash; then
  t_ossl=$(best openssl dgst -sha256 "$big")
  t_hash=$(best "$bin" hash "$big")
  r_hash=$(echo "$t_ossl / $t_hash" | bc -l)
fi

# 2. ingest (one read pass: hash + copy + fsync) vs openssl dgst, then cp + sync
# Each run gets a fresh home; removing the previous one is not timed.
ingest_once() { "$bin" --home "$1" ingest --quiet "$big"; }
ref_once() { openssl dgst -sha256 "$big" >/dev/null && cp "$big" "$1" && sync; }
if want ingest; then
  t_ingest=$(best_fresh ingest_once)
  t_ref=$(best_fresh ref_once)
  r_ingest=$(echo "$t_ingest / $t_ref" | bc -l)
fi

# 2b. several digests (a rule's digests = ["sha256", "sha1", "md5"]): ingest with MD5 and SHA-1
# computed from the same read, in parallel threads, vs `openssl dgst -md5` alone (MD5 is the slowest
# of the three: the others should hide behind it).
digests_once() { "$bin" --home "$1" ingest --quiet --digest md5 --digest sha1 "$big"; }
if want digests; then
  t_digests=$(best_fresh digests_once)
  t_md5=$(best openssl dgst -md5 "$big")
  r_digests=$(echo "$t_digests / $t_md5" | bc -l)
fi

# 3. peak RSS hashing and ingesting a large file (sparse: the content does not matter for memory)
if want rss; then
  huge="$work/huge.bin"
  truncate -s $((rss_mb * 1024 * 1024)) "$huge"
  rss_hash=$(peak_rss "$bin" hash "$huge")
  rss_ingest=$(peak_rss "$bin" --home "$work/home-rss" ingest --quiet "$huge")
  rss_ossl=$(peak_rss openssl dgst -sha256 "$huge")
  rm -rf "$work/home-rss" "$huge"
fi

# 4. many small files, ingested durably (group commit: objects fsynced together, one folder
# fsync and one catalog transaction per batch) vs sha256sum + cp -r + sync of the same files
small="$work/small"
small_once() { "$bin" --home "$1" ingest --quiet "$small"; }
small_ref_once() { sha256sum "$small"/* >/dev/null && cp -r "$small" "$1" && sync; }
if want small || want upload; then
  mkdir -p "$small"
  for i in $(seq -w 1 "$nfiles"); do head -c $((file_kb * 1024)) /dev/urandom > "$small/f$i.bin"; done
fi
if want small; then
  t_small=$(best_fresh small_once)
  t_small_ref=$(best_fresh small_ref_once)
  rate=$(echo "$nfiles / $t_small" | bc -l)
  rate_ref=$(echo "$nfiles / $t_small_ref" | bc -l)
  r_small=$(echo "$rate / $rate_ref" | bc -l)
fi

# 5. upload to a real WebDAV server (rclone serve webdav) vs `rclone copy` to the same server:
# one big file and the small files, 4 at a time each (rclone's default --transfers); evidence's
# upload includes its SHA-1 (sent as OC-Checksum) and a stat after each file.
if want upload; then
  dav="$work/dav"; mkdir -p "$dav"
  dav_port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  rclone serve webdav "$dav" --addr "127.0.0.1:$dav_port" --user bench --pass bench-pass --config /dev/null 2>"$work/dav.log" &
  davpid=$!
  for _ in $(seq 100); do curl -s -o /dev/null -u bench:bench-pass "http://127.0.0.1:$dav_port/" && break; sleep 0.1; done
  (umask 077; printf 'bench-pass' > "$work/dav.pass")
  cat > "$work/dav.toml" <<TOML
[archives.dav]
kind = "owncloud"
url = "http://127.0.0.1:$dav_port"
base_url = "http://127.0.0.1:$dav_port/"
user = "bench"
password_file = "$work/dav.pass"
TOML
  obscured=$(rclone obscure bench-pass)
  rc_copy() { rclone copy "$1" ":webdav:$2" --webdav-url "http://127.0.0.1:$dav_port/" --webdav-user bench --webdav-pass "$obscured" --config /dev/null --transfers 4; }
  ev_put() { local dest=$1; shift; "$bin" --config "$work/dav.toml" --home "$work/put-home" accounts put dav "$@" --to "$dest" --jobs 4 --quiet; }
  # $runs timed uploads of each of two commands, taken in turns (a warm-up of each, then A, B,
  # A, B, ...), each into a fresh remote folder, removed after the run and the disk synced,
  # untimed: every upload starts from the same state. (All of one tool's runs, then all of the
  # other's, let the writeback of one run's 1 GiB slow the next, whichever tool that was.)
  # Prints "A B", each picked.
  remote_pair() {
    local t0 t1 dest k which cmd
    : > "$work/pair.a"; : > "$work/pair.b"
    for k in $(seq 0 "$runs"); do
      for which in a b; do
        if [ "$which" = a ]; then cmd=$1; else cmd=$2; fi
        dest="u$RANDOM$RANDOM"
        t0=$(now); "$cmd" "$dest" >/dev/null 2>&1; t1=$(now)
        [ -n "$(ls -A "$dav/$dest" 2>/dev/null)" ] || { echo "bench: upload into $dest left nothing" >&2; }
        rm -rf "${dav:?}/$dest"; sync
        [ "$k" = 0 ] || echo "$t1 - $t0" | bc -l >> "$work/pair.$which"
      done
    done
    echo "$(pick < "$work/pair.a") $(pick < "$work/pair.b")"
  }
  up_big_ev() { ev_put "$1" "$big"; }
  up_big_rc() { rc_copy "$big" "$1"; }
  up_small_ev() { ev_put "$1" "$small"/*; }
  up_small_rc() { rc_copy "$small" "$1"; }
  read -r t_up_big_ev t_up_big_rc < <(remote_pair up_big_ev up_big_rc)
  # The server's own ceiling for one file: curl's single PUT of the same bytes, nothing else
  # (no checksum, no stat). rclone serve webdav spends about 4.8 s of CPU per GiB received (over
  # 1 of the 2 cores), so no client can send one file faster than this.
  up_big_curl() { curl -sf -u bench:bench-pass -T "$big" "http://127.0.0.1:$dav_port/$1/big.bin" -o /dev/null; }
  mkcol_curl() { curl -sf -u bench:bench-pass -X MKCOL "http://127.0.0.1:$dav_port/$1/" -o /dev/null && up_big_curl "$1"; }
  read -r t_up_big_curl _ < <(remote_pair mkcol_curl up_big_rc)
  read -r t_up_small_ev t_up_small_rc < <(remote_pair up_small_ev up_small_rc)
  kill -TERM "$davpid" 2>/dev/null; wait "$davpid" 2>/dev/null || true
  r_up_big=$(echo "$t_up_big_rc / $t_up_big_ev" | bc -l)
  r_up_small=$(echo "$t_up_small_rc / $t_up_small_ev" | bc -l)
fi
rm -f "$big"

# 6. evidence run: detection latency (close → stored, settle 0) and burst throughput: $runs
# bursts of the same size into the same service (each timed from the first move to the last
# "stored" line), picked
if want run; then
  drop="$work/drop"; rules="$work/rules"; runhome="$work/run-home"; runlog="$work/run.log"
  mkdir -p "$drop" "$rules"
  printf 'path = "%s"\nsettle = "0s"\n' "$drop" > "$rules/bench.toml"
  "$bin" --home "$runhome" run --rules "$rules" --log-format json 2>"$runlog" &
  runpid=$!
  for _ in $(seq 100); do grep -q "initial scan" "$runlog" 2>/dev/null && break; sleep 0.1; done
  # ts of the "stored" log line for a path, as epoch seconds
  stored_at() { local ts; ts=$(grep -F "\"path\":\"$1\"" "$runlog" | grep '"msg":"stored"' | sed -n 's/.*"ts":"\([^"]*\)".*/\1/p' | head -1); [ -n "$ts" ] && date -d "$ts" +%s.%N; }
  lat_n=${BENCH_LATENCY_FILES:-100}
  : > "$work/latencies"
  for i in $(seq "$lat_n"); do
    f="$drop/lat-$i.bin"
    head -c 65536 /dev/urandom > "$f"
    closed=$(now)
    for _ in $(seq 200); do t=$(stored_at "$f") && break; sleep 0.01; done
    echo "($t - $closed) * 1000" | bc -l >> "$work/latencies"
  done
  p50=$(sort -n "$work/latencies" | awk '{a[NR]=$1} END {print a[int((NR+1)*0.50)]}')
  p99=$(sort -n "$work/latencies" | awk '{a[NR]=$1} END {i=int(NR*0.99+0.999); if (i>NR) i=NR; print a[i]}')
  burst="$work/burst-src"
  for k in $(seq "$runs"); do
    mkdir -p "$burst"
    for i in $(seq -w 1 "$nfiles"); do head -c $((file_kb * 1024)) /dev/urandom > "$burst/b$k-$i.bin"; done
    t0=$(now)
    mv "$burst"/* "$drop"/
    for _ in $(seq 1200); do
      [ "$(grep -c '"msg":"stored".*"path":"'"$drop"'/b'"$k"'-' "$runlog")" -ge "$nfiles" ] && break; sleep 0.05
    done
    t_last=$(grep '"msg":"stored".*"path":"'"$drop"'/b'"$k"'-' "$runlog" | sed -n 's/.*"ts":"\([^"]*\)".*/\1/p' | sort | tail -1)
    t1=$(date -d "$t_last" +%s.%N)
    echo "$nfiles / ($t1 - $t0)" | bc -l >> "$work/burst-rates"
  done
  # the best rate is the largest
  if [ "$stat" = median ]; then burst_rate=$(pick < "$work/burst-rates"); else burst_rate=$(sort -g "$work/burst-rates" | tail -1); fi
  r_burst=$(echo "$burst_rate / $rate_ref" | bc -l)
  kill -TERM "$runpid"; wait "$runpid" || true
fi

# The sandbox (its openssl TSA) in folder $1, port chosen by the kernel: sets sandbox_pid and
# sandbox_url once it listens, and saves its CA as $1/ca.pem.
sandbox_up() {
  "$(dirname "$bin")/evidence-sandbox" --state-dir "$1/sandbox" --port 0 --pending-seconds 0 >"$1/sandbox.out" 2>"$1/sandbox.log" &
  sandbox_pid=$!
  for _ in $(seq 100); do grep -q "^listening on " "$1/sandbox.out" 2>/dev/null && break; sleep 0.1; done
  sandbox_url=$(sed -n 's/^listening on //p' "$1/sandbox.out" | head -1)
  curl -sf -o "$1/ca.pem" "$sandbox_url/tsa/ca.pem"
}

# 6b. RFC 4998 batching: BENCH_TSA_FILES small files dropped at once into `evidence run` whose rule
# has one rfc3161 notary (the sandbox's openssl TSA, batch = "2s", the default): the TSA requests
# the sandbox counted against one per file (batch = "0s", the reference), and the time from the
# drop to every item confirmed.
tsa_files=${BENCH_TSA_FILES:-2000}
if want tsa; then
  tsa_dir="$work/tsa"; mkdir -p "$tsa_dir/drop" "$tsa_dir/rules" "$tsa_dir/src"
  sandbox_up "$tsa_dir"; sandboxpid=$sandbox_pid; tsa_url=$sandbox_url
  printf '[notaries.tsa]\nkind = "rfc3161"\nurls = ["%s/tsa"]\nca_file = "%s"\nbatch = "2s"\n' "$tsa_url" "$tsa_dir/ca.pem" > "$tsa_dir/evidence.toml"
  printf 'path = "%s"\nsettle = "0s"\nnotary = ["tsa"]\n' "$tsa_dir/drop" > "$tsa_dir/rules/bench.toml"
  for i in $(seq -w 1 "$tsa_files"); do head -c 1024 /dev/urandom > "$tsa_dir/src/t$i.bin"; done
  "$bin" --config "$tsa_dir/evidence.toml" --home "$tsa_dir/home" run --rules "$tsa_dir/rules" --log-format json 2>"$tsa_dir/run.log" &
  tsapid=$!
  for _ in $(seq 100); do grep -q "initial scan" "$tsa_dir/run.log" 2>/dev/null && break; sleep 0.1; done
  t0=$(now)
  mv "$tsa_dir/src"/* "$tsa_dir/drop"/
  confirmed=0
  for _ in $(seq 3000); do
    confirmed=$("$bin" --config "$tsa_dir/evidence.toml" --home "$tsa_dir/home" status --json 2>/dev/null \
      | python3 -c 'import json,sys; s=json.load(sys.stdin)["states"]; print(sum(s.get(k, 0) for k in ("confirmed", "certified", "archived", "shared", "done")))' 2>/dev/null || echo 0)
    [ "$confirmed" -ge "$tsa_files" ] && break; sleep 0.2
  done
  t_tsa=$(echo "$(now) - $t0" | bc -l)
  tsa_requests=$(curl -sf "$tsa_url/_sandbox/counters" | python3 -c 'import json,sys; print(json.load(sys.stdin)["timestamps"])')
  kill -TERM "$tsapid" "$sandboxpid" 2>/dev/null; wait "$tsapid" "$sandboxpid" 2>/dev/null || true
  tsa_per_10k=$(echo "$tsa_requests * 10000 / $tsa_files" | bc -l)
fi

# 6c. a slow uplink (issue: a 2 GB body-cam video over a station's 20 Mbit/s): one file of
# BENCH_LINK_MB through a network namespace of this script's own whose loopback `tc ... tbf`
# shapes to BENCH_LINK_RATE (MTU 1500 first: with lo's 64 KiB MTU a segment larger than the
# bucket is dropped and the link stalls for reasons of the bench). `rclone serve webdav` and
# both clients run inside it: `evidence accounts put` (one PUT to base_url) vs `rclone copy`, and
# `accounts put --read-back` (the PUT, then the GET that verifies it, as the archive verifies a
# plain WebDAV server: the bytes cross the link twice). The link is the bound, so no warm-up run.
link_rate=${BENCH_LINK_RATE:-20mbit}
link_mb=${BENCH_LINK_MB:-32}
link_row="-"
if want link && { [ "$(id -u)" -ne 0 ] || ! command -v tc >/dev/null || ! command -v ip >/dev/null; }; then
  echo "bench: the link row needs root, ip and tc (ip netns add): skipped" >&2
elif want link; then
  ns="evbench$$"; ldavpid=""
  # the server inside first (it would keep the namespace alive), then the namespace, then files
  trap '[ -z "$ldavpid" ] || kill -TERM "$ldavpid" 2>/dev/null; ip netns del "$ns" 2>/dev/null; chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT
  ip netns add "$ns"
  ip netns exec "$ns" ip link set lo mtu 1500 up
  ip netns exec "$ns" tc qdisc add dev lo root tbf rate "$link_rate" burst 32kb latency 400ms
  link_file="$work/link.bin"; head -c $((link_mb * 1024 * 1024)) /dev/urandom > "$link_file"
  ldav="$work/link-dav"; mkdir -p "$ldav"
  ip netns exec "$ns" rclone serve webdav "$ldav" --addr 127.0.0.1:8080 --user bench --pass bench-pass --config /dev/null 2>"$work/link-dav.log" &
  ldavpid=$!
  for _ in $(seq 100); do ip netns exec "$ns" curl -s -o /dev/null -u bench:bench-pass http://127.0.0.1:8080/ && break; sleep 0.1; done
  (umask 077; printf 'bench-pass' > "$work/link.pass")
  printf '[archives.dav]\nkind = "owncloud"\nurl = "http://127.0.0.1:8080"\nbase_url = "http://127.0.0.1:8080/"\nuser = "bench"\npassword_file = "%s"\n' "$work/link.pass" > "$work/link.toml"
  lobscured=$(rclone obscure bench-pass)
  link_a() { ip netns exec "$ns" "$bin" --config "$work/link.toml" --home "$work/link-home" accounts put dav "$link_file" --to "$1" --quiet; }
  link_b() { ip netns exec "$ns" rclone copy "$link_file" ":webdav:$1" --webdav-url http://127.0.0.1:8080/ --webdav-user bench --webdav-pass "$lobscured" --config /dev/null; }
  link_c() { ip netns exec "$ns" "$bin" --config "$work/link.toml" --home "$work/link-home" accounts put dav "$link_file" --to "$1" --read-back --quiet; }
  : > "$work/link.a"; : > "$work/link.b"; : > "$work/link.c"
  for _ in $(seq "$runs"); do
    for which in a b c; do
      dest="l$RANDOM$RANDOM"
      t0=$(now); "link_$which" "$dest" >/dev/null 2>&1 || echo "bench: link_$which failed" >&2; t1=$(now)
      cmp -s "$link_file" "$ldav/$dest/link.bin" || echo "bench: the link upload ($which) into $dest did not arrive whole" >&2
      rm -rf "${ldav:?}/$dest"
      echo "$t1 - $t0" | bc -l >> "$work/link.$which"
    done
  done
  t_link_ev=$(pick < "$work/link.a"); t_link_rc=$(pick < "$work/link.b"); t_link_rb=$(pick < "$work/link.c")
  kill -TERM "$ldavpid" 2>/dev/null; wait "$ldavpid" 2>/dev/null || true
  ip netns del "$ns"
  rm -f "$link_file"
  link_mbit_ev=$(echo "$link_mb * 8 * 1.048576 / $t_link_ev" | bc -l)
  link_mbit_rb=$(echo "$link_mb * 8 * 1.048576 / $t_link_rb" | bc -l)
  link_mbit_rc=$(echo "$link_mb * 8 * 1.048576 / $t_link_rc" | bc -l)
  link_row=$(printf "%8.1fMb/s %8.1fMb/s %10s" "$link_mbit_ev" "$link_mbit_rc" "$(fmt "$(echo "$t_link_rc / $t_link_ev" | bc -l)")")
fi

# 6d. the custody log at scale (RFC 9162 tree): a home whose log has BENCH_CUSTODY_EVENTS events
# (two ingests, then "accessed" events of the second item appended with python3's sqlite3 and hashlib, chained exactly as
# evidence chains them), anchored once by the sandbox TSA (a checkpoint over all of them). Timed:
# `evidence log verify` (every event re-hashed, the catalog cross-checked, the tree rebuilt and the
# checkpoint's root compared), and a bundle of the item made from that log checked offline
# (`python3 custody/check.py` and `evidence verify DIR --trust`): its proofs have ⌈log₂ n⌉ hashes.
custody_events=${BENCH_CUSTODY_EVENTS:-1000000}
if want custody; then
  cu="$work/custody"; mkdir -p "$cu"
  sandbox_up "$cu"; cusandbox=$sandbox_pid; cu_url=$sandbox_url
  printf '[notaries.tsa]\nkind = "rfc3161"\nurls = ["%s/tsa"]\nca_file = "%s"\n\n[custody]\nanchor_tsa = "tsa"\n' "$cu_url" "$cu/ca.pem" > "$cu/evidence.toml"
  cuev() { "$bin" --config "$cu/evidence.toml" --home "$cu/home" "$@"; }
  head -c 10000 /dev/urandom > "$cu/exhibit.bin"; head -c 10000 /dev/urandom > "$cu/viewed.bin"
  cuev ingest "$cu/exhibit.bin" >/dev/null; cuev ingest "$cu/viewed.bin" >/dev/null
  python3 - "$cu/home" "$custody_events" <<'PY'
import hashlib, sqlite3, sys
home, total = sys.argv[1], int(sys.argv[2])
db = sqlite3.connect(home + "/catalog.sqlite")
seq, prev = db.execute("SELECT seq, hash FROM custody_event ORDER BY seq DESC LIMIT 1").fetchone()
rows = []
at = "2026-01-01T00:00:00.000Z"
for s in range(seq + 1, total + 1):
    details = '{"what":"viewed in the bench (%d)"}' % s
    body = "evidence-custody-v1\n%d\n%s\n2\naccessed\nbench\n%s" % (s, at, details)
    h = hashlib.sha256((prev + "\n" + body).encode()).hexdigest()
    rows.append((s, 2, at, "accessed", "bench", details, prev, h))
    prev = h
with db:
    db.executemany("INSERT INTO custody_event (seq, item_id, at, kind, actor, details, prev_hash, hash) VALUES (?,?,?,?,?,?,?,?)", rows)
open(home + "/custody.head", "w").write("%d %s\n" % (total, prev))
PY
  t0=$(now); cuev log anchor >/dev/null; t_cuanchor=$(echo "$(now) - $t0" | bc -l)
  cu_tsa=$(curl -sf "$cu_url/_sandbox/counters" | python3 -c 'import json,sys; print(json.load(sys.stdin)["timestamps"])')
  cu_events=$(sqlite3 "$cu/home/catalog.sqlite" "SELECT count(*) FROM custody_event")
  t_logverify=$( { /usr/bin/time -f "%e %M" "$bin" --config "$cu/evidence.toml" --home "$cu/home" log verify >"$cu/verify.out"; } 2>&1 | tail -1)
  rss_logverify=$(echo "$t_logverify" | awk '{printf "%.0f", $2/1024}'); t_logverify=$(echo "$t_logverify" | awk '{print $1}')
  grep -q "^✓ custody chain" "$cu/verify.out" || { echo "bench: log verify of the large log failed:" >&2; head -5 "$cu/verify.out" >&2; }
  t0=$(now); cuev bundle 1 -o "$cu/bundle" >/dev/null; t_cubundle=$(echo "$(now) - $t0" | bc -l)
  t0=$(now); (cd "$cu/bundle" && python3 custody/check.py >"$cu/check.out"); t_cucheck=$(echo "$(now) - $t0" | bc -l)
  cuev verify "$cu/bundle" --trust "$cu/ca.pem" >"$cu/bverify.out" || true
  grep -q "✓ custody events in the checkpoint" "$cu/bverify.out" || { echo "bench: the bundle's custody proofs did not verify:" >&2; grep custody "$cu/bverify.out" >&2; }
  cu_proof=$(( $(sed -n '/^$/q;p' "$cu/bundle/custody/1.tlog-proof" | wc -l) - 2 ))
  kill -TERM "$cusandbox" 2>/dev/null; wait "$cusandbox" 2>/dev/null || true
fi

# 7. the S3 store ([store] kind = "s3") against moto_server on loopback: ingest of small files
# and of one big file (spool while hashing, HEAD, PUT or multipart with x-amz-checksum-sha256)
# vs boto3's upload_file of the same files to the same server (timed inside python, without
# its start-up; 4 files at a time as `evidence ingest` does; boto3's own multipart threads for
# the big file). A fresh bucket for every run, so nothing is deduplicated.
s3_files=${BENCH_S3_FILES:-200}
s3_mb=${BENCH_S3_MB:-256}
moto_venv="${XDG_CACHE_HOME:-$HOME/.cache}/evidence/moto"
moto=$(command -v moto_server || true); py=python3
if [ -z "$moto" ] && [ -x "$moto_venv/bin/moto_server" ]; then moto="$moto_venv/bin/moto_server"; py="$moto_venv/bin/python3"; fi
s3_row_small="-"; s3_row_big="-"
if ! want s3; then
  :
elif [ -n "$moto" ]; then
  s3_port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  "$moto" -H 127.0.0.1 -p "$s3_port" >"$work/moto.log" 2>&1 &
  motopid=$!
  for _ in $(seq 100); do curl -s -o /dev/null "http://127.0.0.1:$s3_port/" && break; sleep 0.1; done
  export AWS_ACCESS_KEY_ID=bench-access AWS_SECRET_ACCESS_KEY=bench-secret AWS_DEFAULT_REGION=us-east-1
  s3_small="$work/s3-small"; mkdir -p "$s3_small"
  for i in $(seq -w 1 "$s3_files"); do head -c $((file_kb * 1024)) /dev/urandom > "$s3_small/f$i.bin"; done
  s3_big="$work/s3-big.bin"; head -c $((s3_mb * 1024 * 1024)) /dev/urandom > "$s3_big"
  cat > "$work/s3.py" <<'PY'
import sys, os, time, boto3
from concurrent.futures import ThreadPoolExecutor
from botocore.config import Config
s3 = boto3.client("s3", endpoint_url=sys.argv[1], config=Config(s3={"addressing_style": "path"}, max_pool_connections=16))
bucket = sys.argv[3]
s3.create_bucket(Bucket=bucket)
if sys.argv[2] == "make":
    sys.exit(0)
files = sys.argv[4:]
t0 = time.monotonic()
with ThreadPoolExecutor(4) as pool:
    list(pool.map(lambda f: s3.upload_file(f, bucket, os.path.basename(f)), files))
print(time.monotonic() - t0)
PY
  s3_n=0
  s3_bucket() { s3_n=$((s3_n + 1)); echo "bench-$$-$s3_n"; }
  # best of $runs: evidence ingest into a fresh bucket and home (bucket made untimed)
  s3_ev() {
    local b="" t0 t1 d bucket
    for _ in $(seq $((runs + 1))); do
      bucket=$(s3_bucket); "$py" "$work/s3.py" "http://127.0.0.1:$s3_port" make "$bucket"
      printf '[store]\nkind = "s3"\nendpoint = "http://127.0.0.1:%s"\nbucket = "%s"\naccess_key_env = "AWS_ACCESS_KEY_ID"\nsecret_key_env = "AWS_SECRET_ACCESS_KEY"\n' \
        "$s3_port" "$bucket" > "$work/s3.toml"
      t0=$(now); "$bin" --config "$work/s3.toml" --home "$work/s3-home-$bucket" ingest --quiet "$@" >/dev/null 2>&1; t1=$(now)
      rm -rf "$work/s3-home-$bucket"
      d=$(echo "$t1 - $t0" | bc -l)
      if [ -z "$b" ] || [ "$(echo "$d < $b" | bc -l)" = 1 ]; then b=$d; fi
    done
    echo "$b"
  }
  s3_ref() {
    local b="" d
    for _ in $(seq $((runs + 1))); do
      d=$("$py" "$work/s3.py" "http://127.0.0.1:$s3_port" upload "$(s3_bucket)" "$@")
      if [ -z "$b" ] || [ "$(echo "$d < $b" | bc -l)" = 1 ]; then b=$d; fi
    done
    echo "$b"
  }
  t_s3_small_ev=$(s3_ev "$s3_small"); t_s3_small_ref=$(s3_ref "$s3_small"/*)
  t_s3_big_ev=$(s3_ev "$s3_big"); t_s3_big_ref=$(s3_ref "$s3_big")
  kill -TERM "$motopid" 2>/dev/null; wait "$motopid" 2>/dev/null || true
  s3_row_small=$(printf "%11ss %11ss %10s" "$(fmt "$t_s3_small_ev")" "$(fmt "$t_s3_small_ref")" "$(fmt "$(echo "$t_s3_small_ref / $t_s3_small_ev" | bc -l)")")
  s3_row_big=$(printf "%11ss %11ss %10s" "$(fmt "$t_s3_big_ev")" "$(fmt "$t_s3_big_ref")" "$(fmt "$(echo "$t_s3_big_ref / $t_s3_big_ev" | bc -l)")")
  rm -rf "$s3_small" "$s3_big"
else
  echo "bench: moto_server not found (scripts/deps.sh installs it): S3 rows skipped" >&2
fi

printf "\n%-52s %12s %12s %10s %10s\n" "measure" "evidence" "reference" "ratio" "target"
if want hash; then printf "%-52s %11ss %11ss %10s %10s\n" "hash ${size_mb} MiB vs openssl dgst -sha256 (speed)" "$(fmt "$t_hash")" "$(fmt "$t_ossl")" "$(fmt "$r_hash")" ">= 1.0"; fi
if want ingest; then printf "%-52s %11ss %11ss %10s %10s\n" "ingest ${size_mb} MiB vs openssl dgst + cp + sync (time)" "$(fmt "$t_ingest")" "$(fmt "$t_ref")" "$(fmt "$r_ingest")" "<= 0.75"; fi
if want digests; then printf "%-52s %11ss %11ss %10s %10s\n" "ingest ${size_mb} MiB +MD5+SHA-1 vs openssl dgst -md5 (time)" "$(fmt "$t_digests")" "$(fmt "$t_md5")" "$(fmt "$r_digests")" "<= 1.1"; fi
if want rss; then printf "%-52s %10sMB %10sMB %10s %10s\n" "peak RSS: hash ${rss_mb} MiB (reference: openssl)" "$rss_hash" "$rss_ossl" "-" "<= 24 MB"; fi
if want rss; then printf "%-52s %10sMB %12s %10s %10s\n" "peak RSS: ingest ${rss_mb} MiB" "$rss_ingest" "-" "-" "<= 24 MB"; fi
if want small; then printf "%-52s %9.0f/s %10.0f/s %10s %10s\n" "ingest ${nfiles} x ${file_kb} KB vs sha256sum+cp -r+sync" "$rate" "$rate_ref" "$(fmt "$r_small")" ">= 1000/s"; fi
if want run; then printf "%-52s %10.1fms %12s %10s %10s\n" "run: detection latency close→stored p50 (n=$lat_n)" "$p50" "-" "-" "<= 50 ms"; fi
if want run; then printf "%-52s %10.1fms %12s %10s %10s\n" "run: detection latency close→stored p99" "$p99" "-" "-" "-"; fi
if want run; then printf "%-52s %9.0f/s %10.0f/s %10s %10s\n" "run: burst of ${nfiles} x ${file_kb} KB (same reference)" "$burst_rate" "$rate_ref" "$(fmt "$r_burst")" ">= 1.5"; fi
if want upload; then printf "%-52s %11ss %11ss %10s %10s\n" "upload ${size_mb} MiB to WebDAV vs rclone copy (speed)" "$(fmt "$t_up_big_ev")" "$(fmt "$t_up_big_rc")" "$(fmt "$r_up_big")" ">= 1.15"; fi
if want upload; then printf "%-52s %11ss %11ss %10s %10s\n" "  the server's ceiling: curl -T, one PUT, same file" "$(fmt "$t_up_big_curl")" "$(fmt "$t_up_big_rc")" "$(fmt "$(echo "$t_up_big_rc / $t_up_big_curl" | bc -l)")" "-"; fi
if want upload; then printf "%-52s %11ss %11ss %10s %10s\n" "upload ${nfiles} x ${file_kb} KB to WebDAV vs rclone copy" "$(fmt "$t_up_small_ev")" "$(fmt "$t_up_small_rc")" "$(fmt "$r_up_small")" ">= 1.0"; fi
if want tsa; then printf "%-52s %12s %12s %10s %10s\n" "TSA requests, ${tsa_files} files at once (batch 2s vs 0s)" "$tsa_requests" "$tsa_files" "$(fmt "$(echo "$tsa_requests / $tsa_files" | bc -l)")" "1/window"; fi
if want tsa; then printf "%-52s %12.1f %12s %10s %10s\n" "TSA requests per 10,000 files (batched)" "$tsa_per_10k" "10000" "-" "-"; fi
if want tsa; then printf "%-52s %11ss %12s %10s %10s\n" "drop of ${tsa_files} files to all confirmed (batched)" "$(fmt "$t_tsa")" "-" "-" "-"; fi
if want link; then printf "%-52s %s %10s\n" "upload ${link_mb} MiB over a ${link_rate} link vs rclone copy" "$link_row" ">= 1.0"; fi
if want link && [ "$link_row" != "-" ]; then printf "%-52s %8.1fMb/s %8.1fMb/s %10s %10s\n" "  the same with --read-back (the bytes cross twice)" "$link_mbit_rb" "$link_mbit_rc" "$(fmt "$(echo "$t_link_rc / $t_link_rb" | bc -l)")" "-"; fi
if want custody; then printf "%-52s %11ss %12s %10s %10s\n" "log verify of ${cu_events} custody events (tree + anchor)" "$(fmt "$t_logverify")" "-" "-" "<= 10 s"; fi
if want custody; then printf "%-52s %10sMB %12s %10s %10s\n" "  its peak RSS" "$rss_logverify" "-" "-" "-"; fi
if want custody; then printf "%-52s %11ss %12s %10s %10s\n" "  anchoring it: checkpoint + ${cu_tsa} TSA request(s)" "$(fmt "$t_cuanchor")" "-" "-" "-"; fi
if want custody; then printf "%-52s %10.2fus %12s %10s %10s\n" "  anchoring cost per custody event" "$(echo "$t_cuanchor * 1000000 / $cu_events" | bc -l)" "-" "-" "-"; fi
if want custody; then printf "%-52s %11ss %12s %10s %10s\n" "  bundle from it: write; proofs of ${cu_proof} hashes" "$(fmt "$t_cubundle")" "-" "-" "-"; fi
if want custody; then printf "%-52s %11ss %12s %10s %10s\n" "  bundle from it: python3 custody/check.py (offline)" "$(fmt "$t_cucheck")" "-" "-" "-"; fi
if want s3; then printf "%-52s %s %10s\n" "S3 ingest ${s3_files:-0} x ${file_kb} KB vs boto3 upload_file (speed)" "$s3_row_small" ">= 1.0"; fi
if want s3; then printf "%-52s %s %10s\n" "S3 ingest ${s3_mb:-0} MiB vs boto3 upload_file (speed)" "$s3_row_big" ">= 1.0"; fi
