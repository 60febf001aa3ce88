// wait.c — blocking verbs: a client kept waiting on a queue's pending key,
// its wake-ups, the timers that wake a queue when a job comes due, and the
// zset events that signal a pending key whoever wrote it. Which client
// waits on which queue is Go's (wait.go); C keeps no state but two counts.
#include <errno.h>
#include <string.h>

#include "api.h"
#include "_cgo_export.h"

int emq_queues_waited;
int emq_timer_sweeping;
// emq_queues_closed counts the queues Go does not hold open to their
// waiters (wait.go): while there are any, on_zset asks Go whether a
// pending set's write signals its waiters.
int emq_queues_closed;

// emq_may_block reports whether the command in ctx may block: not inside
// MULTI/EXEC or a script, nor for a client that may not block.
int emq_may_block(ValkeyModuleCtx *ctx) {
    if (!api.GetContextFlags || !api.BlockClientOnKeys) return 0;
    return !(api.GetContextFlags(ctx) & (CTX_FLAGS_LUA | CTX_FLAGS_MULTI | CTX_FLAGS_DENY_BLOCKING));
}

int emq_selected_db(ValkeyModuleCtx *ctx) { return api.GetSelectedDb(ctx); }

void emq_select_db(ValkeyModuleCtx *ctx, int db) { api.SelectDb(ctx, db); }

// writes_paused reports whether the server pauses writes (CLIENT PAUSE …
// WRITE, FAILOVER, CLUSTER FAILOVER): it still fires timers and serves
// clients blocked on keys, but one write replicated now aborts it.
static int writes_paused(void) { return api.AvoidReplicaTraffic && api.AvoidReplicaTraffic(); }

// offers_gone_keys is whether the server offers a key's waiters a key that
// is gone: Valkey, and Redis from 7.2, offer it only while it exists, so
// the claim that empties a pending set ends the wake-up; Redis 7.0 offers
// it to every waiter all the same, each of whose claims would find
// nothing (and cost a turn).
static int offers_gone_keys;

// keeps_waiters_badly is whether the server mishandles a waiter whose
// wake-up kept it waiting — Redis before 7.2, whose
// serveClientsBlockedOnKeyByModule, for such a waiter, neither puts back
// the client it found current (redis/redis#11012) nor replicates what the
// wake-up wrote (redis/redis#11310), two things 7.2 mended:
//
//   - A command puts back the client it found current as it ends, so a
//     wake-up inside one leaves nothing behind; but a wake-up the server
//     runs before it sleeps — one a queue's timer asked for — leaves the
//     waiter current for good, and once another client's command has
//     freed it (CLIENT KILL, client eviction), the next write the server
//     replicates outside a command reads the freed client and crashes.
//   - What a claim that ran wrote, and the DEL of each key the server
//     found past its expiry as the claim opened it, waits unreplicated
//     until something else replicates; its active-expire cycle, its
//     evictions and its next round of wake-ups assert that nothing waits
//     there, and one in the same pass of the event loop as a wake-up whose
//     claim took nothing (ids with no row dropped, a job sent to dead)
//     crashed the server, with AOF on or a replica.
//
// So there a wake-up keeps its waiter only inside a command, and only if
// it ran no claim (may_keep_waiting); and a queue's timer serves its
// waiters itself rather than wake them (emq_timer_serves_waiters).
static int keeps_waiters_badly;

// emq_timer_serves_waiters is whether a queue's timer serves the queue's
// waiters itself (emq_serve_waiter) rather than signal its pending key:
// where the server keeps waiters badly, a timer's signal would have it
// try every waiter before it sleeps, and each the due jobs are not for
// would be answered nil. Served one by one, first come first served,
// while the pending set holds jobs, the others wait on untouched.
int emq_timer_serves_waiters;

void emq_probe_wakeups(void) {
    int before_7_2 = api.GetServerVersion && api.GetServerVersion() < 0x00070200;
    offers_gone_keys = before_7_2 && api.GetBlockedClientReadyKey;
    keeps_waiters_badly = before_7_2;
    emq_timer_serves_waiters = before_7_2 && api.UnblockClient;
}

// The event loop as the module sees it (on_event_loop): whether it is
// subscribed to it (passes_seen: without it, no pass budget, and no
// before-sleep known), and whether the server is between its before-sleep
// and after-sleep (before_sleep), where Redis before 7.2 runs the wake-ups
// of keys signalled outside a command.
static int passes_seen, before_sleep;

// waking is set while a wake-up's claim runs.
static int waking;

// outside_commands reports whether a wake-up now runs outside any command,
// on a server that keeps waiters badly: before it sleeps — or, where the
// module cannot tell when that is, always.
static int outside_commands(void) { return keeps_waiters_badly && (before_sleep || !passes_seen); }

// may_keep_waiting reports whether a wake-up that took nothing may keep its
// waiter (keeps_waiters_badly): everywhere else, yes; there, inside a
// command, and only if it ran no claim (claim_ran).
static int may_keep_waiting(int claim_ran) { return !keeps_waiters_badly || (!claim_ran && !outside_commands()); }

// gone reports whether the key whose signal woke the client in ctx is
// gone, on a server that offers such a key (else it never is).
static int gone(ValkeyModuleCtx *ctx) {
    if (!offers_gone_keys) return 0;
    ValkeyModuleString *name = api.GetBlockedClientReadyKey(ctx);
    if (!name) return 0;
    ValkeyModuleKey *key = api.OpenKey(ctx, name, OPEN_READ);
    int empty = api.KeyType(key) == EMQ_KEY_EMPTY;
    api.CloseKey(key);
    return empty;
}

// woken runs when the key a client waits on was signalled. While writes
// are paused the client keeps waiting, and its queue's timer looks again
// soon; it keeps waiting, too, when the key is gone.
//
// Where it may not keep its waiter (may_keep_waiting: the claim ran if it
// opened its keys), it answers it nil instead, as at its timeout.
static int woken(ValkeyModuleCtx *ctx, ValkeyModuleString **argv, int argc) {
    uint64_t waiter = (uint64_t)(uintptr_t)api.GetBlockedClientPrivateData(ctx);
    int served = 0;
    uint64_t turns = emq_turns_opened;
    if (writes_paused()) {
        emqWaitPaused(ctx, waiter);
    } else if (!gone(ctx)) {
        waking = 1;
        served = emq_serve_woken(ctx, argv, argc, waiter) == API_OK;
        waking = 0;
    }
    if (served) return API_OK;
    if (may_keep_waiting(emq_turns_opened != turns)) return -1;
    api.ReplyWithNullArray(ctx);
    return API_OK;
}

// serving is the waiter a queue's timer serves itself (emq_serve_waiter),
// while it does; 0 otherwise.
static uint64_t serving;

// timed_out runs on the wait's timeout and on CLIENT UNBLOCK (TIMEOUT):
// nil, as a blocking built-in replies. CLIENT UNBLOCK … ERROR replies the
// server's UNBLOCKED error itself. It runs, too, when a queue's timer
// serves a waiter itself (emq_serve_waiter): then it runs the waiter's
// claim, nil if that takes nothing — the wait is over either way.
static int timed_out(ValkeyModuleCtx *ctx, ValkeyModuleString **argv, int argc) {
    uint64_t waiter = (uint64_t)(uintptr_t)api.GetBlockedClientPrivateData(ctx);
    if (waiter && waiter == serving) {
        if (emq_serve_woken(ctx, argv, argc, waiter) != API_OK) api.ReplyWithNullArray(ctx);
        return API_OK;
    }
    api.ReplyWithNullArray(ctx);
    emqWaitTimedOut(ctx);
    return API_OK;
}

// ended runs once when the wait ends, however it ends: served, timed out,
// unblocked, disconnected or killed.
static void ended(ValkeyModuleCtx *ctx, void *waiter) { emqWaitEnded(ctx, (uint64_t)(uintptr_t)waiter); }

// emq_block keeps the call's client waiting on key k, woken when k is
// signalled, until timeout_ms (0: forever). The waiter, never 0, is what
// the callbacks are given back. The server tries the key's waiters in turn
// while the key exists: the claim that empties a pending set ends the
// wake-up, and nobody behind it runs a claim that would find nothing. (Not
// with BLOCK_UNBLOCK_DELETED: each waiter would be tried as the set went,
// and again as its deletion is signalled.)
ValkeyModuleBlockedClient *emq_block(emq_call *c, int k, long long timeout_ms, uint64_t waiter) {
    return api.BlockClientOnKeys(c->ctx, woken, timed_out, ended, timeout_ms, &c->names[k], 1,
                                 (void *)(uintptr_t)waiter);
}

// emq_serve_waiter has the timer serve waiter bc itself: the server ends
// its wait as at its timeout — at once, calling timed_out, which runs its
// claim (serving) — and, before it sleeps, releases the client.
void emq_serve_waiter(ValkeyModuleBlockedClient *bc, uint64_t waiter) {
    serving = waiter;
    api.UnblockClient(bc, NULL);
    serving = 0;
}

// first_score reads the lowest score of an open sorted set; 0 if it is
// empty or no sorted set.
static int first_score(ValkeyModuleKey *key, double *score) {
    if (api.KeyType(key) != EMQ_KEY_ZSET) return 0;
    if (api.ZsetFirstInScoreRange(key, -1.0 / 0.0, 1.0 / 0.0, 0, 0) != API_OK) return 0;
    ValkeyModuleString *m = api.ZsetRangeCurrentElement(key, score);
    api.ZsetRangeStop(key);
    if (!m) return 0;
    api.FreeString(NULL, m);
    return 1;
}

// emq_has_jobs reports whether sorted set key (in ctx's database) holds
// any member.
int emq_has_jobs(ValkeyModuleCtx *ctx, const char *key, size_t len) {
    ValkeyModuleString *s = api.CreateString(NULL, key, len);
    ValkeyModuleKey *k = api.OpenKey(ctx, s, OPEN_READ);
    double score;
    int found = first_score(k, &score);
    api.CloseKey(k);
    api.FreeString(NULL, s);
    return found;
}

// emq_first_score returns the lowest score of the call's sorted set key k
// as it is now, after the call's writes; +inf if it is empty.
double emq_first_score(emq_call *c, int k) {
    double score;
    return first_score(c->keys[k], &score) ? score : 1.0 / 0.0;
}

static void fired(ValkeyModuleCtx *ctx, void *token) { emqTimerFired(ctx, (uint64_t)(uintptr_t)token); }

// emq_create_timer arms a timer in ctx's database that hands token back.
uint64_t emq_create_timer(ValkeyModuleCtx *ctx, long long period_ms, uint64_t token) {
    return api.CreateTimer(ctx, period_ms, fired, (void *)(uintptr_t)token);
}

void emq_stop_timer(ValkeyModuleCtx *ctx, uint64_t id) { api.StopTimer(ctx, id, NULL); }

// emq_write_refused returns the error the server gives a write to key now
// for its own reasons — NOREPLICAS (min-replicas-to-write unmet), MISCONF
// (writes stopped after a failed save), READONLY, MASTERDOWN — or NULL;
// the caller frees it. A client's call meets it before the module runs; a
// timer and a wake-up, which the server runs outside any command, do not,
// so they ask: a dry run of DEL in script mode, which makes those checks
// (ESPIPE) and runs nothing. A server before Redis 7.2 runs no call dry
// (EBADF): there they do not ask.
ValkeyModuleCallReply *emq_write_refused(ValkeyModuleCtx *ctx, ValkeyModuleString *key) {
    errno = 0;
    ValkeyModuleCallReply *r = api.Call(ctx, "DEL", "SDEs", key);
    if (r && errno == ESPIPE) return r;
    if (r) api.FreeCallReply(r);
    return NULL;
}

// emq_timer_may_sweep reports whether a timer may sweep the queue whose
// pending key is pending and wake its waiters: on a primary that is not
// loading, while writes are not paused, nor refused.
int emq_timer_may_sweep(ValkeyModuleCtx *ctx, const char *pending, size_t len) {
    int flags = api.GetContextFlags(ctx);
    if (!(flags & CTX_FLAGS_PRIMARY) || (flags & (CTX_FLAGS_LOADING | CTX_FLAGS_ASYNC_LOADING)) || writes_paused())
        return 0;
    ValkeyModuleString *key = api.CreateString(NULL, pending, len);
    ValkeyModuleCallReply *refused = emq_write_refused(ctx, key);
    api.FreeString(NULL, key);
    if (!refused) return 1;
    api.FreeCallReply(refused);
    return 0;
}

// emq_signal_ready signals key (in ctx's database) as ready: its waiters
// are woken after the current command, or before the server sleeps.
void emq_signal_ready(ValkeyModuleCtx *ctx, const char *key, size_t len) {
    ValkeyModuleString *s = api.CreateString(NULL, key, len);
    emq_signal_key(ctx, s);
    api.FreeString(NULL, s);
}

// emq_signal_key signals key as ready — but not from a wake-up outside
// any command where the server keeps waiters badly (outside_commands): it
// has tried, or is trying, each waiter of the key in this pass, and a key
// signalled again would have it try those it answered again, each of
// which it would leave its current client.
//
// Nor while a timer that serves its waiters itself sweeps and serves them
// (emq_timer_sweeping, emq_timer_serves_waiters): its writes to a pending
// set would have the server try every waiter before it sleeps.
void emq_signal_key(ValkeyModuleCtx *ctx, ValkeyModuleString *key) {
    if ((waking && outside_commands()) || emq_timer_sweeping) return;
    api.SignalKeyAsReady(ctx, key);
}

// A queue's set key: emq:{<queue>}:<set> (package keys).
static int ends_with(const char *s, size_t len, const char *suffix) {
    size_t n = strlen(suffix);
    return len > 5 + n && memcmp(s, "emq:{", 5) == 0 && memcmp(s + len - n, suffix, n) == 0;
}

// brings reports whether a zset event may have added a member or lowered
// a score: a ZADD (GEOADD's too), a ZINCRBY (or ZADD INCR), or a whole set
// stored by ZUNIONSTORE, ZINTERSTORE, ZDIFFSTORE, ZRANGESTORE, GEOSEARCHSTORE
// or GEORADIUS… STORE. The others (ZREM, ZPOPMIN, ZREMRANGEBY…) only take
// members away.
static int brings(const char *event) {
    static const char *const events[] = {"zadd", "zincr", "zunionstore", "zinterstore", "zdiffstore", "zrangestore",
                                         "geosearchstore", "georadiusstore"};
    for (size_t i = 0; i < sizeof events / sizeof *events; i++)
        if (strcmp(event, events[i]) == 0) return 1;
    return 0;
}

// on_zset sees every sorted-set write, ours or a built-in's: one that
// brings a member to a pending set wakes its waiters (unless Go says the
// queue is closed to them); one to a delayed,
// active or repeats set of a queue with waiters may bring its next due time
// nearer (Go decides).
static int on_zset(ValkeyModuleCtx *ctx, int type, const char *event, ValkeyModuleString *key) {
    (void)type;
    // with nobody waiting on any queue there is nothing to wake or re-arm:
    // an enqueue then pays for this one comparison only
    if (!emq_queues_waited || !brings(event)) return 0;
    size_t len;
    const char *s = api.StringPtrLen(key, &len);
    if (ends_with(s, len, "}:pending")) {
        if (!emq_queues_closed || emqPendingSignal(ctx, (char *)s, len)) emq_signal_key(ctx, key);
    } else if (ends_with(s, len, "}:delayed") || ends_with(s, len, "}:active") || ends_with(s, len, "}:repeats")) {
        ValkeyModuleKey *k = api.OpenKey(ctx, key, OPEN_READ);
        double score;
        int found = first_score(k, &score);
        api.CloseKey(k);
        if (found) emqQueueDue(ctx, (char *)s, len, score);
    }
    return 0;
}

// swapdb_info is valkeymodule.h's ValkeyModuleSwapDbInfoV1: the data of a
// SWAPDB event.
typedef struct {
    uint64_t version;
    int32_t dbnum_first, dbnum_second;
} swapdb_info;

// on_swapdb runs on the main thread after a SWAPDB, never in a forked child
// or from a crash report.
static void on_swapdb(ValkeyModuleCtx *ctx, server_event e, uint64_t sub, void *data) {
    (void)sub;
    if (e.id != EVENT_SWAPDB || !data) return;
    const swapdb_info *si = data;
    emqDatabasesSwapped(ctx, si->dbnum_first, si->dbnum_second);
}

// The server runs every timer that is due, one after another, before it
// reads a client again: a thousand queues due in the same millisecond
// would hold every client for as long as their sweeps and wake-ups take.
// So the queues' timers of one pass of the event loop sweep for a budget,
// from the first one's start (pass_started, 0 before it), and leave the
// rest to later passes (wait.go's backlog) — the server serves its clients
// between. The budget is EMQ_PASS_BUDGET_US, or a quarter of the time the
// server gave its clients since the last pass that left queues for later
// (backlog_since), up to EMQ_PASS_BUDGET_MAX_US: when its passes are long
// (slow commands, heavy pipelines) the queues still get their share of the
// server. The server's before-sleep ends a pass — after it has served the
// waiters the pass's timers woke.
#define EMQ_PASS_BUDGET_US 2000
#define EMQ_PASS_BUDGET_MAX_US 20000
static uint64_t pass_started, pass_budget, backlog_since;
static int pass_left_work;
static uint64_t passes_ended; // the passes that ended since the subscription

// on_event_loop runs on the main thread before the server sleeps and as
// it wakes, never in a forked child or from a crash report; it calls no
// Go.
static void on_event_loop(ValkeyModuleCtx *ctx, server_event e, uint64_t sub, void *data) {
    (void)ctx, (void)data;
    if (e.id != EVENT_EVENTLOOP) return;
    before_sleep = sub == SUBEVENT_EVENTLOOP_BEFORE_SLEEP;
    if (!before_sleep) return;
    passes_ended++;
    if (!pass_started) return;
    backlog_since = pass_left_work ? api.MonotonicMicroseconds() : 0;
    pass_started = 0, pass_left_work = 0;
}

// emq_forget_passes starts a load with no budget until the module
// subscribes to the event loop.
void emq_forget_passes(void) {
    pass_started = 0, pass_budget = 0, backlog_since = 0, pass_left_work = 0, passes_seen = 0, passes_ended = 0;
    before_sleep = 0;
}

// emq_pass returns the number of the event loop's pass under way, from 1;
// 0 on a server that does not tell the module its passes.
uint64_t emq_pass(void) { return passes_seen ? passes_ended + 1 : 0; }

// emq_timer_pass_spent reports whether the queues' timers of this pass of
// the event loop have swept for its budget. The first ask of a pass starts
// it, and is no: each pass sweeps a queue at least. A server that does not
// tell the module its passes has no budget.
int emq_timer_pass_spent(void) {
    if (!passes_seen) return 0;
    uint64_t now = api.MonotonicMicroseconds();
    if (!pass_started) {
        uint64_t share = backlog_since ? (now - backlog_since) / 4 : 0;
        pass_started = now;
        pass_budget = share < EMQ_PASS_BUDGET_US ? EMQ_PASS_BUDGET_US
                      : share > EMQ_PASS_BUDGET_MAX_US ? EMQ_PASS_BUDGET_MAX_US
                                                       : share;
        return 0;
    }
    if (now - pass_started < pass_budget) return 0;
    pass_left_work = 1;
    return 1;
}

// emq_subscribe_queues subscribes to what changes a waiting queue's sets —
// the zset events and SWAPDB — and to the event loop, whose passes bound
// the timers' sweeps.
int emq_subscribe_queues(ValkeyModuleCtx *ctx) {
    if (!api.SubscribeToKeyspaceEvents) return -1;
    if (api.SubscribeToServerEvent && api.SelectDb)
        api.SubscribeToServerEvent(ctx, (server_event){EVENT_SWAPDB, 1}, on_swapdb);
    passes_seen = api.SubscribeToServerEvent && api.MonotonicMicroseconds &&
                  api.SubscribeToServerEvent(ctx, (server_event){EVENT_EVENTLOOP, 1}, on_event_loop) == API_OK;
    return api.SubscribeToKeyspaceEvents(ctx, NOTIFY_ZSET, on_zset);
}

long long emq_now_ms(void) { return api.Milliseconds(); }
