#!/usr/bin/env bash
# Installs the Debian packages the build, tests, demo and benchmarks need: only the
# missing ones, so a second run does nothing (and needs no network).
set -euo pipefail
packages=(
  pkg-config libssl-dev openssl libcurl4-openssl-dev libsqlite3-dev libavformat-dev ffmpeg
  libcairo2-dev inotify-tools poppler-utils qpdf util-linux time bc curl rclone tmux
  zlib1g-dev unzip chromium fonts-dejavu-core prometheus sqlite3 socat iproute2
  owncloud-client-cmd nextcloud-desktop-cmd libpq-dev postgresql
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
command -v swift >/dev/null || { echo "deps: swift is not on PATH (Swift 6.1 or later is needed)" >&2; exit 2; }
