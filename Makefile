# The README's two commands: `make run` and `make test`.
SHELL      := /bin/bash
GO         ?= go
BUILD      := build
MODULE_SO  := $(abspath $(BUILD)/emq.so)
# the module as of the last 0.2 commit: the baseline of make bench-baseline, and
# the node a rollback restarts with in the client's tests
BASELINE_COMMIT := 52bcac7
BASELINE_SO     := $(BUILD)/emq-0.2.so
GOTEST     := $(GO) test -count=1
export EMQ_MODULE := $(MODULE_SO)

.PHONY: build run test unit integration deps valkey chromium compat bullmq bench bench-quick bench-queue bench-queue-quick bench-baseline bench-work bench-cluster failover soak fuzz walk torture memcheck clean

## build: build/emq.so, the module, with the execute bit the server requires
build: $(MODULE_SO)

$(MODULE_SO): $(shell find . -name '*.go' -o -name '*.c' -o -name '*.h' | grep -v _test.go) go.mod
	@mkdir -p $(BUILD)
	$(GO) build -buildmode=c-shared -trimpath -o $(MODULE_SO) ./cmd/emq-module
	@rm -f $(BUILD)/emq.h
	chmod +x $(MODULE_SO)

## valkey: install valkey-server 8.0 from bookworm-backports when missing
valkey:
	@bash scripts/install-valkey.sh

## chromium: Debian's chromium when missing, for the dashboard's browser test (dashboard/browser_test.go)
chromium:
	@bash scripts/install-chromium.sh

deps: valkey chromium
	$(GO) mod download

## run: a server on 127.0.0.1:6379 with the module loaded, in the foreground
run: valkey build
	valkey-server valkey.conf

## test: every test — unit, fuzz seeds, integration against real servers — with Go's race detector
## on the test binaries (the client, the tools, the suites); the module runs in the servers, built as always
## (and 0.2's, built from git, for a rollback's tests)
test: deps build $(BASELINE_SO)
	$(GOTEST) -race -timeout 20m ./...

## compat: every server suite against Valkey 8.0, 8.1, 9.x and Redis 7.0, 8.0 (built from
## Debian's archive under build/servers/ when missing); writes docs/COMPATIBILITY.md
compat: deps build $(BASELINE_SO)
	bash scripts/compat.sh

unit:
	$(GOTEST) $$($(GO) list ./... | grep -v /test)

## bench: every verb side by side with what it replaces, then the whole queue against BullMQ
## (bench-queue); writes docs/PERFORMANCE.md
bench: deps build bench-queue
	$(GO) run ./cmd/emq-bench -module $(MODULE_SO) -out docs/PERFORMANCE.md
	$(GO) run ./cmd/emq-bench -module $(MODULE_SO) -callgrind -out docs/PERFORMANCE.md
	$(GO) run ./cmd/emq-bench -module $(MODULE_SO) -blocking -out docs/PERFORMANCE.md

## bench-quick: the same comparisons, short (a minute or two)
bench-quick: deps build
	$(GO) run ./cmd/emq-bench -module $(MODULE_SO) -quick
	$(GO) run ./cmd/emq-bench -module $(MODULE_SO) -blocking -quick

## bullmq: Node and npm from Debian if missing, then the pinned BullMQ into bench/bullmq/node_modules
bullmq:
	@bash scripts/install-bullmq.sh

## bench-queue: the whole queue against BullMQ on one server (tens of minutes) — jobs/s, server CPU, memory and
## latency per job, then instructions per job under callgrind; writes docs/PERFORMANCE.md
bench-queue: deps build bullmq
	$(GO) run ./cmd/emq-bench -module $(MODULE_SO) -queue -out docs/PERFORMANCE.md
	$(GO) run ./cmd/emq-bench -module $(MODULE_SO) -queue -callgrind -concurrency 8 -out docs/PERFORMANCE.md

## bench-queue-quick: the same, 5,000 jobs a run, no callgrind (some 20 minutes on 2 cores)
bench-queue-quick: deps build bullmq
	$(GO) run ./cmd/emq-bench -module $(MODULE_SO) -queue -quick

## bench-work: the Go benchmark of the worker runner (client.Queue.Work) on a real server, natively and
## without the module: jobs/s, allocations and round trips per job at concurrency 1, 8 and 64 (JOBS per run)
bench-work: deps build
	$(GO) test -run '^$$' -bench BenchmarkWork -benchtime $${JOBS:-20000}x ./client/

## bench-baseline: instructions per call of every v0.1 and lifecycle verb beside version 0.2's module, the same
## operations in the same run, and 0.3's rows (— where 0.2 lacks the verb or the setting) (callgrind; CG_OPS per
## variant, ROWS to pick rows, OUT=docs/PERFORMANCE.md to write its callgrind section); prints the table
BASELINE_ROWS   := ^(ENQUEUE|ENQUEUE of [0-9]+|SCHEDULE|APPEND of [0-9]+|PUBLISH|FAILURES\.INCR|CLAIM|EXTEND|ACK|FAIL|STALLED\.CHECK|STALLED\.CHECK of [0-9]+|REVIVE|REMOVE|SETTLE.*|CLAIM, .*|.*, events on)$$
bench-baseline: deps build $(BASELINE_SO)
	$(GO) run ./cmd/emq-bench -module $(MODULE_SO) -callgrind -baseline $(abspath $(BASELINE_SO)) -cg-ops $${CG_OPS:-2000} -rows '$(or $(ROWS),$(BASELINE_ROWS))' $(if $(OUT),-out $(OUT))

## build/emq-0.2.so: the module as of the last 0.2 commit, built in a temporary worktree under build/
$(BASELINE_SO):
	@mkdir -p $(BUILD)
	@src=$(abspath $(BUILD))/baseline-src; \
	git worktree remove --force $$src 2>/dev/null; rm -rf $$src; \
	git worktree add --force --detach --quiet $$src $(BASELINE_COMMIT) && \
	(cd $$src && $(GO) build -buildmode=c-shared -trimpath -o $(abspath $@) ./cmd/emq-module); status=$$?; \
	git worktree remove --force $$src; rm -f $(basename $@).h; \
	[ $$status -eq 0 ] && chmod +x $@

## bench-cluster: one sharded queue (12 shards) on a 3-primary cluster against one node: jobs/s and each node's
## server CPU per job (JOBS per run, 100000 by default); writes docs/PERFORMANCE.md
bench-cluster: deps build
	$(GO) run ./cmd/emq-bench -module $(MODULE_SO) -cluster -jobs $${JOBS:-100000} -out docs/PERFORMANCE.md

## failover: TestClusterFailover alone — 3 worker processes on a 3+3 cluster across a CLUSTER FAILOVER and a
## primary's SIGKILL, natively and on the scripts (JOBS per phase, 100000 by default, as in make test;
## EMQ_SERVER picks the server)
failover: deps build
	EMQ_FAILOVER_JOBS=$${JOBS:-100000} $(GOTEST) -timeout 30m -v -run '^TestClusterFailover$$' ./client/

## soak: millions of mixed calls; memory must stay flat
soak: deps build
	$(GO) run ./cmd/emq-bench -module $(MODULE_SO) -soak -calls $${CALLS:-10000000} -out docs/PERFORMANCE.md

## fuzz: every fuzz target, long
fuzz:
	bash scripts/fuzz.sh $${FUZZTIME:-60s}

## memcheck: the server suites with every server under valgrind's memcheck (valkey 8.1 built
## with libc's malloc); fails on a memory error in the server's memory (PKGS to pick packages, go test flags
## first: PKGS='-run TestClusterFailover ./client/')
memcheck: deps build
	bash scripts/memcheck.sh $(PKGS)

## walk: the fallback scripts against the verbs on long random walks of a queue's lifecycle
## (WALK_SEEDS walks of WALK_STEPS steps each; make test takes 3 of 250)
walk: deps build
	EMQ_WALK_SEEDS=$${WALK_SEEDS:-40} EMQ_WALK_STEPS=$${WALK_STEPS:-2000} $(GOTEST) -timeout 0 -failfast -v \
		-run '^TestScriptsMatchTheVerbsOnARandomWalk$$' ./client/

## torture: the large live-server torture run
torture: deps build
	EMQ_TORTURE=full $(GOTEST) -timeout 60m -run Torture ./test/...

clean:
	rm -rf $(BUILD)
