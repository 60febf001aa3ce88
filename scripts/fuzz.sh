#!/usr/bin/env bash
# fuzz.sh TIME — runs every fuzz target of the module for TIME each (a Go
# duration such as 60s, or Nx for N executions), one after the other, and
# stops at the first failure; the failing input lands in the package's
# testdata/fuzz/<Target>/ for `go test` to replay. Used by `make fuzz`.
set -euo pipefail

fuzztime=${1:?usage: scripts/fuzz.sh TIME (e.g. 60s)}
cd "$(dirname "$0")/.."

# The packages with a fuzz target, found in the test sources so that no
# other package's tests get built.
for dir in $(grep -rl --include='*_test.go' '^func Fuzz' . | xargs -n1 dirname | sort -u); do
	for target in $(grep -ho '^func Fuzz[A-Za-z0-9_]*' "$dir"/*_test.go | sed 's/^func //'); do
		echo "== $target ($dir, $fuzztime)"
		go test -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime" "$dir"
	done
done
