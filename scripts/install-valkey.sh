#!/usr/bin/env bash
# Installs valkey-server 8.0 and valkey-tools from Debian bookworm-backports
# when they are missing. Idempotent; needs root (or sudo) on Debian 12.
set -euo pipefail

if command -v valkey-server >/dev/null 2>&1 && command -v valkey-cli >/dev/null 2>&1; then
  exit 0
fi

sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi

list=/etc/apt/sources.list.d/bookworm-backports.sources
if ! grep -rqs 'bookworm-backports' /etc/apt/sources.list /etc/apt/sources.list.d/; then
  $sudo tee "$list" >/dev/null <<'SRC'
Types: deb
URIs: http://deb.debian.org/debian
Suites: bookworm-backports
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
fi

export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq -t bookworm-backports valkey-server valkey-tools >/dev/null
# The package starts a system service on 6379; the project runs its own servers.
if command -v systemctl >/dev/null 2>&1; then $sudo systemctl disable --now valkey-server >/dev/null 2>&1 || true; fi
$sudo service valkey-server stop >/dev/null 2>&1 || true
valkey-server --version
