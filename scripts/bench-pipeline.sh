#!/usr/bin/env bash
# make bench, part 3: the whole pipeline as users run it, stage by stage.
#
# BENCH_PIPELINE_FILES (1000) × BENCH_FILE_KB (100) dropped at once into `evidence run` whose rule
# has notary = ["qed", "tsa"] (the sandbox's QED at 0 s pending and its openssl TSA, batched
# RFC 4998 time-stamps), both certificates (the QED PDF and ours), and an archive of every file
# to `rclone serve webdav` at ownCloud's path (`/remote.php/dav/files/bench/`, the account
# configured by `url` only, as an ownCloud server is): the configuration users run. No link:
# rclone's server has no OCS share API. The server runs with `--etag-hash SHA1` (its ETags are
# the SHA-1 of each file's bytes, as ownCloud's checksums are) and the account says so
# (`etag = "sha1"`): the PUT's answer proves each copy. Beside it: the same pipeline on an
# account that does not declare it (every copy read back, as on a plain WebDAV server or
# Nextcloud), and the QED-only rule of bench-cluster.sh.
# Against `rclone copy` of the same originals to the same server, alone.
#
# For each run it prints:
#   - wall time from the drop until every item reached each state (ingested, confirmed,
#     certified, archived, done), from `evidence status --json` read every 0.5 s (each read is a
#     process of its own on the same 2 cores: its CPU is printed, the observer's cost);
#   - CPU seconds of each process over the run (evidence run with its children, the sandbox,
#     the WebDAV server), from /proc, and evidence's CPU per item and peak RSS;
#   - requests per item to each sandbox service (its requests.log) and provider operations per
#     item to the archive (evidence's own /metrics: stat, make_folders, upload, download);
#   - catalog writes and catalog transactions per item (/metrics: group commit puts several
#     writes in one transaction).
# BENCH_PERF=DIR also records a call-graph profile of evidence run for each (perf record -g).
# BENCH_SMAPS=DIR also keeps evidence run's /proc/PID/smaps at the end of each, DIR/NAME.smaps:
# its resident memory by mapping (the binary's code, each library, the heap).
# BENCH_JOBS=N sets [workers] jobs (default: sized from the host, two per core).
set -euo pipefail
bindir=${1:?usage: bench-pipeline.sh BIN_DIR (holding evidence and evidence-sandbox)}
bin="$bindir/evidence"; sandbox_bin="$bindir/evidence-sandbox"
nfiles=${BENCH_PIPELINE_FILES:-1000}
file_kb=${BENCH_FILE_KB:-100}
work=$(mktemp -d "${BENCH_DIR:-/var/tmp}/evidence-bench-pipeline.XXXXXX")
pids=()
cleanup() {
  # the runs' own processes (started in a subshell, so their pids are in files)
  for f in "$work"/*.pid; do [ -e "$f" ] && kill -TERM "$(cat "$f")" 2>/dev/null || true; done
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"
}
trap cleanup EXIT
now() { date +%s.%N; }
fmt() { printf "%.2f" "$1"; }
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
# CPU seconds (user + system, with waited-for children) of a process so far
cpu() { awk -v hz="$(getconf CLK_TCK)" '{ print ($14 + $15 + $16 + $17) / hz }' "/proc/$1/stat"; }
echo "evidence bench (pipeline): $(nproc) cores, ${nfiles} x ${file_kb} KB, work dir $work"

"$sandbox_bin" --port 0 --state-dir "$work/sandbox" --pending-seconds 0 >"$work/sandbox.out" 2>"$work/sandbox.log" &
sandboxpid=$!; pids+=("$sandboxpid")
for _ in $(seq 100); do grep -q "^listening on " "$work/sandbox.out" 2>/dev/null && break; sleep 0.1; done
url=$(sed -n 's/^listening on //p' "$work/sandbox.out" | head -1)
[ -n "$url" ] || { echo "bench: evidence-sandbox did not start" >&2; exit 1; }
curl -sf -o "$work/tsa-ca.pem" "$url/tsa/ca.pem"
dav="$work/dav"; mkdir -p "$dav"
dav_port=$(free_port)
rclone serve webdav "$dav" --addr "127.0.0.1:$dav_port" --baseurl /remote.php/dav/files/bench \
  --etag-hash SHA1 --user bench --pass bench-pass --config /dev/null 2>"$work/dav.log" &
davpid=$!; pids+=("$davpid")
davroot="http://127.0.0.1:$dav_port/remote.php/dav/files/bench/"
for _ in $(seq 100); do curl -s -o /dev/null -u bench:bench-pass "$davroot" && break; sleep 0.1; done
(umask 077; printf 'bench-pass' > "$work/dav.pass")
export EVIDENCE_BENCH_QED_KEY=sandbox-key

src="$work/src"; mkdir -p "$src"
for i in $(seq -w 1 "$nfiles"); do head -c $((file_kb * 1024)) /dev/urandom > "$src/p$i.bin"; done

# run NAME NOTARIES [ETAG]: prints "t_ingested t_confirmed t_certified t_archived t_done cpu_ev cpu_sb
# cpu_dav rss_mb rss_anon_mb rss_file_mb qed_req tsa_req stat mkdir upload download" for one run on a fresh home.
run() {
  local name=$1 notaries=$2 etag=${3:-}
  local home="$work/$name-home" rules="$work/$name-rules" drop="$work/$name-drop"
  mkdir -p "$rules" "$drop" "$work/$name-src"
  cp "$src"/* "$work/$name-src/"
  local mport; mport=$(free_port)
  printf 'path = "%s"\nsettle = "0s"\nnotary = [%s]\narchive = "dav"\nremote_path = "/%s/{sha8}-{name}"\n' \
    "$drop" "$notaries" "$name" > "$rules/drop.toml"
  cat > "$work/$name.toml" <<TOML
[metrics]
listen = "127.0.0.1:$mport"
[notaries.qed]
kind = "qed"
base_url = "$url/v1/"
api_key_env = "EVIDENCE_BENCH_QED_KEY"
poll_first = "200ms"
poll_max = "1s"
[notaries.tsa]
kind = "rfc3161"
urls = ["$url/tsa"]
ca_file = "$work/tsa-ca.pem"
[archives.dav]
kind = "owncloud"
url = "http://127.0.0.1:$dav_port"
user = "bench"
password_file = "$work/dav.pass"
TOML
  [ -z "$etag" ] || printf 'etag = "%s"\n' "$etag" >> "$work/$name.toml"
  [ -z "${BENCH_JOBS:-}" ] || printf '[workers]\njobs = %s\n' "$BENCH_JOBS" >> "$work/$name.toml"
  # Each run meets an empty QED: reports of the same files left by the run before would be
  # adopted (a lookup instead of a submission), which would flatter the second run.
  curl -sf -X POST -o /dev/null "$url/_sandbox/reset?reports=true"
  local log_from; log_from=$(wc -l < "$work/sandbox/requests.log" 2>/dev/null || echo 0)
  "$bin" --config "$work/$name.toml" --home "$home" run --rules "$rules" --log-format json 2>"$work/$name.log" >/dev/null &
  local runpid=$!
  echo "$runpid" > "$work/$name-run.pid"
  for _ in $(seq 300); do grep -q "initial scan" "$work/$name.log" 2>/dev/null && break; sleep 0.1; done
  local c_ev0 c_sb0 c_dav0; c_ev0=$(cpu "$runpid"); c_sb0=$(cpu "$sandboxpid"); c_dav0=$(cpu "$davpid")
  # BENCH_PERF=DIR: a call-graph profile of evidence run over the run, DIR/NAME.perf (perf report -i)
  local perfpid=""
  if [ -n "${BENCH_PERF:-}" ]; then
    mkdir -p "$BENCH_PERF"; perf record -F 299 --call-graph dwarf,16384 -p "$runpid" -o "$BENCH_PERF/$name.perf" >/dev/null 2>&1 & perfpid=$!
    echo "$perfpid" > "$work/$name-perf.pid"
  fi
  local t0; t0=$(now)
  mv "$work/$name-src"/* "$drop"/
  # first time every item had reached each state (states counted cumulatively)
  python3 - "$bin" "$work/$name.toml" "$home" "$nfiles" "$t0" > "$work/$name.stages" <<'PY'
import json, resource, subprocess, sys, time
binary, config, home, n, t0 = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), float(sys.argv[5])
order = ["ingested", "verified", "submitted", "confirmed", "certified", "archived", "shared", "done"]
marks = {"ingested": None, "confirmed": None, "certified": None, "archived": None, "done": None}
deadline = time.time() + 1200
while time.time() < deadline:
    try:
        out = subprocess.run([binary, "--config", config, "--home", home, "status", "--json"], capture_output=True, timeout=60).stdout
        states = json.loads(out)["states"]
    except Exception:
        time.sleep(0.5); continue
    now = time.time() - t0
    for mark in marks:
        if marks[mark] is None:
            reached = sum(states.get(s, 0) for s in order[order.index(mark):])
            if reached >= n: marks[mark] = now
    if marks["done"] is not None: break
    if states.get("failed", 0) or states.get("quarantined", 0):
        print("bench: items failed or quarantined: %s" % states, file=sys.stderr); break
    time.sleep(0.5)
# the observer's own CPU: every `evidence status` it ran
used = resource.getrusage(resource.RUSAGE_CHILDREN)
print(" ".join("%.2f" % marks[m] if marks[m] is not None else "-" for m in marks), "%.2f" % (used.ru_utime + used.ru_stime))
PY
  [ -z "$perfpid" ] || { kill -INT "$perfpid"; wait "$perfpid" 2>/dev/null || true; }
  local c_ev1 c_sb1 c_dav1 rss
  c_ev1=$(cpu "$runpid"); c_sb1=$(cpu "$sandboxpid"); c_dav1=$(cpu "$davpid")
  rss=$(awk '/VmHWM/ { printf "%.1f", $2 / 1024 }' "/proc/$runpid/status")
  # what the resident memory is at the end: anonymous (heap, stacks, caches) or file-backed (the binary's pages)
  local rss_anon rss_file
  rss_anon=$(awk '/^RssAnon:/ { printf "%.1f", $2 / 1024 }' "/proc/$runpid/status")
  rss_file=$(awk '/^RssFile:/ { printf "%.1f", $2 / 1024 }' "/proc/$runpid/status")
  [ -z "${BENCH_SMAPS:-}" ] || { mkdir -p "$BENCH_SMAPS"; cp "/proc/$runpid/smaps" "$BENCH_SMAPS/$name.smaps"; }
  local metrics; metrics=$(curl -sf "http://127.0.0.1:$mport/metrics" || true)
  kill -TERM "$runpid" 2>/dev/null || true; wait "$runpid" 2>/dev/null || true
  rm -f "$work/$name-run.pid" "$work/$name-perf.pid"
  op() { echo "$metrics" | awk -v op="$1" -F'[ ]' '$1 ~ /^evidence_provider_request_duration_seconds_count/ && $1 ~ "operation=\""op"\"" { s += $2 } END { print s + 0 }'; }
  local qed tsa
  # what the sandbox was asked, by method and path shape (ids and slugs folded), for the log
  tail -n +"$((log_from + 1))" "$work/sandbox/requests.log" | python3 -c '
import collections, json, re, sys
c = collections.Counter()
ms = collections.Counter()
for line in sys.stdin:
    j = json.loads(line)
    shape = re.sub(r"/reports/[^/]+/", "/reports/SLUG/", re.sub(r"/[0-9a-f]{16,}|/[0-9]+(?=/|$)", "/ID", j["path"].split("?")[0]))
    c[j["method"] + " " + shape] += 1
    ms[j["method"] + " " + shape] += j.get("ms", 0)
for k, v in c.most_common(8): print("  sandbox %-40s %6d requests %8d ms" % (k, v, ms[k]), file=sys.stderr)
' 2>>"$work/$name.requests" || true
  cat "$work/$name.requests" >&2
  qed=$(tail -n +"$((log_from + 1))" "$work/sandbox/requests.log" | grep -c '"path":"/v1/' || true)
  tsa=$(tail -n +"$((log_from + 1))" "$work/sandbox/requests.log" | grep -c '"path":"/tsa' || true)
  local observer; observer=$(awk '{ print $6 }' "$work/$name.stages")
  grep -q -- "-" <<< "$(cut -d' ' -f1-5 "$work/$name.stages")" && { echo "bench: $name did not finish (log: $work/$name.log)" >&2; cat "$work/$name.stages" >&2; }
  counter() { echo "$metrics" | awk -v name="$1" '$1 == name { print $2 + 0; found = 1 } END { if (!found) print 0 }'; }
  echo "$(cut -d' ' -f1-5 "$work/$name.stages") $(echo "$c_ev1 - $c_ev0" | bc -l) $(echo "$c_sb1 - $c_sb0" | bc -l) $(echo "$c_dav1 - $c_dav0" | bc -l) $rss $rss_anon $rss_file $qed $tsa $(op stat) $(op make_folders) $(op upload) $(op download) $(counter evidence_catalog_writes_total) $(counter evidence_catalog_transactions_total) $observer"
}

read -r u_ing u_conf u_cert u_arch u_done u_cev u_csb u_cdav u_rss u_ranon u_rfile u_qed u_tsa u_stat u_mk u_up u_down u_cw u_ct u_obs < <(run users '"qed", "tsa"' sha1)
read -r q_ing q_conf q_cert q_arch q_done q_cev q_csb q_cdav q_rss q_ranon q_rfile q_qed q_tsa q_stat q_mk q_up q_down q_cw q_ct q_obs < <(run qedonly '"qed"' sha1)
read -r b_ing b_conf b_cert b_arch b_done b_cev b_csb b_cdav b_rss b_ranon b_rfile b_qed b_tsa b_stat b_mk b_up b_down b_cw b_ct b_obs < <(run readback '"qed", "tsa"')

obscured=$(rclone obscure bench-pass)
c_dav0=$(cpu "$davpid"); t0=$(now)
rclone copy "$src" ":webdav:rclone-ref" --webdav-url "$davroot" --webdav-user bench --webdav-pass "$obscured" \
  --config /dev/null --transfers 4
t_rc=$(echo "$(now) - $t0" | bc -l); c_rc_dav=$(echo "$(cpu "$davpid") - $c_dav0" | bc -l)
[ "$(ls "$dav/rclone-ref" | wc -l)" -eq "$nfiles" ] || { echo "bench: rclone copy left $(ls "$dav/rclone-ref" | wc -l) files" >&2; exit 1; }

per() { echo "$1 / $nfiles" | bc -l; }
printf "\n%-44s %14s %14s %14s\n" "whole pipeline, ${nfiles} x ${file_kb} KB" "QED + TSA" "QED only" "TSA, read-back"
printf "%-44s %13ss %13ss %13ss\n" "drop → all ingested" "$u_ing" "$q_ing" "$b_ing"
printf "%-44s %13ss %13ss %13ss\n" "drop → all confirmed (every notary)" "$u_conf" "$q_conf" "$b_conf"
printf "%-44s %13ss %13ss %13ss\n" "drop → all certified (both certificates)" "$u_cert" "$q_cert" "$b_cert"
printf "%-44s %13ss %13ss %13ss\n" "drop → all archived (verified copies)" "$u_arch" "$q_arch" "$b_arch"
printf "%-44s %13ss %13ss %13ss\n" "drop → all done" "$u_done" "$q_done" "$b_done"
printf "%-44s %13ss %13ss %13ss\n" "CPU: evidence run (with its children)" "$(fmt "$u_cev")" "$(fmt "$q_cev")" "$(fmt "$b_cev")"
printf "%-44s %12.1fms %12.1fms %12.1fms\n" "CPU: evidence run per item" "$(echo "$u_cev * 1000 / $nfiles" | bc -l)" "$(echo "$q_cev * 1000 / $nfiles" | bc -l)" "$(echo "$b_cev * 1000 / $nfiles" | bc -l)"
printf "%-44s %13ss %13ss %13ss\n" "CPU: the bench's status reads (observer)" "$(fmt "$u_obs")" "$(fmt "$q_obs")" "$(fmt "$b_obs")"
printf "%-44s %13ss %13ss %13ss\n" "CPU: evidence-sandbox (QED, TSA)" "$(fmt "$u_csb")" "$(fmt "$q_csb")" "$(fmt "$b_csb")"
printf "%-44s %13ss %13ss %13ss\n" "CPU: rclone serve webdav" "$(fmt "$u_cdav")" "$(fmt "$q_cdav")" "$(fmt "$b_cdav")"
printf "%-44s %12sMB %12sMB %12sMB\n" "peak RSS of evidence run" "$u_rss" "$q_rss" "$b_rss"
printf "%-44s %12sMB %12sMB %12sMB\n" "RSS at the end: anonymous" "$u_ranon" "$q_ranon" "$b_ranon"
printf "%-44s %12sMB %12sMB %12sMB\n" "RSS at the end: file-backed (the binary)" "$u_rfile" "$q_rfile" "$b_rfile"
printf "%-44s %14.2f %14.2f %14.2f\n" "QED requests per item" "$(per "$u_qed")" "$(per "$q_qed")" "$(per "$b_qed")"
printf "%-44s %14.3f %14.3f %14.3f\n" "TSA requests per item" "$(per "$u_tsa")" "$(per "$q_tsa")" "$(per "$b_tsa")"
printf "%-44s %14.2f %14.2f %14.2f\n" "archive stat operations per item" "$(per "$u_stat")" "$(per "$q_stat")" "$(per "$b_stat")"
printf "%-44s %14.2f %14.2f %14.2f\n" "archive make_folders operations per item" "$(per "$u_mk")" "$(per "$q_mk")" "$(per "$b_mk")"
printf "%-44s %14.2f %14.2f %14.2f\n" "archive uploads per item" "$(per "$u_up")" "$(per "$q_up")" "$(per "$b_up")"
printf "%-44s %14.2f %14.2f %14.2f\n" "archive read-backs per item" "$(per "$u_down")" "$(per "$q_down")" "$(per "$b_down")"
printf "%-44s %14.2f %14.2f %14.2f\n" "catalog writes per item" "$(per "$u_cw")" "$(per "$q_cw")" "$(per "$b_cw")"
printf "%-44s %14.2f %14.2f %14.2f\n" "catalog transactions per item (group commit)" "$(per "$u_ct")" "$(per "$q_ct")" "$(per "$b_ct")"
printf "\n%-52s %10s %10s %10s %10s\n" "measure" "evidence" "rclone" "ratio" "target"
printf "%-52s %9ss %9ss %10s %10s\n" "whole pipeline (QED + TSA) vs rclone copy alone" "$u_done" "$(fmt "$t_rc")" "$(fmt "$(echo "$u_done / $t_rc" | bc -l)")" "<= 0.25"
printf "%-52s %9ss %9ss %10s %10s\n" "whole pipeline (QED + TSA, read-back) vs rclone copy" "$b_done" "$(fmt "$t_rc")" "$(fmt "$(echo "$b_done / $t_rc" | bc -l)")" "-"
printf "%-52s %9ss %9ss %10s %10s\n" "whole pipeline (QED only) vs rclone copy alone" "$q_done" "$(fmt "$t_rc")" "$(fmt "$(echo "$q_done / $t_rc" | bc -l)")" "-"
printf "%-52s %9ss %9ss %10s %10s\n" "CPU of the WebDAV server: pipeline vs rclone copy" "$(fmt "$u_cdav")" "$(fmt "$c_rc_dav")" "$(fmt "$(echo "$u_cdav / $c_rc_dav" | bc -l)")" "-"
