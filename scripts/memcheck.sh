#!/usr/bin/env bash
# make memcheck: runs the suites that start servers with every server
# under valgrind's memcheck, and fails on a memory error in the server's
# own memory — a read or write outside a block libc's malloc handed out, a
# block freed twice or by the wrong call, a syscall handed such memory —
# or a server that died of a signal (but for one refusal, below). The
# server is valkey 8.1 built with libc's malloc (scripts/servers.sh
# valkey-8.1-libc): memcheck tracks libc's blocks, not jemalloc's.
#
# The tests' own verdicts are not this target's: under valgrind the server
# runs some 20–50× slower, so latency and memory-growth bounds fail; they
# are printed, not judged. Nor are accesses to Go's memory: valgrind takes
# Go's switches between goroutine stacks, which live in its heap, for
# stack frames, and then reports Go's own reads and writes there
# ("in a rw- anonymous segment") — and, from them, values it thinks
# uninitialised (--undef-value-errors=no).
#
# Usage: scripts/memcheck.sh [GO TEST FLAG...] [PACKAGE...]   (default: every
# package whose tests start servers; e.g. -run '^TestClusterFailover$'
# ./client/). TestClusterFailover enqueues EMQ_FAILOVER_JOBS jobs a phase,
# 5,000 here unless set: its 100,000 do not fit its bounds under valgrind.
# Logs: build/memcheck/.
set -euo pipefail
cd "$(dirname "$0")/.."
out=$PWD/build/memcheck
rm -rf "$out" && mkdir -p "$out"

sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
if ! command -v valgrind >/dev/null 2>&1; then
  $sudo apt-get install -y -qq valgrind >/dev/null
fi
server=$(bash scripts/servers.sh valkey-8.1-libc | awk '{print $2}')

# --set-proc-title no: the title overwrites the environment's strings,
# where Go's runtime reads GODEBUG when the module loads. --error-limit=no:
# valgrind stops reporting after 1,000 different errors, and Go's own
# accesses (below, not counted) reach that in a long run — every error
# after it, the server's too, would go unreported.
cat >"$out/server" <<WRAP
#!/bin/sh
GODEBUG=asyncpreemptoff=1,cpu.rdtscp=off exec valgrind --tool=memcheck --undef-value-errors=no --vgdb=no --error-limit=no \\
  --suppressions=$PWD/scripts/memcheck.supp --log-file=$out/log.%p $server "\$@" --set-proc-title no
WRAP
chmod +x "$out/server"

# the arguments as given, each one word (a -run pattern may hold spaces)
args=("$@")
if [ $# -eq 0 ]; then
  mapfile -t args < <(go list -f '{{.ImportPath}} {{join .TestImports " "}} {{join .XTestImports " "}}' ./... |
    awk '/\/internal\/valkeytest( |$)/ {print $1}')
fi
echo "memcheck: go test ${args[*]}, every server under valgrind ($server)" >&2
export EMQ_FAILOVER_JOBS=${EMQ_FAILOVER_JOBS:-5000}
if ! EMQ_SERVER=$out/server go test -count=1 -timeout 90m "${args[@]}" >"$out/test.log" 2>&1 </dev/null; then
  echo "memcheck: tests that failed under valgrind (not judged here):" >&2
  grep -E '^--- FAIL' "$out/test.log" | sed 's/^/  /' >&2 || true
fi

# Each error report is a header line, its stack, then for an access an
# "Address …" line, and ends at a blank one: it counts unless its address
# is Go's memory. One death is the server's own refusal, not a crash: a
# panic loading a nodes.conf it finds corrupt, at startup, which
# internal/valkeytest's TestRestartRepairsAShardIDApart provokes on
# purpose (Valkey 8.0 and 8.1 refuse a file they can write,
# valkey-io/valkey#2171). The server reads nodes.conf before it loads
# any module, and its crash report for that panic may itself read
# through the cluster state it has not made yet (genClusterInfoString):
# a report whose stack passes through clusterLoadConfig, and after one
# the crash report's own (printCrashReport, bugReportEnd: valgrind cuts
# their stacks before the panic's), are listed, not counted.
awk '
  function flush() {
    if (kind != "" && (full ~ /clusterLoadConfig/ || refused && full ~ /printCrashReport|bugReportEnd/)) {
      refused = 1
      printf "%s: %s — the server refusing its nodes.conf at startup, before it loads the module (not counted)\n", file, kind
    } else if (kind != "" && where !~ /in a rw- anonymous segment|on thread [0-9]+.s stack/) {
      bad++
      printf "%s: %s%s\n%s", file, kind, (where != "" ? " — " where : ""), stack
    }
    kind = ""; where = ""; stack = ""; full = ""; depth = 0
  }
  FNR == 1 { flush(); file = FILENAME; servers++; refused = 0 }
  /^==[0-9]+== (Invalid (read|write|free)|Mismatched free|Syscall param|Source and destination overlap|Process terminating)/ {
    flush(); kind = $0; sub(/^==[0-9]+== /, "", kind); next
  }
  kind != "" && /^==[0-9]+==    (at|by) / { full = full $0 "\n"; if (depth++ < 12) stack = stack $0 "\n"; next }
  kind != "" && /^==[0-9]+==  Address / { where = $0; sub(/^==[0-9]+==  /, "", where); next }
  /^==[0-9]+== *$/ { flush() }
  END {
    flush()
    printf "memcheck: %d servers, %d memory errors in server memory\n", servers, bad > "/dev/stderr"
    exit bad > 0
  }
' "$out"/log.*
