#!/usr/bin/env bash
# make demo: the whole pipeline with no account and no network. Starts evidence-sandbox (a QED
# emulation, an RFC 3161 TSA backed by the real `openssl ts`, and emulations of Dropbox, Box,
# ShareFile and ownCloud) on loopback and `evidence run` on a temporary watched folder; drops
# samples/ into it the way a capture device would (temp name, then rename); waits until every
# item is notarized by both, confirmed, certified, archived (verified by the provider's hash)
# and shared; prints the status table, each item's record and share link; exports an auditor's
# bundle and verifies it with sha256sum -c and openssl ts -verify alone; checks the store;
# stops both with SIGTERM.
#
# usage: demo.sh path/to/evidence [local|dropbox|box|sharefile|owncloud]   (make demo PROVIDER=box)
set -euo pipefail
bin=${1:?usage: demo.sh path/to/evidence [local|dropbox|box|sharefile|owncloud]}
provider=${2:-local}
case "$provider" in local|dropbox|box|sharefile|owncloud) ;; *) echo "demo: unknown provider '$provider' (local, dropbox, box, sharefile or owncloud)"; exit 2;; esac
sandbox_bin="$(dirname "$bin")/evidence-sandbox"
cd "$(dirname "$0")/.."
work=$(mktemp -d /tmp/evidence-demo.XXXXXX)
home="$work/home"; drop="$work/drop"; rules="$work/watch-rules"
mkdir -p "$drop" "$rules" "$work/sandbox"
pids=()
cleanup() { for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done; }
trap cleanup EXIT

echo "== evidence-sandbox (QED, RFC 3161 TSA and the providers' emulations; log: $work/sandbox.log)"
"$sandbox_bin" --port 0 --state-dir "$work/sandbox" --pending-seconds 3 >"$work/sandbox.out" 2>"$work/sandbox.log" &
pids+=($!)
for _ in $(seq 100); do grep -q "listening on" "$work/sandbox.out" 2>/dev/null && break; sleep 0.1; done
url=$(sed -n 's/^listening on //p' "$work/sandbox.out" | head -1)
[ -n "$url" ] || { echo "evidence-sandbox did not start:"; cat "$work/sandbox.log"; exit 1; }
curl -sf -o "$work/tsa-ca.pem" "$url/tsa/ca.pem"
echo "listening on $url"

cat > "$work/evidence.toml" <<TOML
# The demo's config: both notaries point at the local sandbox.
home = "$home"
rules = "$rules"

[notaries.qed]
kind = "qed"
base_url = "$url/v1/"
api_key_env = "EVIDENCE_DEMO_QED_KEY"   # the key is read from this variable, never from the file
poll_first = "1s"
poll_max = "5s"

[notaries.tsa]
kind = "rfc3161"
urls = ["$url/tsa"]
ca_file = "$work/tsa-ca.pem"

[serve]
listen = "127.0.0.1:0"                  # the auditor portal (evidence serve); any free port
token_env = "EVIDENCE_DEMO_PORTAL_TOKEN"
TOML
# The archive account: a local folder, or a sandbox provider with its fixed sandbox
# credentials (secrets in 0600 files, as evidence requires).
mkdir -m 700 "$work/secrets"
secret() { (umask 077; printf '%s' "$2" > "$work/secrets/$1"); }
case "$provider" in
  local) cat >> "$work/evidence.toml" <<TOML

[archives.vault]
kind = "local"
path = "$work/archive"
TOML
    mkdir -p "$work/archive";;
  dropbox) secret dropbox-secret sandbox-dropbox-secret; secret dropbox-refresh sandbox-dropbox-refresh
    cat >> "$work/evidence.toml" <<TOML

[archives.vault]
kind = "dropbox"
app_key = "sandbox-dropbox-key"
app_secret_file = "$work/secrets/dropbox-secret"
refresh_token_file = "$work/secrets/dropbox-refresh"
base_url = "$url/dropbox/api"
upload_url = "$url/dropbox/content"
auth_url = "$url/dropbox/api/oauth2/token"
chunk_size = "4MiB"
TOML
    ;;
  box) secret box-secret sandbox-box-secret
    cat >> "$work/evidence.toml" <<TOML

[archives.vault]
kind = "box"
client_id = "sandbox-box-client"
client_secret_file = "$work/secrets/box-secret"
subject_type = "enterprise"
subject_id = "sandbox-enterprise"
base_url = "$url/box/api/2.0"
upload_url = "$url/box/upload/api/2.0"
auth_url = "$url/box/api/oauth2/token"
TOML
    ;;
  sharefile) secret sf-secret sandbox-sharefile-secret; secret sf-password sandbox-password
    cat >> "$work/evidence.toml" <<TOML

[archives.vault]
kind = "sharefile"
subdomain = "sandbox"
client_id = "sandbox-sharefile-client"
client_secret_file = "$work/secrets/sf-secret"
username = "sandbox@example.org"
password_file = "$work/secrets/sf-password"
base_url = "$url/sharefile/sf/v3"
auth_url = "$url/sharefile/oauth/token"
chunk_size = "1MiB"
TOML
    ;;
  owncloud) secret oc-password sandbox-app-password
    cat >> "$work/evidence.toml" <<TOML

[archives.vault]
kind = "owncloud"
url = "$url/owncloud"
user = "sandbox"
password_file = "$work/secrets/oc-password"
chunk_size = "1MiB"
TOML
    ;;
esac
cat > "$rules/demo.toml" <<TOML
# The demo's watch rule: files quiet for 500 ms are taken, notarized by QED and the TSA,
# archived to the account "vault" and shared by link.
path = "$drop"
settle = "500ms"
notary = ["qed", "tsa"]
name = "{name}"
note = "make demo"
archive = "vault"
remote_path = "evidence/{rule}/{yyyy}/{mm}/{sha8}-{name}"

[share]
access = "open"
expires_in = "30d"
TOML
export EVIDENCE_DEMO_QED_KEY=sandbox-key
export EVIDENCE_DEMO_PORTAL_TOKEN="demo-$RANDOM$RANDOM"
ev() { "$bin" --config "$work/evidence.toml" "$@"; }

echo
echo "== evidence doctor   (archive provider: $provider; the home is made by the first run)"
ev doctor || { echo "demo: evidence doctor found a problem"; exit 1; }
echo
echo "== evidence rules check"
ev rules check
echo
echo "== evidence run (logs: $work/run.log)"
# Started directly, not through ev(): a backgrounded function is a subshell, and $! would be
# its PID, so the SIGTERM below would leave evidence itself running.
"$bin" --config "$work/evidence.toml" run 2>"$work/run.log" &
run=$!
pids+=("$run")
for _ in $(seq 100); do grep -q "initial scan" "$work/run.log" && break; sleep 0.1; done

count=0
for f in samples/*; do
  name=$(basename "$f")
  cp "$f" "$drop/.$name.part"          # written under a temp name…
  mv "$drop/.$name.part" "$drop/$name" # …and renamed into place when complete
  count=$((count + 1))
done
echo "dropped $count files into $drop; waiting for notarization (QED confirms after ~3 s here) and the archive"

done_n=0
for _ in $(seq 600); do
  done_n=$(ev status --json 2>/dev/null | tr -d ' \n' | grep -o '"states":{[^}]*}' | grep -o '"done":[0-9]*' | cut -d: -f2 || true)
  [ "${done_n:-0}" -ge "$count" ] && break
  sleep 0.1
done
echo "$done_n of $count items done"

echo
echo "== evidence status"
ev status || true
for id in $(seq 1 "$count"); do
  echo
  echo "== evidence show $id"
  ev show "$id"
done

echo
echo "== share links (evidence archive ITEM: already archived, so it only reports)"
for id in $(seq 1 "$count"); do ev archive "$id" | grep -E '^(item|link|  note)' || true; done

echo
tokens=$(curl -sf "$url/_sandbox/counters" | python3 -c 'import json,sys; print(json.load(sys.stdin).get("timestamps", "?"))' || echo "?")
echo "== time-stamps: the TSA issued $tokens token(s) for $count items (batch = \"2s\": one per window, RFC 4998 records)"

echo
echo "== evidence bundle 1 -o $work/bundle   (what an auditor takes away)"
ev bundle 1 -o "$work/bundle"
echo
echo "== offline, with standard tools only:"
(
  cd "$work/bundle"
  echo "\$ sha256sum -c SHA256SUMS"; sha256sum -c SHA256SUMS
  original=$(ls original/)
  # The TSA's CA as fetched from the TSA (the sandbox's /tsa/ca.pem), never the bundle's copy.
  if [ -f proofs/tsa.ers ]; then
    # Batched (RFC 4998): the token is over the batch's hash-tree root, which the file leads to.
    echo "\$ python3 proofs/tsa.root.py 'original/$original'"
    root=$(python3 proofs/tsa.root.py "original/$original"); echo "$root"
    echo "\$ openssl ts -verify -digest $root -token_in -in proofs/tsa.tst -CAfile $work/tsa-ca.pem -untrusted proofs/tsa-tsa.crt"
    openssl ts -verify -digest "$root" -token_in -in proofs/tsa.tst -CAfile "$work/tsa-ca.pem" -untrusted proofs/tsa-tsa.crt 2>/dev/null
  else
    echo "\$ openssl ts -verify -data 'original/$original' -in proofs/tsa.tsr -CAfile $work/tsa-ca.pem -untrusted proofs/tsa-tsa.crt"
    openssl ts -verify -data "original/$original" -in proofs/tsa.tsr -CAfile "$work/tsa-ca.pem" -untrusted proofs/tsa-tsa.crt 2>/dev/null
  fi
)
echo
echo "== evidence verify $work/bundle --trust $work/tsa-ca.pem   (the TSA's CA from the TSA; the bundle's own is never trusted)"
ev verify "$work/bundle" --trust "$work/tsa-ca.pem"
echo
echo "== a case and its disclosure package: evidence case create/add, disclose, verify DIR"
ev case create demo-case --title "Demo: every file of the drop folder" >/dev/null
ev case add demo-case --rule demo
ev disclose demo-case -o "$work/disclosure" -q
ev verify "$work/disclosure" --trust "$work/tsa-ca.pem" | tail -1
ev declare --case demo-case --custodian "Demo Custodian" -o "$work/declaration.pdf"
echo
echo "== evidence fsck"
ev fsck
echo
echo "== evidence serve   (the auditor portal, read-only; bearer token from \$EVIDENCE_DEMO_PORTAL_TOKEN)"
"$bin" --config "$work/evidence.toml" serve >"$work/serve.out" 2>"$work/serve.log" &
serve=$!; pids+=("$serve")
for _ in $(seq 100); do grep -q "listening on" "$work/serve.out" 2>/dev/null && break; sleep 0.1; done
portal=$(sed -n 's/^listening on //p' "$work/serve.out" | head -1)
if [ -n "$portal" ]; then
  auth=(-H "Authorization: Bearer $EVIDENCE_DEMO_PORTAL_TOKEN")
  echo "$portal  (status page, then item 1's page, as text)"
  curl -sf "${auth[@]}" "${portal}status" | sed -e '/<style/,/<\/style>/d' -e 's/<[^>]*>/ /g' -e 's/  */ /g' \
    | grep -E '[A-Za-z0-9]' | sed -n '1,14p' | sed 's/^/  /'
  code=$(curl -s -o "$work/item-1.html" -w '%{http_code}' "${auth[@]}" "${portal}items/1")
  echo "  GET /items/1 → HTTP $code, $(wc -c < "$work/item-1.html") bytes; GET /items/1/bundle.zip → HTTP $(curl -s -o "$work/bundle-1.zip" -w '%{http_code}' "${auth[@]}" "${portal}items/1/bundle.zip")"
  echo "  without the token: HTTP $(curl -s -o /dev/null -w '%{http_code}' "${portal}status")"
else
  echo "evidence serve did not start:"; cat "$work/serve.log"
fi
kill -TERM "$serve" 2>/dev/null || true
kill -TERM "$run"
wait "$run" && echo "evidence run stopped cleanly (SIGTERM)"
echo
# The service's log is kept whole in the work folder; here only what needs a look.
problems=$(grep -ciE '"level":"(warning|error|critical)"|\b(warning|error|critical)\b' "$work/run.log" || true)
echo "Service log: $(wc -l < "$work/run.log") lines in $work/run.log; $problems warning/error line(s)$([ "$problems" -gt 0 ] && echo ', the first:')"
grep -iE '"level":"(warning|error|critical)"|\b(warning|error|critical)\b' "$work/run.log" | head -5 | cut -c1-160 | sed 's/^/  /'
echo
# One screen: what the demo made and where it is.
ev status --json 2>/dev/null | python3 -c '
import json, sys
s = json.load(sys.stdin)
states = ", ".join(f"{k} {v}" for k, v in sorted(s["states"].items()) if v)
proofs = ", ".join(f"{n}: {p['"'"'confirmed'"'"']} confirmed" for n, p in sorted(s["proofs"].items()))
print("== Summary")
print(f"  items        {s['"'"'items'"'"']} ({states}), {s['"'"'custodyEvents'"'"']} custody events")
print(f"  proofs       {proofs or '"'"'none'"'"'}")
print(f"  share links  {len(s['"'"'links'"'"'])}" + (f", e.g. {s['"'"'links'"'"'][0]['"'"'url'"'"']}" if s["links"] else ""))
' 2>/dev/null || ev status | sed -n '1,12p'
echo "  bundle       $work/bundle (sha256sum -c SHA256SUMS; openssl ts -verify)"
echo "  disclosure   $work/disclosure (case demo-case: index.pdf, custody.csv, SHA256SUMS); declaration $work/declaration.pdf"
if [ "$provider" = local ]; then echo "  archive      $work/archive (account vault, a local folder)"
else echo "  archive      account vault: the sandbox's $provider emulation (its files under $work/sandbox)"; fi
echo "  portal       evidence --config $work/evidence.toml serve   (token in \$EVIDENCE_DEMO_PORTAL_TOKEN)"
echo "  certificate  evidence --config $work/evidence.toml cert 1 -o cert.pdf"
echo "  everything   $work (remove it when done)"
[ "${done_n:-0}" -ge "$count" ] || { echo "demo: only $done_n of $count items reached done"; exit 1; }
