// shim.h — what Go sees of package host's C side: our own declarations of
// the few module API types the Go code names (read from Valkey 8.0's module
// header, written here by hand), the layouts Go and C share, and the C
// functions Go calls. host/layout.go checks every shared constant and layout
// at compile time.
#ifndef EMQ_SHIM_H
#define EMQ_SHIM_H

#include <stddef.h>
#include <stdint.h>

typedef struct ValkeyModuleCtx ValkeyModuleCtx;
typedef struct ValkeyModuleString ValkeyModuleString;
typedef struct ValkeyModuleKey ValkeyModuleKey;
typedef struct ValkeyModuleInfoCtx ValkeyModuleInfoCtx;
typedef struct ValkeyModuleUser ValkeyModuleUser;
typedef struct ValkeyModuleBlockedClient ValkeyModuleBlockedClient;

// Command info, version 1: the layout the server reads SetCommandInfo's
// argument with. Sizes are asserted in api.c.
typedef struct emq_cmd_arg {
    const char *name;
    int type;
    int key_spec_index;
    const char *token;
    const char *summary;
    const char *since;
    int flags;
    const char *deprecated_since;
    struct emq_cmd_arg *subargs;
    const char *display_text;
} emq_cmd_arg;

// ---- layouts shared with Go -----------------------------------------------

// One argument, or any bytes handed to Go, laid out as a Go []byte
// (pointer, length, capacity).
typedef struct emq_arg {
    const char *ptr;
    size_t len, cap;
} emq_arg;

// A string read for the call (emq.Value).
typedef struct emq_value {
    emq_arg bytes;
    uint32_t ref;
    uint8_t found;
} emq_value;

// A sorted-set member read for the call (emq.Member).
typedef struct emq_member {
    emq_arg bytes;
    uint32_t ref;
    double score;
} emq_member;

// A sorted-set member with its job row, opened with it (emq.Row); values
// is laid out as a Go []emq.Value.
typedef struct emq_row {
    emq_member member;
    int64_t key; // the row's key number, or EMQ_DENIED
    emq_value *values;
    size_t nvalues, capvalues;
} emq_row;

// One write of a plan (emq.Write).
typedef struct emq_op {
    uint8_t op;
    int32_t key, from, n, first, pairs;
    uint64_t ms, seq;
    double score;
    int64_t count, at_ms;
} emq_op;

// One element of a plan's reply (emq.Reply).
typedef struct emq_reply {
    uint8_t kind;
    uint32_t ref;
    int64_t value;
} emq_reply;

// A run of a plan's scratch bytes (emq.Span).
typedef struct emq_span {
    int64_t off, len;
} emq_span;

// A plan's slices, in place (Go passes them one by one: cgo refuses a Go
// struct holding Go pointers).
typedef struct emq_plan {
    const emq_op *ops;
    int nops;
    const uint32_t *refs;
    const emq_reply *replies;
    int nreplies;
    const char *scratch;
    const emq_span *spans;
} emq_plan;

// Writes, as emq.Op numbers them.
enum {
    EMQ_OP_HSET = 1,
    EMQ_OP_ZADD,
    EMQ_OP_ZREM,
    EMQ_OP_DEL,
    EMQ_OP_PEXPIREAT,
    EMQ_OP_XADD,
    EMQ_OP_XACK,
    EMQ_OP_SETPXAT,
    EMQ_OP_HDEL,
    EMQ_OP_XADD_AUTO,
    EMQ_OP_SETKEEPTTL,
    EMQ_NUM_OPS,
};

// Reply elements, as emq.ReplyKind numbers them.
enum {
    EMQ_REPLY_INT = 1,
    EMQ_REPLY_BULK,
    EMQ_REPLY_NIL,
    EMQ_REPLY_ARRAY,
    EMQ_REPLY_NULL_ARRAY,
    EMQ_REPLY_STREAM_ID,
    EMQ_REPLY_ERROR,
    EMQ_NUM_REPLY_KINDS,
};

// What an emq.Ref names: its top two bits, then an index.
enum {
    EMQ_REF_ARG = 0,
    EMQ_REF_CONST = 1,
    EMQ_REF_SCRATCH = 2,
    EMQ_REF_HELD = 3,
};
#define EMQ_NO_REF 0xFFFFFFFFu // names nothing (emq.NoRef)
#define EMQ_REF_KIND(r) ((r) >> 30)
#define EMQ_REF_INDEX(r) ((r) & ((1u << 30) - 1))

// A queue's settings keys (emq.SettingsKeys), as emq_open numbers them.
enum {
    EMQ_SETTINGS_CONFIG,
    EMQ_SETTINGS_LIMITER,
    EMQ_SETTINGS_EVENTS,
    EMQ_NUM_SETTINGS,
};

// What a verb does with a key it derives (emq.Access).
enum {
    EMQ_READ = 1,
    EMQ_WRITE = 2,
};

// What emq_open found of a settings key besides a key number (emq.NoKey,
// emq.Denied).
enum {
    EMQ_NO_KEY = -1,
    EMQ_DENIED = -2,
};

// An expiry not read yet (emq_call.expires).
#define EMQ_UNREAD (-2LL)

// Key types, as the module API numbers them.
enum {
    EMQ_KEY_EMPTY = 0,
    EMQ_KEY_STRING = 1,
    EMQ_KEY_HASH = 3,
    EMQ_KEY_ZSET = 5,
    EMQ_KEY_STREAM = 7,
};

enum {
    EMQ_OP_OFF_KEY = offsetof(emq_op, key),
    EMQ_OP_OFF_FROM = offsetof(emq_op, from),
    EMQ_OP_OFF_N = offsetof(emq_op, n),
    EMQ_OP_OFF_FIRST = offsetof(emq_op, first),
    EMQ_OP_OFF_PAIRS = offsetof(emq_op, pairs),
    EMQ_OP_OFF_MS = offsetof(emq_op, ms),
    EMQ_OP_OFF_SEQ = offsetof(emq_op, seq),
    EMQ_OP_OFF_SCORE = offsetof(emq_op, score),
    EMQ_OP_OFF_COUNT = offsetof(emq_op, count),
    EMQ_OP_OFF_AT_MS = offsetof(emq_op, at_ms),
    EMQ_REPLY_OFF_REF = offsetof(emq_reply, ref),
    EMQ_REPLY_OFF_VALUE = offsetof(emq_reply, value),
    EMQ_VALUE_OFF_REF = offsetof(emq_value, ref),
    EMQ_VALUE_OFF_FOUND = offsetof(emq_value, found),
    EMQ_MEMBER_OFF_REF = offsetof(emq_member, ref),
    EMQ_MEMBER_OFF_SCORE = offsetof(emq_member, score),
    EMQ_ROW_OFF_KEY = offsetof(emq_row, key),
    EMQ_ROW_OFF_VALUES = offsetof(emq_row, values),
};

// ---- one command in flight ------------------------------------------------

// Keys, held strings and read results kept inline up to these counts.
#define EMQ_INLINE_KEYS 8
#define EMQ_INLINE_HELD 16
#define EMQ_INLINE_PAIRS 12
#define EMQ_INLINE_READS 8
#define EMQ_INLINE_PAIRBUF 128

// One command in flight: lives on the C stack of the command handler.
typedef struct emq_call {
    ValkeyModuleCtx *ctx;
    ValkeyModuleString **argv;
    int argc;
    emq_arg *args;
    long long now_ms;
    int replied; // the reply was sent: nothing may reply again
    // keys: the declared ones first, then those the verb derived
    int nkeys, capkeys;
    ValkeyModuleKey **keys;
    ValkeyModuleString **names;
    int *types;
    emq_arg *values;     // a string key's bytes, when read
    long long *expires;  // a derived string key's expiry, read when opened; EMQ_UNREAD otherwise
    // strings the server made for this call, freed when it ends
    int nheld, capheld;
    ValkeyModuleString **held;
    // read results, overwritten by the next read of their kind
    emq_value *hvals;
    int caphvals;
    emq_member *members;
    int capmembers;
    emq_row *rows;     // emq_zrange_rows' answer, with its rows' fields in rowvals
    int caprows;
    int rows_from;     // the keys opened before the call's first emq_zrange_rows, or -1
    emq_value *rowvals;
    int caprowvals;
    ValkeyModuleUser *user; // the caller, looked up for derived keys' ACL
    int user_looked;
    uint64_t top_ms, top_seq; // emq_stream_top's answer
    emq_value *fields; // emq_stream_entry's answer
    int capfields;
    int settings[EMQ_NUM_SETTINGS]; // emq_open's answer: the queue's settings keys
    emq_value *pairs; // emq_hash_fields' answer: fields and values, alternating, copied into pairbuf
    int npairs, cappairs;
    char *pairbuf;
    size_t cappairbuf;
    emq_arg text; // emq_pending_owner's answer: an owner or an error reply
    uint64_t waiter;          // a wake-up: the waiting client it serves (wait.go); 0 for a command
    int routed;               // a command, whose declared keys the server checked are here; not a wake-up or a sweep
    int readonly;             // a command of a read-only verb, whose derived reads a caller's cache tracks (remember)
    int tracking;             // remember's answer: 1 the caller may track keys, -1 it does not, 0 not asked yet
    int wanted;               // a timer's sweep: the jobs its queue's waiting clients want; 0 otherwise
    ValkeyModuleKey *inline_keys[EMQ_INLINE_KEYS];
    ValkeyModuleString *inline_names[EMQ_INLINE_KEYS];
    int inline_types[EMQ_INLINE_KEYS];
    emq_arg inline_values[EMQ_INLINE_KEYS];
    long long inline_expires[EMQ_INLINE_KEYS];
    ValkeyModuleString *inline_held[EMQ_INLINE_HELD];
    emq_value inline_hvals[EMQ_INLINE_READS];
    emq_member inline_members[EMQ_INLINE_READS];
    emq_row inline_rows[EMQ_INLINE_READS];
    emq_value inline_rowvals[2 * EMQ_INLINE_READS];
    emq_value inline_pairs[EMQ_INLINE_PAIRS];
    char inline_pairbuf[EMQ_INLINE_PAIRBUF];
} emq_call;

// Loading and registering (api.c).
int emq_init(ValkeyModuleCtx *ctx, const char *name, int version);
int emq_has(const char *api);
const char *emq_unknown_builtin(ValkeyModuleCtx *ctx); // apply.c
int emq_server_info(ValkeyModuleCtx *ctx, const char *section, const char *field, char *buf, size_t cap);
int emq_add_acl_category(ValkeyModuleCtx *ctx, const char *name);
int emq_create_command(ValkeyModuleCtx *ctx, int verb, const char *name, const char *flags, int readonly, int keys);
int emq_set_command_info(ValkeyModuleCtx *ctx, const char *name, const char *summary, const char *complexity,
                         const char *since, int arity, int keys, uint64_t key_flags, emq_cmd_arg *args);
int emq_set_acl_categories(ValkeyModuleCtx *ctx, const char *name, const char *categories);
int emq_intern(const char *s, size_t len);
const char *emq_string_ptr(ValkeyModuleString *s, size_t *len);
void emq_log(ValkeyModuleCtx *ctx, const char *level, const char *msg);

// Serving one call (call.c, apply.c).
int emq_settings_layout(int kind, const char *head, size_t hlen, const char *tail, size_t tlen, const char *field,
                        size_t flen, int access);
void emq_open(emq_call *c, int n, int values, const char *queue, size_t qlen);
void emq_read_value(emq_call *c, int k);
long long emq_expire_at(emq_call *c, int k);
int emq_moving(emq_call *c, int k);
int emq_out_of_memory(emq_call *c);
int emq_open_derived(emq_call *c, const char *name, size_t len, int access, const uint32_t *fields, int n,
                     const char *scratch, const emq_span *spans);
emq_value *emq_hash_get(emq_call *c, int k, const uint32_t *fields, int n, const char *scratch, const emq_span *spans);
int emq_hash_fields(emq_call *c, int k);
int emq_zrange(emq_call *c, int k, double max, int exclusive, int offset, int limit);
int emq_zrange_rows(emq_call *c, int k, double max, int exclusive, int limit, const char *prefix, size_t plen,
                    const uint32_t *fields, int n, const char *scratch, const emq_span *spans);
int emq_zscore(emq_call *c, int k, const char *member, size_t len, double *score);
void emq_stream_top(emq_call *c, int k);
int emq_stream_entry(emq_call *c, int k, uint64_t ms, uint64_t seq);
int emq_pending_owner(emq_call *c, int k, uint32_t group, uint64_t ms, uint64_t seq, const char *scratch,
                      const emq_span *spans);
int emq_apply(emq_call *c, const emq_op *ops, int nops, const uint32_t *refs, const emq_reply *replies, int nreplies,
              const char *scratch, const emq_span *spans, int wake, int nevents);
void emq_reply_error(emq_call *c, const char *code, size_t codelen, const char *msg, size_t msglen);
extern int emq_fault_write; // test builds: the write of the next plan to fail, from 1
extern uint64_t emq_turns_opened; // the turns that opened their keys (emq_open), since the load

// Blocking verbs: waiting clients, their wake-ups and timers (wait.c).
int emq_may_block(ValkeyModuleCtx *ctx);
int emq_selected_db(ValkeyModuleCtx *ctx);
void emq_select_db(ValkeyModuleCtx *ctx, int db);
ValkeyModuleBlockedClient *emq_block(emq_call *c, int k, long long timeout_ms, uint64_t waiter);
extern int emq_timer_serves_waiters; // a queue's timer serves its waiters itself (wait.c)
int emq_has_jobs(ValkeyModuleCtx *ctx, const char *key, size_t len);
void emq_serve_waiter(ValkeyModuleBlockedClient *bc, uint64_t waiter);
extern int emq_timer_sweeping; // a queue's timer sweeps and serves: see emq_signal_key
double emq_first_score(emq_call *c, int k);
uint64_t emq_create_timer(ValkeyModuleCtx *ctx, long long period_ms, uint64_t token);
void emq_stop_timer(ValkeyModuleCtx *ctx, uint64_t id);
int emq_timer_may_sweep(ValkeyModuleCtx *ctx, const char *pending, size_t len);
void emq_signal_ready(ValkeyModuleCtx *ctx, const char *key, size_t len);
void emq_signal_key(ValkeyModuleCtx *ctx, ValkeyModuleString *key);
int emq_subscribe_queues(ValkeyModuleCtx *ctx);
int emq_timer_pass_spent(void);
uint64_t emq_pass(void);
long long emq_now_ms(void);
void emq_reply_null_array(emq_call *c);
int emq_sweep_queue(ValkeyModuleCtx *ctx, const char *pending, size_t len, int wanted);
#define EMQ_SWEEP_VERB (-2) // the verb number of a queue's sweep (emq.Sweep), which is no command
int emq_serve_woken(ValkeyModuleCtx *ctx, ValkeyModuleString **argv, int argc, uint64_t waiter);
extern int emq_queues_waited; // queues with waiting clients: 0 spares the zset events a call into Go
extern int emq_queues_closed; // queues not open to their waiters: 0 spares a pending write a call into Go
// EMQ_KEPT_NAME_MAX is the longest queue name the module keeps anything of
// between calls — its settings keys' names (call.c), an idle queue its
// workers waited on (wait.go): a longer name's are made for the call or
// the wait and go with it, so no name's length is memory held for good.
#define EMQ_KEPT_NAME_MAX 256

// Configs, INFO and config changes (admin.c).
#define EMQ_MAX_CONFIGS 4
extern long long emq_config_values[EMQ_MAX_CONFIGS];
int emq_numeric_config(ValkeyModuleCtx *ctx, int slot, const char *name, long long def, long long min, long long max);
int emq_load_configs(ValkeyModuleCtx *ctx);
int emq_register_info(ValkeyModuleCtx *ctx);
int emq_subscribe_config(ValkeyModuleCtx *ctx);
void emq_info_section(ValkeyModuleInfoCtx *ictx, const char *name);
void emq_info_int(ValkeyModuleInfoCtx *ictx, const char *field, long long v);

#endif
