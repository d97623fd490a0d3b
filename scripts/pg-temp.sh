#!/usr/bin/env bash
# A throwaway PostgreSQL server for `make bench` and `make demo CLUSTER=2` (the tests start their
# own from Swift: Support/EvidenceTesting/Support/PostgresServer.swift).
#
#   pg-temp.sh start DIR [DB…]   new cluster in DIR/data on 127.0.0.1, SCRAM password in
#                                DIR/password (0600), the databases DB… made; prints the port
#   pg-temp.sh stop DIR          stops it (the folder stays; remove it yourself)
#
# initdb refuses to run as root: as root the cluster belongs to the `postgres` account (made by
# Debian's postgresql package) and the server runs as that account (setpriv). fsync stays on:
# the benchmarks measure durable commits.
set -euo pipefail
cmd=${1:?usage: pg-temp.sh start|stop DIR [DB…]}
dir=${2:?usage: pg-temp.sh start|stop DIR [DB…]}
shift 2
bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
[ -x "$bin/initdb" ] || { echo "pg-temp: no PostgreSQL server under /usr/lib/postgresql (apt-get install postgresql)" >&2; exit 2; }
as=()
if [ "$(id -u)" -eq 0 ]; then
  id postgres >/dev/null 2>&1 || { echo "pg-temp: running as root needs the postgres account" >&2; exit 2; }
  as=(setpriv --reuid=postgres --regid="$(id -g postgres)" --clear-groups --)
fi
case "$cmd" in
  stop)
    [ -f "$dir/data/postmaster.pid" ] && "${as[@]}" "$bin/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null 2>&1 || true
    ;;
  start)
    mkdir -p "$dir" && chmod 0755 "$dir"
    if [ ${#as[@]} -gt 0 ] && ! "${as[@]}" test -x "$dir"; then
      echo "pg-temp: the postgres account cannot reach $dir (a parent folder is private: chmod o+x it)" >&2; exit 2
    fi
    mkdir -m 0700 "$dir/data" "$dir/sock"
    [ ${#as[@]} -eq 0 ] || chown postgres: "$dir/data" "$dir/sock"
    (umask 077; openssl rand -hex 18 > "$dir/password")
    # initdb reads the password from a file only its account can read, removed right after.
    pwfile=$(mktemp -p "$dir/sock")
    cp "$dir/password" "$pwfile"
    [ ${#as[@]} -eq 0 ] || chown postgres: "$pwfile"
    "${as[@]}" "$bin/initdb" -D "$dir/data" -U evidence --pwfile="$pwfile" --auth=scram-sha-256 -E UTF8 \
      --locale=C.UTF-8 >"$dir/initdb.log" 2>&1 || { rm -f "$pwfile"; echo "pg-temp: initdb failed (see $dir/initdb.log)" >&2; exit 1; }
    rm -f "$pwfile"
    for _ in 1 2 3 4 5; do
      port=$((20000 + RANDOM % 30000))
      if "${as[@]}" "$bin/pg_ctl" -D "$dir/data" -l "$dir/sock/server.log" -w -t 30 start \
           -o "-p $port -k $dir/sock -c listen_addresses=127.0.0.1 -c max_connections=200" >/dev/null 2>&1; then
        for db in "$@"; do
          PGPASSWORD=$(cat "$dir/password") "$bin/psql" -X -q -h 127.0.0.1 -p "$port" -U evidence -d postgres \
            -c "CREATE DATABASE \"$db\"" >/dev/null
        done
        echo "$port"
        exit 0
      fi
    done
    echo "pg-temp: the server did not start (see $dir/sock/server.log)" >&2
    exit 1
    ;;
  *) echo "usage: pg-temp.sh start|stop DIR [DB…]" >&2; exit 2 ;;
esac
