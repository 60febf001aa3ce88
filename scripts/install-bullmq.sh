#!/usr/bin/env bash
# Installs what `make bench-queue` runs BullMQ with: Node and npm from
# Debian when missing, then the BullMQ pinned by bench/bullmq/package-lock.json
# into bench/bullmq/node_modules (npm ci, from the npm registry). Idempotent:
# nothing is fetched when node_modules already matches the lock file.
set -euo pipefail

dir="$(cd "$(dirname "$0")/../bench/bullmq" && pwd)"

if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  sudo=""
  if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq nodejs npm >/dev/null
fi

# npm ci writes node_modules/.package-lock.json; the same lock means the same tree.
installed="$dir/node_modules/.package-lock.json"
if [ -f "$installed" ] && [ "$installed" -nt "$dir/package-lock.json" ]; then
  exit 0
fi
(cd "$dir" && npm ci --no-audit --no-fund --loglevel=error)
echo "bench/bullmq: $(node --version), bullmq $(node -p "require('$dir/node_modules/bullmq/package.json').version"), ioredis $(node -p "require('$dir/node_modules/ioredis/package.json').version")"
