#!/usr/bin/env bash
# make demo CLUSTER=2: two `evidence run` nodes sharing one PostgreSQL catalog (a throwaway
# server, scripts/pg-temp.sh) and one S3 bucket with Object Lock (moto_server, an S3 server on
# loopback), each node with its own home and drop folder, notarizing with the sandbox's QED and
# TSA and archiving to a local folder. Drops samples/ into both folders, waits until every item
# is done, prints one status for both nodes, lists the bucket with boto3 (an independent client),
# puts a legal hold on one item, verifies the custody chain both wrote and checks the store
# (re-hashing every object in the bucket); stops everything.
#
# usage: demo-cluster.sh path/to/evidence
set -euo pipefail
bin=${1:?usage: demo-cluster.sh path/to/evidence}
sandbox_bin="$(dirname "$bin")/evidence-sandbox"
cd "$(dirname "$0")/.."
work=$(mktemp -d /tmp/evidence-cluster.XXXXXX)
chmod 0711 "$work"  # the PostgreSQL server runs as its own account and must reach $work/pg
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  ./scripts/pg-temp.sh stop "$work/pg" || true
}
trap cleanup EXIT

echo "== PostgreSQL (a new cluster in $work/pg, on 127.0.0.1)"
port=$(./scripts/pg-temp.sh start "$work/pg" evidence)
echo "listening on 127.0.0.1:$port, database evidence, user evidence (password in $work/pg/password, 0600)"

echo
echo "== S3 server (moto_server on 127.0.0.1; log: $work/s3.log)"
moto=$(command -v moto_server || echo "${XDG_CACHE_HOME:-$HOME/.cache}/evidence/moto/bin/moto_server")
[ -x "$moto" ] || { echo "demo: moto_server is missing (scripts/deps.sh installs it)"; exit 1; }
python=$(dirname "$moto")/python3; [ -x "$python" ] && [[ "$moto" != */shims/* ]] || python=python3
s3_port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$moto" -H 127.0.0.1 -p "$s3_port" >"$work/s3.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do curl -s -o /dev/null "http://127.0.0.1:$s3_port/" && break; sleep 0.1; done
# The keys go to evidence through the environment (access_key_env, secret_key_env), never a file
# argument or the command line; moto accepts any.
export AWS_ACCESS_KEY_ID=demo-access AWS_SECRET_ACCESS_KEY="demo-secret-$RANDOM$RANDOM" AWS_DEFAULT_REGION=us-east-1
boto3() { S3_ENDPOINT="http://127.0.0.1:$s3_port" "$python" -c "import os, sys, boto3
from botocore.config import Config
s3 = boto3.client('s3', endpoint_url=os.environ['S3_ENDPOINT'], config=Config(s3={'addressing_style': 'path'}))
$1" "${@:2}"; }
boto3 "s3.create_bucket(Bucket='evidence-demo', ObjectLockEnabledForBucket=True)"
echo "listening on http://127.0.0.1:$s3_port, bucket evidence-demo (Object Lock on)"

echo
echo "== evidence-sandbox (QED and RFC 3161 TSA; log: $work/sandbox.log)"
"$sandbox_bin" --port 0 --state-dir "$work/sandbox" --pending-seconds 3 >"$work/sandbox.out" 2>"$work/sandbox.log" &
pids+=($!)
for _ in $(seq 100); do grep -q "listening on" "$work/sandbox.out" 2>/dev/null && break; sleep 0.1; done
url=$(sed -n 's/^listening on //p' "$work/sandbox.out" | head -1)
[ -n "$url" ] || { echo "evidence-sandbox did not start:"; cat "$work/sandbox.log"; exit 1; }
curl -sf -o "$work/tsa-ca.pem" "$url/tsa/ca.pem"
echo "listening on $url"

rules="$work/watch-rules"; archive="$work/archive"
mkdir -p "$rules" "$archive"
nodes=(station-1 station-2)
for node in "${nodes[@]}"; do
  mkdir -p "$work/drop-$node"
  # Every node loads every rule (any node runs any rule's jobs); a folder is watched by its node.
  cat > "$rules/$node.toml" <<TOML
path = "$work/drop-$node"
settle = "500ms"
notary = ["qed", "tsa"]
archive = "vault"
remote_path = "evidence/{rule}/{sha8}-{name}"
nodes = ["$node"]
TOML
  cat > "$work/$node.toml" <<TOML
# $node: its own name and home; the shared catalog and store; the same notaries and archive.
node = "$node"
home = "$work/home-$node"
rules = "$rules"

[store]
kind = "s3"
endpoint = "http://127.0.0.1:$s3_port"
bucket = "evidence-demo"
access_key_env = "AWS_ACCESS_KEY_ID"
secret_key_env = "AWS_SECRET_ACCESS_KEY"
object_lock = "governance"
retain = "30d"

[catalog]
url = "postgres://evidence@127.0.0.1:$port/evidence"
password_file = "$work/pg/password"

[workers]
jobs = 2
lease = "30s"

[notaries.qed]
kind = "qed"
base_url = "$url/v1/"
api_key_env = "EVIDENCE_DEMO_QED_KEY"
poll_first = "1s"
poll_max = "3s"

[notaries.tsa]
kind = "rfc3161"
urls = ["$url/tsa"]
ca_file = "$work/tsa-ca.pem"

[archives.vault]
kind = "local"
path = "$archive"
TOML
done
export EVIDENCE_DEMO_QED_KEY=sandbox-key
ev() { "$bin" --config "$work/station-1.toml" "$@"; }

for node in "${nodes[@]}"; do
  echo
  echo "== evidence run on $node (log: $work/$node.log)"
  "$bin" --config "$work/$node.toml" run 2>"$work/$node.log" &
  pids+=($!)
  for _ in $(seq 200); do grep -q "initial scan" "$work/$node.log" && break; sleep 0.1; done
  grep -q "initial scan" "$work/$node.log" || { echo "demo: $node did not start:"; tail -5 "$work/$node.log"; exit 1; }
  echo "started"
done

count=0
for f in samples/*; do
  name=$(basename "$f")
  node=${nodes[$((count % 2))]}
  cp "$f" "$work/drop-$node/.$name.part" && mv "$work/drop-$node/.$name.part" "$work/drop-$node/$name"
  count=$((count + 1))
done
echo
echo "dropped $count files, alternately into $work/drop-station-1 and $work/drop-station-2; waiting until every item is done"
done_n=0
for _ in $(seq 900); do
  done_n=$(ev status --json 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["states"].get("done", 0))' || echo 0)
  [ "${done_n:-0}" -ge "$count" ] && break
  sleep 0.2
done
echo "$done_n of $count items done"

echo
echo "== evidence status   (one catalog: both nodes' items, and what each took in and is running)"
ev status
echo
echo "== the bucket, listed by boto3   (content-addressed keys, checksum and retention as the server keeps them)"
boto3 "
for o in s3.list_objects_v2(Bucket='evidence-demo', Prefix='sha256')['Contents'][:6]:
    h = s3.head_object(Bucket='evidence-demo', Key=o['Key'], ChecksumMode='ENABLED')
    print(o['Key'][:30] + '…', o['Size'], 'bytes, sha256', h.get('ChecksumSHA256', '-'), h.get('ObjectLockMode', '-'), 'until', str(h.get('ObjectLockRetainUntilDate', '-'))[:10])
"
echo
echo "== evidence hold 1 --on   (Object Lock legal hold on item 1's original)"
ev hold 1 --on
echo
echo "== evidence log verify   (one custody chain, appended by both nodes)"
ev log verify
echo
echo "== evidence fsck   (re-hashes every object in the bucket)"
ev fsck
[ "${done_n:-0}" -ge "$count" ] || { echo "demo: only $done_n of $count items are done (logs: $work/station-*.log)"; exit 1; }
echo
echo "demo: done. Work folder (kept): $work"
