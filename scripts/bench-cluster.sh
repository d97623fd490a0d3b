#!/usr/bin/env bash
# make bench, part 2: several workers and several nodes. Prints ratios against references run
# in this same script on the same machine.
#   1. job claims/s (claim + durable completion, one transaction each) on SQLite and on
#      PostgreSQL with 1, 2 and 4 worker processes (evidence-bench claims-work).
#   2. the whole pipeline for BENCH_PIPELINE_FILES × BENCH_FILE_KB (ingest, QED at 0 s pending,
#      certificate, archive to a real WebDAV server: `rclone serve webdav`) with one node on
#      SQLite and with two nodes on PostgreSQL, against `rclone copy` of the same files to the
#      same server alone.
#
#   BENCH_JOBS (2000)  BENCH_PIPELINE_FILES (1000)  BENCH_FILE_KB (100)
set -euo pipefail
bindir=${1:?usage: bench-cluster.sh BIN_DIR (holding evidence, evidence-sandbox, evidence-bench)}
bin="$bindir/evidence"; sandbox_bin="$bindir/evidence-sandbox"; benchbin="$bindir/evidence-bench"
here=$(cd "$(dirname "$0")" && pwd)
jobs=${BENCH_JOBS:-2000}
nfiles=${BENCH_PIPELINE_FILES:-1000}
file_kb=${BENCH_FILE_KB:-100}
work=$(mktemp -d "${BENCH_DIR:-/var/tmp}/evidence-bench-cluster.XXXXXX")
chmod 0711 "$work"  # the PostgreSQL server runs as its own account and must reach $work/pg
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  "$here/pg-temp.sh" stop "$work/pg" || true
  chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"
}
trap cleanup EXIT
now() { date +%s.%N; }
fmt() { printf "%.2f" "$1"; }
echo "evidence bench (cluster): $(nproc) cores, work dir $work"

port=$("$here/pg-temp.sh" start "$work/pg" claims_1 claims_2 claims_4 pipeline)
export EVIDENCE_BENCH_DB_PASSWORD; EVIDENCE_BENCH_DB_PASSWORD=$(cat "$work/pg/password")
pgurl() { echo "postgres://evidence@127.0.0.1:$port/$1"; }

# 1. claims/s: fill the queue, then time k processes emptying it; every job must be run once.
claims() { # claims CATALOG K → claims/s
  local cat=$1 k=$2 t0 t1 total=0 i
  "$benchbin" claims-fill "$cat" "$jobs"
  t0=$(now)
  for i in $(seq "$k"); do "$benchbin" claims-work "$cat" "w$i" > "$work/claims.$i" & done
  wait
  t1=$(now)
  for i in $(seq "$k"); do total=$((total + $(cat "$work/claims.$i"))); done
  [ "$total" -eq "$jobs" ] || { echo "bench: $cat ran $total jobs of $jobs" >&2; exit 1; }
  echo "$jobs / ($t1 - $t0)" | bc -l
}
declare -A c_sqlite c_pg
for k in 1 2 4; do
  c_sqlite[$k]=$(claims "$work/claims-$k.sqlite" "$k")
  c_pg[$k]=$(claims "$(pgurl "claims_$k")" "$k")
  echo "claims with $k worker process(es): SQLite $(fmt "${c_sqlite[$k]}")/s, PostgreSQL $(fmt "${c_pg[$k]}")/s"
done

printf "\n%-52s %12s %12s %10s\n" "measure" "PostgreSQL" "SQLite" "ratio"
for k in 1 2 4; do
  printf "%-52s %10.0f/s %10.0f/s %10s\n" "job claims+completions, $k worker process(es)" "${c_pg[$k]}" "${c_sqlite[$k]}" \
    "$(fmt "$(echo "${c_pg[$k]} / ${c_sqlite[$k]}" | bc -l)")"
done

# 2. the whole pipeline: one node on SQLite, then two nodes on PostgreSQL (one home, as on a
# shared filesystem), against rclone copy of the same files to the same WebDAV server.
"$sandbox_bin" --port 0 --state-dir "$work/sandbox" --pending-seconds 0 >"$work/sandbox.out" 2>"$work/sandbox.log" &
pids+=($!)
for _ in $(seq 100); do grep -q "listening on" "$work/sandbox.out" 2>/dev/null && break; sleep 0.1; done
url=$(sed -n 's/^listening on //p' "$work/sandbox.out" | head -1)
[ -n "$url" ] || { echo "bench: evidence-sandbox did not start" >&2; exit 1; }
dav="$work/dav"; mkdir -p "$dav"
dav_port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
rclone serve webdav "$dav" --addr "127.0.0.1:$dav_port" --user bench --pass bench-pass --config /dev/null 2>"$work/dav.log" &
pids+=($!)
for _ in $(seq 100); do curl -s -o /dev/null -u bench:bench-pass "http://127.0.0.1:$dav_port/" && break; sleep 0.1; done
(umask 077; printf 'bench-pass' > "$work/dav.pass")
export EVIDENCE_BENCH_QED_KEY=sandbox-key

src="$work/pipeline-src"; mkdir -p "$src"
for i in $(seq -w 1 "$nfiles"); do head -c $((file_kb * 1024)) /dev/urandom > "$src/p$i.bin"; done

# pipeline NAME NODES: NODES evidence run processes (1: SQLite; 2: PostgreSQL), the files split
# between their drop folders; seconds from the drop until every item is done.
pipeline() {
  local name=$1 n=$2 home="$work/$1-home" rules="$work/$1-rules" node i
  mkdir -p "$rules"
  for node in $(seq "$n"); do
    mkdir -p "$work/$name-drop$node"
    { printf 'path = "%s"\nsettle = "0s"\nnotary = ["qed"]\narchive = "dav"\nremote_path = "/%s/{sha256}"\n' \
        "$work/$name-drop$node" "$name"
      [ "$n" -eq 1 ] || printf 'nodes = ["node-%s"]\n' "$node"; } > "$rules/drop$node.toml"
    { [ "$n" -eq 1 ] || printf 'node = "node-%s"\n' "$node"
      cat <<TOML
[workers]
jobs = 4
[notaries.qed]
kind = "qed"
base_url = "$url/v1/"
api_key_env = "EVIDENCE_BENCH_QED_KEY"
poll_first = "200ms"
poll_max = "1s"
[archives.dav]
kind = "owncloud"
url = "http://127.0.0.1:$dav_port"
base_url = "http://127.0.0.1:$dav_port/"
user = "bench"
password_file = "$work/dav.pass"
TOML
      [ "$n" -eq 1 ] || printf '[catalog]\nurl = "%s"\npassword_env = "EVIDENCE_BENCH_DB_PASSWORD"\n' "$(pgurl pipeline)"
    } > "$work/$name-node$node.toml"
  done
  local run_pids=()
  for node in $(seq "$n"); do
    "$bin" --config "$work/$name-node$node.toml" --home "$home" run --rules "$rules" --log-format json 2>"$work/$name-node$node.log" &
    run_pids+=($!)
  done
  for node in $(seq "$n"); do
    for _ in $(seq 300); do grep -q "initial scan" "$work/$name-node$node.log" 2>/dev/null && break; sleep 0.1; done
  done
  local t0 t1 done_n=0
  t0=$(now)
  i=0
  for f in "$src"/*; do
    node=$(( i % n + 1 )); i=$((i + 1))
    cp "$f" "$work/$name-drop$node/.tmp-$(basename "$f")" && mv "$work/$name-drop$node/.tmp-$(basename "$f")" "$work/$name-drop$node/$(basename "$f")"
  done
  for _ in $(seq 2400); do
    done_n=$("$bin" --config "$work/$name-node1.toml" --home "$home" status --json 2>/dev/null \
      | python3 -c 'import json,sys; print(json.load(sys.stdin)["states"].get("done", 0))' || echo 0)
    [ "$done_n" -ge "$nfiles" ] && break
    sleep 0.25
  done
  t1=$(now)
  for p in "${run_pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  wait "${run_pids[@]}" 2>/dev/null || true
  [ "$done_n" -ge "$nfiles" ] || { echo "bench: $name finished $done_n of $nfiles items (logs: $work/$name-node*.log)" >&2; exit 1; }
  echo "$t1 - $t0" | bc -l
}
t_one=$(pipeline one 1)
echo "pipeline, one node: $(fmt "$t_one") s"
t_two=$(pipeline two 2)
echo "pipeline, two nodes: $(fmt "$t_two") s"
obscured=$(rclone obscure bench-pass)
t0=$(now)
rclone copy "$src" ":webdav:rclone-ref" --webdav-url "http://127.0.0.1:$dav_port/" --webdav-user bench \
  --webdav-pass "$obscured" --config /dev/null --transfers 4
t1=$(now)
t_rc=$(echo "$t1 - $t0" | bc -l)
[ "$(ls "$dav/rclone-ref" | wc -l)" -eq "$nfiles" ] || { echo "bench: rclone copy left $(ls "$dav/rclone-ref" | wc -l) files" >&2; exit 1; }

printf "\n%-60s %10s %10s %10s\n" "measure (${nfiles} x ${file_kb} KB)" "evidence" "rclone" "ratio"
printf "%-60s %9ss %9ss %10s\n" "whole pipeline, one node (SQLite) vs rclone copy alone" "$(fmt "$t_one")" "$(fmt "$t_rc")" "$(fmt "$(echo "$t_rc / $t_one" | bc -l)")"
printf "%-60s %9ss %9ss %10s\n" "whole pipeline, two nodes (PostgreSQL) vs rclone copy alone" "$(fmt "$t_two")" "$(fmt "$t_rc")" "$(fmt "$(echo "$t_rc / $t_two" | bc -l)")"
printf "%-60s %9.0f/s %9.0f/s\n" "items done per second: one node, two nodes" "$(echo "$nfiles / $t_one" | bc -l)" "$(echo "$nfiles / $t_two" | bc -l)"
