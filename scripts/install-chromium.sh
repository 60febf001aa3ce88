#!/usr/bin/env bash
# Installs Debian's chromium when it is missing: the dashboard's browser test
# (dashboard/browser_test.go) drives it headless through chromedp.
# Idempotent; needs root (or sudo) on Debian 12.
set -euo pipefail

if command -v chromium >/dev/null 2>&1; then
  exit 0
fi

sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi

export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq chromium >/dev/null
chromium --version
