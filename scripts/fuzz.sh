#!/usr/bin/env bash
# fuzz.sh TIME — runs every fuzz target of the module for TIME each (a Go
# duration such as 60s, or Nx for N executions), one after the other, and
# stops at the first failure; the failing input lands in the package's
# testdata/fuzz/<Target>/ for `go test` to replay. Used by `make fuzz`.
set -euo pipefail

fuzztime=${1:?usage: scripts/fuzz.sh TIME (e.g. 60s)}
cd "$(dirname "$0")/.."

# inputs counts the inputs a target's corpus directory holds (none: 0).
inputs() { if [ -d "$1" ]; then ls "$1" | wc -l; else echo 0; fi; }

# The packages with a fuzz target, found in the test sources so that no
# other package's tests get built.
for dir in $(grep -rl --include='*_test.go' '^func Fuzz' . | xargs -n1 dirname | sort -u); do
	for target in $(grep -ho '^func Fuzz[A-Za-z0-9_]*' "$dir"/*_test.go | sed 's/^func //'); do
		echo "== $target ($dir, $fuzztime)"
		corpus="$dir/testdata/fuzz/$target"
		before=$(inputs "$corpus")
		log=$(mktemp)
		if go test -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime" "$dir" 2>&1 | tee "$log"; then
			rm -f "$log"
			continue
		fi
		# Go before 1.27 may end a run of a duration with a bare "context
		# deadline exceeded" and no input written: its coordinator's own
		# race at the deadline (go.dev/issue/75804), not a finding.
		after=$(inputs "$corpus")
		if [ "$after" = "$before" ] && grep -qxE '[[:space:]]+context deadline exceeded' "$log"; then
			echo "== $target: Go's race at the fuzz deadline (go.dev/issue/75804), no input written: not a failure"
			rm -f "$log"
			continue
		fi
		rm -f "$log"
		exit 1
	done
done
