// apply.c — making a plan's writes with the key API, each replicated,
// notified and signalled as the built-in it stands for, then replying.
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "api.h"

ValkeyModuleString *emq_resolve(emq_call *c, uint32_t r, const char *scratch, const emq_span *spans);

int emq_fault_write;

// The built-ins the module writes as — each write replicated under the
// command's name (below) — and calls (xack, call.c's reads and dry runs).
static const char *const builtins[] = {"HSET", "HDEL", "ZADD",     "ZREM",     "DEL",   "PEXPIREAT",
                                       "SET",  "XADD", "XACK",     "XPENDING", "XINFO", "EXISTS"};

// emq_unknown_builtin returns the first of the built-ins the module writes
// as or calls that the server does not know by its name — renamed or
// disabled by rename-command — or NULL. Replicas and the AOF would miss
// every write replicated under that name, and a call through it fail with
// the plan half made, so the module is not loaded there. Each is called
// with no argument: a name the server knows is refused for its arity
// (EINVAL), one it does not for itself (ENOENT); neither runs.
const char *emq_unknown_builtin(ValkeyModuleCtx *ctx) {
    for (size_t i = 0; i < sizeof builtins / sizeof *builtins; i++) {
        errno = 0;
        ValkeyModuleCallReply *r = api.Call(ctx, builtins[i], "");
        if (r) api.FreeCallReply(r);
        if (errno == ENOENT) return builtins[i];
    }
    return NULL;
}

// Decimal text without snprintf, which costs more than the write it formats.
static const char digit_pairs[] =
    "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
    "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
    "8081828384858687888990919293949596979899";

static int fmt_u64(char *buf, uint64_t v) {
    char tmp[20];
    int i = 20;
    while (v >= 100) {
        const char *p = digit_pairs + 2 * (v % 100);
        v /= 100;
        tmp[--i] = p[1];
        tmp[--i] = p[0];
    }
    if (v >= 10) {
        tmp[--i] = digit_pairs[2 * v + 1];
        tmp[--i] = digit_pairs[2 * v];
    } else {
        tmp[--i] = (char)('0' + v);
    }
    memcpy(buf, tmp + i, (size_t)(20 - i));
    return 20 - i;
}

static int fmt_i64(char *buf, long long v) {
    if (v >= 0) return fmt_u64(buf, (uint64_t)v);
    buf[0] = '-';
    return 1 + fmt_u64(buf + 1, 0 - (uint64_t)v);
}

// A stream ID's text, formatted once for both the replicated XADD and the reply.
typedef struct {
    char s[47];
    uint8_t len;
} id_text;

// The strings of one write, on the stack when they are few.
#define INLINE_STRS 64

typedef struct {
    emq_call *c;
    const emq_plan *p;
    // the events appends still to make: the last one trims (xadd_auto)
    int appends_left;
    ValkeyModuleString *inline_strs[INLINE_STRS];
} applier;

// strs resolves op's refs, and then count more strings from argv at first,
// into an array the caller frees with free_strs.
static ValkeyModuleString **strs(applier *a, const emq_op *op, size_t more, size_t first) {
    size_t n = (size_t)op->n + more;
    ValkeyModuleString **f = n <= INLINE_STRS ? a->inline_strs : api.Alloc(sizeof(*f) * n);
    for (int i = 0; i < op->n; i++) f[i] = emq_resolve(a->c, a->p->refs[op->from + i], a->p->scratch, a->p->spans);
    if (more) memcpy(f + op->n, a->c->argv + first, sizeof(*f) * more);
    return f;
}

static void free_strs(applier *a, ValkeyModuleString **f) {
    if (f != a->inline_strs) api.Free(f);
}

static ValkeyModuleString *name(applier *a, const emq_op *op) { return a->c->names[op->key]; }
static ValkeyModuleKey *key(applier *a, const emq_op *op) { return a->c->keys[op->key]; }

// A write returns 1 if it changed the key, 0 if it was no write at all (as
// the built-in's would be), or -errno if it failed.

// hash_set sets n field/value pairs f of hash key k, up to four in one
// HashSet call (each call costs the server its checks again).
static void hash_set(ValkeyModuleKey *k, ValkeyModuleString **f, int n) {
    for (; n > 0; f += 8, n -= 4) {
        switch (n) {
        case 1: api.HashSet(k, 0, f[0], f[1], NULL); break;
        case 2: api.HashSet(k, 0, f[0], f[1], f[2], f[3], NULL); break;
        case 3: api.HashSet(k, 0, f[0], f[1], f[2], f[3], f[4], f[5], NULL); break;
        default: api.HashSet(k, 0, f[0], f[1], f[2], f[3], f[4], f[5], f[6], f[7], NULL);
        }
    }
}

static int hset(applier *a, const emq_op *op) {
    ValkeyModuleString **f = strs(a, op, 0, 0);
    hash_set(key(a, op), f, op->n / 2);
    api.Replicate(a->c->ctx, "HSET", "sv", name(a, op), f, (size_t)op->n);
    api.NotifyKeyspaceEvent(a->c->ctx, NOTIFY_HASH, "hset", name(a, op));
    free_strs(a, f);
    return 1;
}

// score_text writes a ZADD score as ZADD's reply would show it.
static void score_text(char *out, size_t cap, double score) {
    if (score == (double)(long long)score) out[fmt_i64(out, (long long)score)] = 0;
    else snprintf(out, cap, "%.17g", score);
}

// zadd adds the op's members, each at its score, replicated as one ZADD of
// those it added or moved, with one zadd event, as the built-in.
static int zadd(applier *a, const emq_op *op) {
    char score[32];
    if (op->n == 1) { // a single member: no vector to build
        int flags = 0;
        ValkeyModuleString *member = emq_resolve(a->c, a->p->refs[op->from], a->p->scratch, a->p->spans);
        if (api.ZsetAdd(key(a, op), op->score, member, &flags) != API_OK) return -EINVAL;
        if (!(flags & (ZADD_ADDED | ZADD_UPDATED))) return 0;
        score_text(score, sizeof(score), op->score); // only for a ZADD that is replicated
        api.Replicate(a->c->ctx, "ZADD", "scs", name(a, op), score, member);
        api.NotifyKeyspaceEvent(a->c->ctx, NOTIFY_ZSET, "zadd", name(a, op));
        return 1;
    }
    score_text(score, sizeof(score), op->score);
    ValkeyModuleString **m = strs(a, op, 0, 0);
    ValkeyModuleString **argv = api.Alloc(sizeof(*argv) * 2 * (size_t)op->n);
    ValkeyModuleString *s = api.CreateString(a->c->ctx, score, strlen(score));
    int n = 0, rc = 0;
    for (int i = 0; i < op->n; i++) {
        int flags = 0;
        if (api.ZsetAdd(key(a, op), op->score, m[i], &flags) != API_OK) {
            rc = -EINVAL;
            break;
        }
        if (!(flags & (ZADD_ADDED | ZADD_UPDATED))) continue;
        argv[n++] = s;
        argv[n++] = m[i];
    }
    if (n > 0) {
        api.Replicate(a->c->ctx, "ZADD", "sv", name(a, op), argv, (size_t)n);
        api.NotifyKeyspaceEvent(a->c->ctx, NOTIFY_ZSET, "zadd", name(a, op));
        if (rc == 0) rc = 1;
    }
    api.FreeString(a->c->ctx, s);
    api.Free(argv);
    free_strs(a, m);
    return rc;
}

// deleted_if_empty fires the del event a built-in fires when it removes a
// collection's last element; the key itself goes when it is closed.
static void deleted_if_empty(applier *a, const emq_op *op) {
    if (api.ValueLength(key(a, op)) == 0) api.NotifyKeyspaceEvent(a->c->ctx, NOTIFY_GENERIC, "del", name(a, op));
}

// zrem removes the op's members, replicated as one ZREM of those it
// removed, with one zrem event, as the built-in.
static int zrem(applier *a, const emq_op *op) {
    if (op->n == 1) { // a single member: no vector to build
        int deleted = 0;
        ValkeyModuleString *member = emq_resolve(a->c, a->p->refs[op->from], a->p->scratch, a->p->spans);
        if (api.ZsetRem(key(a, op), member, &deleted) != API_OK || !deleted) return 0;
        api.Replicate(a->c->ctx, "ZREM", "ss", name(a, op), member);
        api.NotifyKeyspaceEvent(a->c->ctx, NOTIFY_ZSET, "zrem", name(a, op));
        deleted_if_empty(a, op);
        return 1;
    }
    ValkeyModuleString **m = strs(a, op, 0, 0);
    int n = 0;
    for (int i = 0; i < op->n; i++) {
        int deleted = 0;
        if (api.ZsetRem(key(a, op), m[i], &deleted) == API_OK && deleted) m[n++] = m[i];
    }
    if (n > 0) {
        api.Replicate(a->c->ctx, "ZREM", "sv", name(a, op), m, (size_t)n);
        api.NotifyKeyspaceEvent(a->c->ctx, NOTIFY_ZSET, "zrem", name(a, op));
        deleted_if_empty(a, op);
    }
    free_strs(a, m);
    return n > 0;
}

static int del(applier *a, const emq_op *op) {
    if (api.KeyType(key(a, op)) == EMQ_KEY_EMPTY) return 0;
    api.DeleteKey(key(a, op));
    api.Replicate(a->c->ctx, "DEL", "s", name(a, op));
    api.NotifyKeyspaceEvent(a->c->ctx, NOTIFY_GENERIC, "del", name(a, op));
    return 1;
}

static int pexpireat(applier *a, const emq_op *op) {
    if (api.SetAbsExpire(key(a, op), op->at_ms) != API_OK) return -EINVAL;
    api.Replicate(a->c->ctx, "PEXPIREAT", "sl", name(a, op), op->at_ms);
    api.NotifyKeyspaceEvent(a->c->ctx, NOTIFY_GENERIC, "expire", name(a, op));
    return 1;
}

int emq_stream_id(char *buf, uint64_t ms, uint64_t seq) {
    int n = fmt_u64(buf, ms);
    buf[n++] = '-';
    n += fmt_u64(buf + n, seq);
    buf[n] = 0;
    return n;
}

static int xadd(applier *a, const emq_op *op, id_text *text) {
    size_t more = 2 * (size_t)op->pairs, n = (size_t)op->n + more;
    ValkeyModuleString **f = strs(a, op, more, (size_t)op->first);
    uint64_t id[2] = {op->ms, op->seq};
    int rc = 1;
    errno = 0;
    if (api.StreamAdd(key(a, op), 0, id, f, (int64_t)(n / 2)) != API_OK) {
        rc = -(errno ? errno : EINVAL);
    } else {
        text->len = (uint8_t)emq_stream_id(text->s, op->ms, op->seq);
        api.Replicate(a->c->ctx, "XADD", "scv", name(a, op), text->s, f, n);
        api.NotifyKeyspaceEvent(a->c->ctx, NOTIFY_STREAM, "xadd", name(a, op));
    }
    free_strs(a, f);
    return rc;
}

// xack acknowledges through the built-in (there is no key API for consumer
// groups); `!` propagates it with the plan's other writes, in order.
static int xack(applier *a, const emq_op *op) {
    ValkeyModuleString **f = strs(a, op, 0, 0);
    ValkeyModuleCallReply *r = api.Call(a->c->ctx, "XACK", "!sss", name(a, op), f[0], f[1]);
    free_strs(a, f);
    if (!r) return -(errno ? errno : EINVAL);
    api.FreeCallReply(r);
    return 1;
}

// store_count writes op->count's digits, also into digits, in place of the
// string's bytes — the key keeps its slot in the keyspace, and the next
// read finds plain bytes — and returns their length.
static size_t store_count(applier *a, const emq_op *op, char *digits) {
    size_t n = (size_t)fmt_i64(digits, op->count), len;
    api.StringTruncate(key(a, op), n);
    memcpy(api.StringDMA(key(a, op), &len, OPEN_WRITE), digits, n);
    return n;
}

// setpxat stores the count, then sets the absolute expiry: a window's first
// write.
static int setpxat(applier *a, const emq_op *op) {
    char digits[24];
    size_t n = store_count(a, op, digits);
    api.SetAbsExpire(key(a, op), op->at_ms);
    api.Replicate(a->c->ctx, "SET", "sbcl", name(a, op), digits, n, "PXAT", op->at_ms);
    api.NotifyKeyspaceEvent(a->c->ctx, NOTIFY_STRING, "incrby", name(a, op));
    api.NotifyKeyspaceEvent(a->c->ctx, NOTIFY_GENERIC, "expire", name(a, op));
    return 1;
}

// setkeepttl stores the count and keeps the key's expiry: a later write of
// the same window.
static int setkeepttl(applier *a, const emq_op *op) {
    char digits[24];
    size_t n = store_count(a, op, digits);
    api.Replicate(a->c->ctx, "SET", "sbc", name(a, op), digits, n, "KEEPTTL");
    api.NotifyKeyspaceEvent(a->c->ctx, NOTIFY_STRING, "incrby", name(a, op));
    return 1;
}

static int hdel(applier *a, const emq_op *op) {
    ValkeyModuleString **f = strs(a, op, 0, 0);
    int deleted = 0;
    for (int i = 0; i < op->n; i++) deleted += api.HashSet(key(a, op), 0, f[i], HASH_DELETE, NULL);
    if (deleted > 0) {
        api.Replicate(a->c->ctx, "HDEL", "sv", name(a, op), f, (size_t)op->n);
        api.NotifyKeyspaceEvent(a->c->ctx, NOTIFY_HASH, "hdel", name(a, op));
        deleted_if_empty(a, op);
    }
    free_strs(a, f);
    return deleted > 0;
}

// xadd_auto appends under the stream's next ID and, as the plan's last
// append, trims it to about op->count entries, as XADD <key> MAXLEN ~
// <count> * does. It replicates what XADD replicates: the ID it chose and,
// when it trimmed, the exact length left (MAXLEN <len>), so a replica or a
// replay trims the same. One trim a call: the server's trims entries
// by whole nodes, at most 100 nodes' worth (100 × stream-node-max-entries)
// each, so a call is held to what one XADD may trim however many entries it
// appends — a claim of 1,000 jobs trimming after each of its entries
// worked through millions of a stream whose cap was lowered, in one call.
static int xadd_auto(applier *a, const emq_op *op, id_text *text) {
    ValkeyModuleString **f = strs(a, op, 0, 0);
    uint64_t id[2] = {0, 0};
    int rc = 1;
    errno = 0;
    if (api.StreamAdd(key(a, op), STREAM_ADD_AUTOID, id, f, (int64_t)op->n / 2) != API_OK) {
        rc = -(errno ? errno : EINVAL);
    } else {
        text->len = (uint8_t)emq_stream_id(text->s, id[0], id[1]);
        long long trimmed = --a->appends_left == 0 && op->count > 0 && api.StreamTrimByLength
                                ? api.StreamTrimByLength(key(a, op), STREAM_TRIM_APPROX, op->count)
                                : 0;
        if (trimmed > 0) {
            api.Replicate(a->c->ctx, "XADD", "sclcv", name(a, op), "MAXLEN", (long long)api.ValueLength(key(a, op)),
                          text->s, f, (size_t)op->n);
        } else {
            api.Replicate(a->c->ctx, "XADD", "scv", name(a, op), text->s, f, (size_t)op->n);
        }
        api.NotifyKeyspaceEvent(a->c->ctx, NOTIFY_STREAM, "xadd", name(a, op));
        if (trimmed > 0) api.NotifyKeyspaceEvent(a->c->ctx, NOTIFY_STREAM, "xtrim", name(a, op));
    }
    free_strs(a, f);
    return rc;
}

// room_for reports whether stream key k can take n more entries under
// auto IDs. XADD's * runs out only in the last millisecond there is, the
// stream's last generated ID within n of the very last ID; XINFO alone
// knows that ID, so it is asked only when the stream's last entry is in
// that millisecond, or the stream holds none. (A last ID set there by
// XSETID, or left there by XDEL, above an earlier last entry, is not
// looked for: the first append still refuses the call with nothing
// written, a later one stops it halfway — see docs/commands.md.)
static int room_for(emq_call *c, int k, int n) {
    if (c->types[k] != EMQ_KEY_STREAM) return 1; // the first append makes it
    uint64_t last[2] = {0, 0};
    int any = 0;
    if (api.StreamIteratorStart(c->keys[k], STREAM_ITERATOR_REVERSE, NULL, NULL) == API_OK) {
        any = api.StreamIteratorNextID(c->keys[k], last, NULL) == API_OK;
        api.StreamIteratorStop(c->keys[k]);
    }
    if (any && last[0] != UINT64_MAX) return 1;
    emq_stream_top(c, k);
    return c->top_ms != UINT64_MAX || UINT64_MAX - c->top_seq >= (uint64_t)n;
}

// Stream ID texts on the stack up to this many appends a plan.
#define INLINE_IDS 16

static void reply(applier *a, const id_text *ids) {
    emq_call *c = a->c;
    for (int i = 0; i < a->p->nreplies; i++) {
        const emq_reply *r = &a->p->replies[i];
        switch (r->kind) {
        case EMQ_REPLY_INT: api.ReplyWithLongLong(c->ctx, r->value); break;
        case EMQ_REPLY_BULK: {
            size_t len;
            const char *s = api.StringPtrLen(emq_resolve(c, r->ref, a->p->scratch, a->p->spans), &len);
            api.ReplyWithStringBuffer(c->ctx, s, len);
            break;
        }
        case EMQ_REPLY_NIL: api.ReplyWithNull(c->ctx); break;
        case EMQ_REPLY_ARRAY: api.ReplyWithArray(c->ctx, (long)r->value); break;
        case EMQ_REPLY_NULL_ARRAY: api.ReplyWithNullArray(c->ctx); break;
        case EMQ_REPLY_STREAM_ID: api.ReplyWithStringBuffer(c->ctx, ids[r->value].s, ids[r->value].len); break;
        case EMQ_REPLY_ERROR:
            // the text is a string's own bytes, which end in a NUL
            api.ReplyWithError(c->ctx, api.StringPtrLen(emq_resolve(c, r->ref, a->p->scratch, a->p->spans), NULL));
            break;
        }
    }
    // a plan without a reply keeps its caller waiting (emq.Plan.Wait)
    if (a->p->nreplies > 0) c->replied = 1;
}

// make_write makes op, the plan's done-th write made, as a write returns.
static int make_write(applier *a, const emq_op *op, int done, id_text *id) {
    if (emq_fault_write && emq_fault_write == done + 1) {
        emq_fault_write = 0;
        return -EIO;
    }
    if (op->key < 0 || op->key >= a->c->nkeys) return -EINVAL;
    switch (op->op) {
    case EMQ_OP_HSET: return hset(a, op);
    case EMQ_OP_ZADD: return zadd(a, op);
    case EMQ_OP_ZREM: return zrem(a, op);
    case EMQ_OP_DEL: return del(a, op);
    case EMQ_OP_PEXPIREAT: return pexpireat(a, op);
    case EMQ_OP_XADD: return xadd(a, op, id);
    case EMQ_OP_XACK: return xack(a, op);
    case EMQ_OP_SETPXAT: return setpxat(a, op);
    case EMQ_OP_HDEL: return hdel(a, op);
    case EMQ_OP_XADD_AUTO: return xadd_auto(a, op, id);
    case EMQ_OP_SETKEEPTTL: return setkeepttl(a, op);
    }
    return -EINVAL;
}

int scripts_misread_nested_errors;

// has_error_element reports whether a reply holds an error element.
static int has_error_element(const emq_reply *replies, int n) {
    for (int i = 0; i < n; i++) {
        if (replies[i].kind == EMQ_REPLY_ERROR) return 1;
    }
    return 0;
}

// Keys marked written on the stack up to this many.
#define INLINE_WRITTEN 64

// emq_apply makes the writes of a plan — the nevents appends to a queue's
// events stream first, then the others in order — signals the key wake ready (-1:
// none), then replies. The events come first because a stream may refuse
// an append (its top the last ID there is), and a refusal then leaves
// nothing written. It returns the number of writes made: all of them,
// having replied; with nothing written or replied, -1 if the first write
// is an append the stream refuses as not above its top, -2 if it is an
// events append the stream refuses, -3 if the call is a script's on a
// server whose scripts misread the reply's error element (one settlement
// or job of a batch refused); or fewer, without a reply, if a later
// write failed — which the verb ruled out before it planned, so it is a
// bug, logged here and reported by the caller.
int emq_apply(emq_call *c, const emq_op *ops, int nops, const uint32_t *refs, const emq_reply *replies, int nreplies,
              const char *scratch, const emq_span *spans, int wake, int nevents) {
    emq_plan plan = {ops, nops, refs, replies, nreplies, scratch, spans};
    const emq_plan *p = &plan;
    // a read-only verb's keys are open for reading alone (open_key), a
    // missing one as no handle at all: a write it planned is its bug,
    // refused before anything is made
    if (c->readonly && nops > 0) {
        api.Log(c->ctx, "warning", "emq: a read-only verb planned %d writes: none made", nops);
        return 0;
    }
    // a script here would misread a reply with an error inside: the call
    // is refused whole, as its script can read that, and nothing written
    // (the reply looked at before the context's flags, which the server
    // computes in full, its memory state among them, for each ask)
    if (scripts_misread_nested_errors && has_error_element(replies, nreplies) &&
        (api.GetContextFlags(c->ctx) & CTX_FLAGS_LUA)) {
        return -3;
    }
    // many appends to the events stream: all of them, or the call refused
    // with nothing written, as the first one alone would refuse it
    if (nevents > 1) {
        for (int i = 0; i < nops; i++) {
            if (ops[i].op != EMQ_OP_XADD_AUTO) continue;
            if (!room_for(c, ops[i].key, nevents)) return -2;
            break;
        }
    }
    applier a = {c, p, nevents, {0}};
    int nids = 0, done = 0, refused = 0;
    id_text inline_ids[INLINE_IDS];
    id_text *ids = p->nops > INLINE_IDS ? api.Alloc(sizeof(*ids) * (size_t)p->nops) : inline_ids;
    char inline_written[INLINE_WRITTEN];
    char *written = c->nkeys > INLINE_WRITTEN ? api.Alloc((size_t)c->nkeys) : inline_written;
    memset(written, 0, (size_t)c->nkeys);
    // the events stream's appends first (nevents of them), then the other
    // writes in order
    for (int pass = nevents > 0 ? 0 : 1, failed = 0; pass < 2 && !failed; pass++) {
        for (int i = 0; i < p->nops; i++) {
            const emq_op *op = &p->ops[i];
            if (nevents > 0 && (op->op == EMQ_OP_XADD_AUTO) != (pass == 0)) continue;
            int rc = make_write(&a, op, done, &ids[nids]);
            if (rc < 0) {
                // the stream's own refusal of the first append: not above its
                // top (EDOM), or the top is the last ID there is (EFBIG)
                if (done == 0 && (rc == -EDOM || rc == -EFBIG)) {
                    refused = op->op == EMQ_OP_XADD ? 1 : op->op == EMQ_OP_XADD_AUTO ? 2 : 0;
                }
                if (!refused) {
                    api.Log(c->ctx, "warning", "emq: write %d of %d failed (errno %d) after %d were made", done + 1,
                            p->nops, -rc, done);
                }
                failed = 1;
                break;
            }
            if (op->op == EMQ_OP_XADD) nids++;
            if (rc > 0) written[op->key] = 1;
            done++;
        }
    }
    for (int k = 0; k < c->nkeys; k++) {
        if (written[k]) api.SignalModifiedKey(c->ctx, c->names[k]);
    }
    if (done == p->nops) {
        // waiters on the key the plan names look again (emq.Plan.Wake)
        if (wake >= 0 && wake < c->nkeys) emq_signal_key(c->ctx, c->names[wake]);
        reply(&a, ids);
    }
    if (ids != inline_ids) api.Free(ids);
    if (written != inline_written) api.Free(written);
    return refused ? -refused : done;
}
