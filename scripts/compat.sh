#!/usr/bin/env bash
# make compat: provides every server of the matrix (scripts/servers.sh),
# runs each suite that starts servers against each one — every package
# whose tests import internal/valkeytest, so new suites join by themselves —
# and writes docs/COMPATIBILITY.md's results with cmd/emq-compat.
# Usage: scripts/compat.sh [NAME...]   (no NAME: every server)
set -euo pipefail
cd "$(dirname "$0")/.."
out=build/compat
rm -rf "$out" && mkdir -p "$out"

servers=$(bash scripts/servers.sh "$@")
pkgs=$(go list -f '{{.ImportPath}} {{join .TestImports " "}} {{join .XTestImports " "}}' ./... |
  awk '/\/internal\/valkeytest( |$)/ {print $1}')

names=()
while read -r name path; do
  names+=("$name")
  "$path" --version >"$out/$name.version"
  cp "build/servers/$name/origin" "$out/$name.origin"
  echo "compat: $name ($(cat "$out/$name.version"))" >&2
  # A failing suite is recorded, not fatal: every server runs, then the report says.
  EMQ_SERVER=$path go test -count=1 -json -timeout 20m $pkgs >"$out/$name.json" 2>"$out/$name.stderr" </dev/null || true
done <<<"$servers"

commit=$(git rev-parse --short HEAD)
git diff --quiet HEAD -- . || commit+=" (with uncommitted changes)"
go run ./cmd/emq-compat -in "$out" -out docs/COMPATIBILITY.md -commit "$commit" "${names[@]}"
