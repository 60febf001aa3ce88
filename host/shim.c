// shim.c — the only C in the module: fetches the API functions we use by
// name, and does each key operation of a verb in one call so that Go crosses
// into C as seldom as possible.
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shim.h"
#include "_cgo_export.h"

_Static_assert(sizeof(emq_key_spec) == 56, "key spec layout");
_Static_assert(sizeof(emq_cmd_arg) == 72, "command arg layout");

// Module API constants we use (valkeymodule.h).
#define API_OK 0
#define API_V1 1
#define OPEN_READ (1 << 0)
#define OPEN_WRITE (1 << 1)
#define ZADD_ADDED (1 << 2)
#define ZADD_UPDATED (1 << 3)
#define NOTIFY_GENERIC (1 << 2)
#define NOTIFY_STRING (1 << 3)
#define NOTIFY_HASH (1 << 6)
#define NOTIFY_ZSET (1 << 7)
#define NOTIFY_STREAM (1 << 10)
#define OPTION_NO_IMPLICIT_SIGNAL_MODIFIED (1 << 1)
#define REPLY_ARRAY 3
#define INFO_VERSION 1

typedef int (*cmd_func)(ValkeyModuleCtx *, ValkeyModuleString **, int);

typedef struct {
    int version;
    size_t sizeof_historyentry, sizeof_keyspec, sizeof_arg;
} info_version;

typedef struct {
    const info_version *version;
    const char *summary, *complexity, *since;
    void *history;
    const char *tips;
    int arity;
    emq_key_spec *key_specs;
    emq_cmd_arg *args;
} command_info;

static const info_version command_info_v1 = {INFO_VERSION, 16, sizeof(emq_key_spec), sizeof(emq_cmd_arg)};

// The API, fetched by name through the getter the server puts first in ctx.
static struct {
    int (*GetApi)(const char *, void *);
    int (*IsModuleNameBusy)(const char *);
    void (*SetModuleAttribs)(ValkeyModuleCtx *, const char *, int, int);
    void (*SetModuleOptions)(ValkeyModuleCtx *, int);
    int (*CreateCommand)(ValkeyModuleCtx *, const char *, cmd_func, const char *, int, int, int);
    ValkeyModuleCommand *(*GetCommand)(ValkeyModuleCtx *, const char *);
    int (*SetCommandInfo)(ValkeyModuleCommand *, const command_info *);
    int (*SetCommandACLCategories)(ValkeyModuleCommand *, const char *);
    int (*AddACLCategory)(ValkeyModuleCtx *, const char *);
    int (*IsKeysPositionRequest)(ValkeyModuleCtx *);
    void (*KeyAtPos)(ValkeyModuleCtx *, int);
    void (*KeyAtPosWithFlags)(ValkeyModuleCtx *, int, int);
    const char *(*StringPtrLen)(const ValkeyModuleString *, size_t *);
    int (*StringToLongLong)(const ValkeyModuleString *, long long *);
    ValkeyModuleString *(*CreateString)(ValkeyModuleCtx *, const char *, size_t);
    void (*FreeString)(ValkeyModuleCtx *, ValkeyModuleString *);
    ValkeyModuleKey *(*OpenKey)(ValkeyModuleCtx *, ValkeyModuleString *, int);
    void (*CloseKey)(ValkeyModuleKey *);
    int (*KeyType)(ValkeyModuleKey *);
    char *(*StringDMA)(ValkeyModuleKey *, size_t *, int);
    int (*StringTruncate)(ValkeyModuleKey *, size_t);
    int (*SetAbsExpire)(ValkeyModuleKey *, long long);
    int (*HashSet)(ValkeyModuleKey *, int, ...);
    int (*ZsetAdd)(ValkeyModuleKey *, double, ValkeyModuleString *, int *);
    int (*StreamAdd)(ValkeyModuleKey *, int, uint64_t *, ValkeyModuleString **, int64_t);
    int (*Replicate)(ValkeyModuleCtx *, const char *, const char *, ...);
    int (*NotifyKeyspaceEvent)(ValkeyModuleCtx *, int, const char *, ValkeyModuleString *);
    int (*SignalModifiedKey)(ValkeyModuleCtx *, ValkeyModuleString *);
    long long (*Milliseconds)(void);
    ValkeyModuleCallReply *(*Call)(ValkeyModuleCtx *, const char *, const char *, ...);
    int (*CallReplyType)(ValkeyModuleCallReply *);
    size_t (*CallReplyLength)(ValkeyModuleCallReply *);
    ValkeyModuleCallReply *(*CallReplyArrayElement)(ValkeyModuleCallReply *, size_t);
    const char *(*CallReplyStringPtr)(ValkeyModuleCallReply *, size_t *);
    void (*FreeCallReply)(ValkeyModuleCallReply *);
    int (*ReplyWithError)(ValkeyModuleCtx *, const char *);
    int (*ReplyWithLongLong)(ValkeyModuleCtx *, long long);
    int (*ReplyWithArray)(ValkeyModuleCtx *, long);
    int (*ReplyWithStringBuffer)(ValkeyModuleCtx *, const char *, size_t);
    void (*Log)(ValkeyModuleCtx *, const char *, const char *, ...);
    void *(*Alloc)(size_t);
    void (*Free)(void *);
    int (*RegisterInfoFunc)(ValkeyModuleCtx *, void (*)(ValkeyModuleInfoCtx *, int));
    int (*InfoAddSection)(ValkeyModuleInfoCtx *, const char *);
    int (*InfoAddFieldLongLong)(ValkeyModuleInfoCtx *, const char *, long long);
    int (*RegisterNumericConfig)(ValkeyModuleCtx *, const char *, long long, unsigned int, long long, long long,
                                 long long (*)(const char *, void *),
                                 int (*)(const char *, long long, void *, ValkeyModuleString **),
                                 int (*)(ValkeyModuleCtx *, void *, ValkeyModuleString **), void *);
    int (*LoadConfigs)(ValkeyModuleCtx *);
} api;

// Fetch API function NAME under its RedisModule_ name, which both Valkey and
// Redis serve; a function the server lacks stays NULL.
#define FETCH(name) api.GetApi("RedisModule_" #name, (void **)&api.name)

// emq_init names the module and fetches the API. A load refused because the
// name is taken touches nothing: the loaded module keeps serving with it.
int emq_init(ValkeyModuleCtx *ctx, const char *name, int version) {
    int (*get_api)(const char *, void *) = (int (*)(const char *, void *))((void **)ctx)[0];
    int (*busy)(const char *) = NULL;
    if (get_api("RedisModule_IsModuleNameBusy", (void **)&busy) == API_OK && busy && busy(name)) return -1;
    emq_release();
    memset(&api, 0, sizeof(api));
    api.GetApi = get_api;
    FETCH(IsModuleNameBusy);
    FETCH(SetModuleAttribs);
    FETCH(SetModuleOptions);
    FETCH(CreateCommand);
    FETCH(GetCommand);
    FETCH(SetCommandInfo);
    FETCH(SetCommandACLCategories);
    FETCH(AddACLCategory);
    FETCH(IsKeysPositionRequest);
    FETCH(KeyAtPos);
    FETCH(KeyAtPosWithFlags);
    FETCH(StringPtrLen);
    FETCH(StringToLongLong);
    FETCH(CreateString);
    FETCH(FreeString);
    FETCH(OpenKey);
    FETCH(CloseKey);
    FETCH(KeyType);
    FETCH(StringDMA);
    FETCH(StringTruncate);
    FETCH(SetAbsExpire);
    FETCH(HashSet);
    FETCH(ZsetAdd);
    FETCH(StreamAdd);
    FETCH(Replicate);
    FETCH(NotifyKeyspaceEvent);
    FETCH(SignalModifiedKey);
    FETCH(Milliseconds);
    FETCH(Call);
    FETCH(CallReplyType);
    FETCH(CallReplyLength);
    FETCH(CallReplyArrayElement);
    FETCH(CallReplyStringPtr);
    FETCH(FreeCallReply);
    FETCH(ReplyWithError);
    FETCH(ReplyWithLongLong);
    FETCH(ReplyWithArray);
    FETCH(ReplyWithStringBuffer);
    FETCH(Log);
    FETCH(Alloc);
    FETCH(Free);
    FETCH(RegisterInfoFunc);
    FETCH(InfoAddSection);
    FETCH(InfoAddFieldLongLong);
    FETCH(RegisterNumericConfig);
    FETCH(LoadConfigs);
    if (!api.SetModuleAttribs) return -1;
    api.SetModuleAttribs(ctx, name, version, API_V1);
    // We signal the keys we write ourselves: opening a key to read it and
    // finding nothing to do must not invalidate WATCH or client tracking.
    if (api.SetModuleOptions) api.SetModuleOptions(ctx, OPTION_NO_IMPLICIT_SIGNAL_MODIFIED);
    return 0;
}

// emq_has reports whether the server serves the API function named api (as
// fetched by emq_init), so Go can degrade where an older server lacks one.
int emq_has(const char *fn) {
    void *p = NULL;
    return api.GetApi && api.GetApi(fn, &p) == API_OK && p != NULL;
}

int emq_add_acl_category(ValkeyModuleCtx *ctx, const char *name) {
    return api.AddACLCategory ? api.AddACLCategory(ctx, name) : -1;
}

// ---- constants ------------------------------------------------------------

// The strings plans name besides the call's arguments (emq.Constants).
#define MAX_CONSTANTS 16
static ValkeyModuleString *constants[MAX_CONSTANTS];
static int nconstants;

int emq_intern(const char *s, size_t len) {
    if (nconstants == MAX_CONSTANTS) return -1;
    constants[nconstants] = api.CreateString(NULL, s, len);
    return nconstants++;
}

const char *emq_string_ptr(ValkeyModuleString *s, size_t *len) { return api.StringPtrLen(s, len); }

// emq_release drops what emq_intern made, so a reload starts clean.
void emq_release(void) {
    for (int i = 0; i < nconstants; i++) api.FreeString(NULL, constants[i]);
    nconstants = 0;
}

// ---- commands -------------------------------------------------------------

// The most verbs the module registers; each gets a trampoline below that
// knows its row, so one C→Go entry serves a whole command.
#define MAX_VERBS 8
static uint64_t key_flags[MAX_VERBS];

// Arguments viewed on the stack up to this many; more go on the heap.
#define INLINE_ARGS 32

// getkeys answers where the keys are, EVAL-style: numkeys, then the keys.
// A numkeys that does not fit the arguments names no key; the verb refuses.
static void getkeys(ValkeyModuleCtx *ctx, ValkeyModuleString **argv, int argc, int verb) {
    long long n;
    if (argc < 2 || api.StringToLongLong(argv[1], &n) != API_OK || n < 0 || n > argc - 2) return;
    for (int i = 0; i < n; i++) {
        if (api.KeyAtPosWithFlags) api.KeyAtPosWithFlags(ctx, 2 + i, (int)key_flags[verb]);
        else api.KeyAtPos(ctx, 2 + i);
    }
}

static int serve(ValkeyModuleCtx *ctx, ValkeyModuleString **argv, int argc, int verb) {
    if (api.IsKeysPositionRequest && api.IsKeysPositionRequest(ctx)) {
        getkeys(ctx, argv, argc, verb);
        return API_OK;
    }
    emq_arg inline_args[INLINE_ARGS];
    emq_call c;
    c.ctx = ctx;
    c.argv = argv;
    c.argc = argc;
    c.args = argc <= INLINE_ARGS ? inline_args : api.Alloc(sizeof(emq_arg) * (size_t)argc);
    c.now_ms = api.Milliseconds();
    c.nkeys = 0;
    for (int i = 0; i < argc; i++) {
        c.args[i].ptr = api.StringPtrLen(argv[i], &c.args[i].len);
        c.args[i].cap = c.args[i].len; // an append to an argument copies it to Go memory
    }
    emqServe(&c, verb);
    for (int k = 0; k < c.nkeys; k++) api.CloseKey(c.keys[k]);
    if (c.args != inline_args) api.Free(c.args);
    return API_OK;
}

#define TRAMPOLINE(n) \
    static int serve##n(ValkeyModuleCtx *ctx, ValkeyModuleString **argv, int argc) { return serve(ctx, argv, argc, n); }
TRAMPOLINE(0)
TRAMPOLINE(1)
TRAMPOLINE(2)
TRAMPOLINE(3)
TRAMPOLINE(4)
TRAMPOLINE(5)
TRAMPOLINE(6)
TRAMPOLINE(7)
static const cmd_func trampolines[MAX_VERBS] = {serve0, serve1, serve2, serve3, serve4, serve5, serve6, serve7};

int emq_create_command(ValkeyModuleCtx *ctx, int verb, const char *name, const char *flags, uint64_t kflags) {
    if (verb < 0 || verb >= MAX_VERBS) return -1;
    key_flags[verb] = kflags;
    return api.CreateCommand(ctx, name, trampolines[verb], flags, 0, 0, 0);
}

int emq_set_command_info(ValkeyModuleCtx *ctx, const char *name, const char *summary, const char *complexity,
                         const char *since, int arity, emq_key_spec *specs, emq_cmd_arg *args) {
    ValkeyModuleCommand *cmd = api.GetCommand(ctx, name);
    if (!cmd || !api.SetCommandInfo) return -1;
    command_info info = {&command_info_v1, summary, complexity, since, NULL, NULL, arity, specs, args};
    return api.SetCommandInfo(cmd, &info);
}

int emq_set_acl_categories(ValkeyModuleCtx *ctx, const char *name, const char *categories) {
    ValkeyModuleCommand *cmd = api.GetCommand(ctx, name);
    if (!cmd || !api.SetCommandACLCategories) return -1;
    return api.SetCommandACLCategories(cmd, categories);
}

void emq_log(ValkeyModuleCtx *ctx, const char *level, const char *msg) {
    if (api.Log) api.Log(ctx, level, "%s", msg);
}

// ---- one call -------------------------------------------------------------

static ValkeyModuleString *keyname(emq_call *c, int k) { return c->argv[2 + k]; }

// emq_open opens the call's first n keys. Reading a string's bytes (values)
// decodes an int or embstr string into a raw one, so only a verb that needs
// the bytes asks for them.
void emq_open(emq_call *c, int n, int values) {
    for (int k = 0; k < n && k < EMQ_MAX_KEYS; k++) {
        ValkeyModuleKey *key = api.OpenKey(c->ctx, keyname(c, k), OPEN_READ | OPEN_WRITE);
        c->keys[k] = key;
        c->nkeys = k + 1;
        c->types[k] = api.KeyType(key);
        if (values && c->types[k] == EMQ_KEY_STRING) c->values[k].ptr = api.StringDMA(key, &c->values[k].len, OPEN_READ);
    }
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

// stream_id writes <ms>-<seq> and a NUL into buf (48 bytes), returning its length.
static int stream_id(char *buf, uint64_t ms, uint64_t seq) {
    int n = fmt_u64(buf, ms);
    buf[n++] = '-';
    n += fmt_u64(buf + n, seq);
    buf[n] = 0;
    return n;
}

static ValkeyModuleString *ref(emq_call *c, int r) { return r >= 0 ? c->argv[r] : constants[-1 - r]; }

// Field/value strings of a write, on the stack when they are few.
#define INLINE_FIELDS 64

static void hset(emq_call *c, const emq_op *op) {
    ValkeyModuleString *f[6];
    for (int i = 0; i < op->nrefs; i++) f[i] = ref(c, op->refs[i]);
    ValkeyModuleKey *key = c->keys[op->key];
    switch (op->nrefs / 2) {
    case 1: api.HashSet(key, 0, f[0], f[1], NULL); break;
    case 2: api.HashSet(key, 0, f[0], f[1], f[2], f[3], NULL); break;
    case 3: api.HashSet(key, 0, f[0], f[1], f[2], f[3], f[4], f[5], NULL); break;
    }
    api.Replicate(c->ctx, "HSET", "sv", keyname(c, op->key), f, (size_t)op->nrefs);
    api.NotifyKeyspaceEvent(c->ctx, NOTIFY_HASH, "hset", keyname(c, op->key));
}

// zadd reports whether the set changed: a member already there with the same
// score is no write at all, as for the built-in.
static int zadd(emq_call *c, const emq_op *op) {
    int flags = 0;
    ValkeyModuleString *member = ref(c, op->refs[0]);
    api.ZsetAdd(c->keys[op->key], op->score, member, &flags);
    if (!(flags & (ZADD_ADDED | ZADD_UPDATED))) return 0;
    char score[32];
    if (op->score == (double)(long long)op->score) score[fmt_i64(score, (long long)op->score)] = 0;
    else snprintf(score, sizeof(score), "%.17g", op->score);
    api.Replicate(c->ctx, "ZADD", "scs", keyname(c, op->key), score, member);
    api.NotifyKeyspaceEvent(c->ctx, NOTIFY_ZSET, "zadd", keyname(c, op->key));
    return 1;
}

// A stream ID's text, formatted once for both the replicated XADD and the reply.
typedef struct {
    char s[47];
    uint8_t len;
} id_text;

// Stream ID texts on the stack up to this many appends a call.
#define INLINE_IDS 16

// xadd appends op's entry and writes its ID's text into text. It returns 0
// on success or the errno of a refused append.
static int xadd(emq_call *c, const emq_op *op, id_text *text) {
    ValkeyModuleString *inline_fields[INLINE_FIELDS];
    size_t n = (size_t)op->nrefs + 2 * (size_t)op->pairs;
    ValkeyModuleString **f = n <= INLINE_FIELDS ? inline_fields : api.Alloc(sizeof(*f) * n);
    for (int i = 0; i < op->nrefs; i++) f[i] = ref(c, op->refs[i]);
    memcpy(f + op->nrefs, c->argv + op->first, sizeof(*f) * 2 * (size_t)op->pairs);
    uint64_t id[2] = {op->ms, op->seq};
    int err = 0;
    errno = 0;
    if (api.StreamAdd(c->keys[op->key], 0, id, f, (int64_t)(n / 2)) != API_OK) {
        err = errno ? errno : EINVAL;
    } else {
        text->len = (uint8_t)stream_id(text->s, op->ms, op->seq);
        api.Replicate(c->ctx, "XADD", "scv", keyname(c, op->key), text->s, f, n);
        api.NotifyKeyspaceEvent(c->ctx, NOTIFY_STREAM, "xadd", keyname(c, op->key));
    }
    if (f != inline_fields) api.Free(f);
    return err;
}

// setpxat stores the count in place — the key keeps its slot in the keyspace,
// and the next read finds plain bytes — then sets the absolute expiry.
static void setpxat(emq_call *c, const emq_op *op) {
    ValkeyModuleKey *key = c->keys[op->key];
    char digits[24];
    int n = fmt_i64(digits, op->count);
    size_t len;
    api.StringTruncate(key, (size_t)n);
    memcpy(api.StringDMA(key, &len, OPEN_WRITE), digits, (size_t)n);
    api.SetAbsExpire(key, op->at_ms);
    api.Replicate(c->ctx, "SET", "sbcl", keyname(c, op->key), digits, (size_t)n, "PXAT", op->at_ms);
    api.NotifyKeyspaceEvent(c->ctx, NOTIFY_STRING, "incrby", keyname(c, op->key));
    api.NotifyKeyspaceEvent(c->ctx, NOTIFY_GENERIC, "expire", keyname(c, op->key));
}

// emq_apply makes the writes of a plan in order, then replies. It returns 0,
// having written and replied nothing, if the first write is an append the
// stream refuses as not above its top; any later refusal was ruled out by
// the verb before it planned, and is logged as the bug it would be.
int emq_apply(emq_call *c, const emq_op *ops, int nops, int reply, long long value) {
    int written[EMQ_MAX_KEYS] = {0};
    int nids = 0;
    id_text inline_ids[INLINE_IDS];
    id_text *ids = inline_ids;
    if (nops > INLINE_IDS) ids = api.Alloc(sizeof(*ids) * (size_t)nops);
    for (int i = 0; i < nops; i++) {
        const emq_op *op = &ops[i];
        switch (op->op) {
        case EMQ_OP_HSET: hset(c, op); written[op->key] = 1; break;
        case EMQ_OP_ZADD: written[op->key] |= zadd(c, op); break;
        case EMQ_OP_SETPXAT: setpxat(c, op); written[op->key] = 1; break;
        case EMQ_OP_XADD: {
            int err = xadd(c, op, &ids[nids]);
            if (err && i == 0) {
                if (ids != inline_ids) api.Free(ids);
                return 0;
            }
            if (err) api.Log(c->ctx, "warning", "emq: append %d of a checked batch failed (errno %d)", i + 1, err);
            written[op->key] = 1;
            nids++;
            break;
        }
        }
    }
    for (int k = 0; k < c->nkeys; k++) {
        if (written[k]) api.SignalModifiedKey(c->ctx, keyname(c, k));
    }
    if (reply == EMQ_REPLY_INT) {
        api.ReplyWithLongLong(c->ctx, value);
    } else if (reply == EMQ_REPLY_STREAM_IDS) {
        api.ReplyWithArray(c->ctx, nids);
        for (int i = 0; i < nids; i++) api.ReplyWithStringBuffer(c->ctx, ids[i].s, ids[i].len);
    }
    if (ids != inline_ids) api.Free(ids);
    return 1;
}

// emq_stream_top reads a stream's last generated ID — which survives XDEL,
// so only XINFO knows it — into c->top_ms/top_seq. Used off the hot path.
void emq_stream_top(emq_call *c, int k) {
    c->top_ms = c->top_seq = 0;
    ValkeyModuleCallReply *r = api.Call(c->ctx, "XINFO", "cs", "STREAM", keyname(c, k));
    if (!r) return;
    if (api.CallReplyType(r) == REPLY_ARRAY) {
        size_t n = api.CallReplyLength(r);
        for (size_t i = 0; i + 1 < n; i += 2) {
            size_t len;
            const char *field = api.CallReplyStringPtr(api.CallReplyArrayElement(r, i), &len);
            if (!field || len != 17 || memcmp(field, "last-generated-id", 17) != 0) continue;
            const char *v = api.CallReplyStringPtr(api.CallReplyArrayElement(r, i + 1), &len);
            char text[48];
            if (v && len < sizeof(text)) {
                memcpy(text, v, len);
                text[len] = 0;
                unsigned long long ms = 0, seq = 0;
                if (sscanf(text, "%llu-%llu", &ms, &seq) == 2) c->top_ms = ms, c->top_seq = seq;
            }
            break;
        }
    }
    api.FreeCallReply(r);
}

// emq_reply_error replies the error "<code> <msg>".
void emq_reply_error(emq_call *c, const char *code, size_t codelen, const char *msg, size_t msglen) {
    char inline_text[256];
    size_t len = codelen + 1 + msglen;
    char *text = len < sizeof(inline_text) ? inline_text : api.Alloc(len + 1);
    memcpy(text, code, codelen);
    text[codelen] = ' ';
    if (msglen) memcpy(text + codelen + 1, msg, msglen);
    text[len] = 0;
    // A reply line cannot hold a line break.
    for (size_t i = 0; i < len; i++) {
        if (text[i] == '\r' || text[i] == '\n') text[i] = ' ';
    }
    api.ReplyWithError(c->ctx, text);
    if (text != inline_text) api.Free(text);
}

void emq_reply_array(emq_call *c, long n) { api.ReplyWithArray(c->ctx, n); }

void emq_reply_string(emq_call *c, const char *s, size_t len) { api.ReplyWithStringBuffer(c->ctx, s, len); }

// ---- configs ---------------------------------------------------------------

long long emq_config_values[EMQ_MAX_CONFIGS];

static long long get_numeric(const char *name, void *slot) {
    (void)name;
    return emq_config_values[(intptr_t)slot];
}

static int set_numeric(const char *name, long long v, void *slot, ValkeyModuleString **err) {
    (void)name, (void)err;
    emq_config_values[(intptr_t)slot] = v;
    return API_OK;
}

int emq_numeric_config(ValkeyModuleCtx *ctx, int slot, const char *name, long long def, long long min, long long max) {
    if (slot < 0 || slot >= EMQ_MAX_CONFIGS || !api.RegisterNumericConfig) return -1;
    emq_config_values[slot] = def;
    return api.RegisterNumericConfig(ctx, name, def, 0, min, max, get_numeric, set_numeric, NULL, (void *)(intptr_t)slot);
}

int emq_load_configs(ValkeyModuleCtx *ctx) { return api.LoadConfigs ? api.LoadConfigs(ctx) : -1; }

// ---- INFO -----------------------------------------------------------------

// info never enters Go from the crash report: the Go runtime may be the
// reason the server is crashing.
static void info(ValkeyModuleInfoCtx *ictx, int for_crash_report) {
    if (for_crash_report) return;
    emqInfo(ictx);
}

int emq_register_info(ValkeyModuleCtx *ctx) { return api.RegisterInfoFunc ? api.RegisterInfoFunc(ctx, info) : -1; }

void emq_info_section(ValkeyModuleInfoCtx *ictx, const char *name) { api.InfoAddSection(ictx, name); }

void emq_info_int(ValkeyModuleInfoCtx *ictx, const char *field, long long v) {
    api.InfoAddFieldLongLong(ictx, field, v);
}
