#!/usr/bin/env bash
# Installs the Debian packages the build, tests, demo and benchmarks need: only the
# missing ones, so a second run does nothing (and needs no network).
set -euo pipefail
packages=(
  pkg-config libssl-dev openssl libcurl4-openssl-dev libsqlite3-dev libavformat-dev ffmpeg
  libcairo2-dev inotify-tools poppler-utils qpdf util-linux time bc curl rclone tmux
  zlib1g-dev unzip chromium fonts-dejavu-core prometheus sqlite3 socat iproute2
  owncloud-client-cmd nextcloud-desktop-cmd libpq-dev postgresql python3 python3-venv
  default-jdk-headless libbcpkix-java golang-go golang-golang-x-mod-dev
)
missing=()
for p in "${packages[@]}"; do
  [[ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null)" == *"install ok installed"* ]] || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "deps: installing ${missing[*]}" >&2
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
# moto_server (PyPI moto[server], with boto3) for the S3 store's tests and `make bench`: in a
# venv in the cache folder, not the system python (Debian refuses pip there, PEP 668, and
# --break-system-packages would mix PyPI into files apt owns). EvidenceTesting's S3Server and
# scripts/bench.sh look for it there when moto_server is not on PATH.
moto_venv="${XDG_CACHE_HOME:-$HOME/.cache}/evidence/moto"
if ! command -v moto_server >/dev/null && [ ! -x "$moto_venv/bin/moto_server" ]; then
  echo "deps: installing moto[server] into $moto_venv" >&2
  python3 -m venv "$moto_venv"
  "$moto_venv/bin/pip" install -q 'moto[server]==5.2.1'
fi
# The official Dropbox Python SDK (PyPI dropbox), the peer tests' witness of the Dropbox
# emulation and of our client's calls: its schema checks both (scripts/oracles/dropbox_schema.py)
# and it drives the emulation itself (scripts/oracles/dropbox_sdk_run.py). Pinned: a newer
# SDK knows newer fields, which the strict check would then expect.
dropbox_venv="${XDG_CACHE_HOME:-$HOME/.cache}/evidence/dropbox-sdk"
if ! "$dropbox_venv/bin/python" -c 'import dropbox, sys; sys.exit(dropbox.__version__ != "12.2.4")' 2>/dev/null; then
  echo "deps: installing dropbox==12.2.4 into $dropbox_venv" >&2
  python3 -m venv "$dropbox_venv"
  "$dropbox_venv/bin/pip" install -q 'dropbox==12.2.4'
fi
# The OpenTimestamps reference client (PyPI opentimestamps-client, with python-opentimestamps
# and python-bitcoinlib): `ots info` and scripts/oracles/ots_check.py read our .ots proofs in
# the tests, and the same library drives the sandbox's calendars as a client. Pinned.
ots_venv="${XDG_CACHE_HOME:-$HOME/.cache}/evidence/ots"
if ! "$ots_venv/bin/ots" --version 2>&1 | grep -qx 'v0.7.2'; then
  echo "deps: installing opentimestamps-client==0.7.2 into $ots_venv" >&2
  python3 -m venv "$ots_venv"
  "$ots_venv/bin/pip" install -q 'opentimestamps-client==0.7.2'
fi
command -v swift >/dev/null || { echo "deps: swift is not on PATH (Swift 6.1 or later is needed)" >&2; exit 2; }
