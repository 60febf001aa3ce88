// shim.h — the C side of package host: our own declarations of the few
// module API types we use (read from Valkey 8.0's module header, written
// here by hand), and the small C functions Go calls.
#ifndef EMQ_SHIM_H
#define EMQ_SHIM_H

#include <stddef.h>
#include <stdint.h>

typedef struct ValkeyModuleCtx ValkeyModuleCtx;
typedef struct ValkeyModuleString ValkeyModuleString;
typedef struct ValkeyModuleKey ValkeyModuleKey;
typedef struct ValkeyModuleCommand ValkeyModuleCommand;
typedef struct ValkeyModuleCallReply ValkeyModuleCallReply;
typedef struct ValkeyModuleInfoCtx ValkeyModuleInfoCtx;

// Command info, version 1: the layout the server reads SetCommandInfo's
// argument with. Sizes are asserted in shim.c.
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

typedef struct emq_key_spec {
    const char *notes;
    uint64_t flags;
    int begin_search_type;
    union {
        struct { int pos; } index;
        struct { const char *keyword; int startfrom; } keyword;
    } bs;
    int find_keys_type;
    union {
        struct { int lastkey; int keystep; int limit; } range;
        struct { int keynumidx; int firstkey; int keystep; } keynum;
    } fk;
} emq_key_spec;

// A zero-copy view of bytes the server holds, valid for the whole command.
typedef struct emq_view {
    const char *ptr;
    size_t len;
} emq_view;

// One argument, laid out as a Go []byte (pointer, length, capacity), so an
// array of them is the [][]byte of the call's arguments with no Go work.
// host/layout.go checks the layout.
typedef struct emq_arg {
    const char *ptr;
    size_t len, cap;
} emq_arg;

// The most keys one verb opens.
#define EMQ_MAX_KEYS 2

// Key types, as KeyType reports them.
enum {
    EMQ_KEY_EMPTY = 0,
    EMQ_KEY_STRING = 1,
    EMQ_KEY_HASH = 3,
    EMQ_KEY_ZSET = 5,
    EMQ_KEY_STREAM = 7,
};

// One command in flight: lives on the C stack of the command handler.
typedef struct emq_call {
    ValkeyModuleCtx *ctx;
    ValkeyModuleString **argv;
    int argc;
    emq_arg *args;
    long long now_ms;
    int nkeys;
    ValkeyModuleKey *keys[EMQ_MAX_KEYS];
    int types[EMQ_MAX_KEYS];
    emq_view values[EMQ_MAX_KEYS];   // a string key's bytes
    uint64_t top_ms, top_seq;        // emq_stream_top's answer
} emq_call;

// Writes, as emq.Op numbers them.
enum { EMQ_OP_HSET = 1, EMQ_OP_ZADD, EMQ_OP_XADD, EMQ_OP_SETPXAT };

// Replies, as emq.ReplyKind numbers them.
enum { EMQ_REPLY_INT = 1, EMQ_REPLY_STREAM_IDS };

// One write of a plan: emq.Write's own memory layout (Go's int is 64 bits
// here), so a plan reaches C without a copy. host/layout.go checks it.
typedef struct emq_op {
    uint8_t op;
    int64_t key;
    int32_t refs[6];
    int64_t nrefs, first, pairs;
    uint64_t ms, seq;
    double score;
    int64_t count, at_ms;
} emq_op;

enum {
    EMQ_OP_OFF_KEY = offsetof(emq_op, key),
    EMQ_OP_OFF_REFS = offsetof(emq_op, refs),
    EMQ_OP_OFF_NREFS = offsetof(emq_op, nrefs),
    EMQ_OP_OFF_FIRST = offsetof(emq_op, first),
    EMQ_OP_OFF_PAIRS = offsetof(emq_op, pairs),
    EMQ_OP_OFF_MS = offsetof(emq_op, ms),
    EMQ_OP_OFF_SEQ = offsetof(emq_op, seq),
    EMQ_OP_OFF_SCORE = offsetof(emq_op, score),
    EMQ_OP_OFF_COUNT = offsetof(emq_op, count),
    EMQ_OP_OFF_AT_MS = offsetof(emq_op, at_ms),
};

// Loading and registering.
int emq_init(ValkeyModuleCtx *ctx, const char *name, int version);
int emq_has(const char *api);
int emq_add_acl_category(ValkeyModuleCtx *ctx, const char *name);
int emq_create_command(ValkeyModuleCtx *ctx, int verb, const char *name, const char *flags, uint64_t key_flags);
int emq_set_command_info(ValkeyModuleCtx *ctx, const char *name, const char *summary, const char *complexity,
                         const char *since, int arity, emq_key_spec *specs, emq_cmd_arg *args);
int emq_set_acl_categories(ValkeyModuleCtx *ctx, const char *name, const char *categories);
int emq_intern(const char *s, size_t len);
const char *emq_string_ptr(ValkeyModuleString *s, size_t *len);
void emq_release(void);
void emq_log(ValkeyModuleCtx *ctx, const char *level, const char *msg);
int emq_register_info(ValkeyModuleCtx *ctx);

// Numeric configs: emq.<name>, values read in place by Go.
#define EMQ_MAX_CONFIGS 4
extern long long emq_config_values[EMQ_MAX_CONFIGS];
int emq_numeric_config(ValkeyModuleCtx *ctx, int slot, const char *name, long long def, long long min, long long max);
int emq_load_configs(ValkeyModuleCtx *ctx);

// Serving one call.
void emq_open(emq_call *c, int n, int values);
int emq_apply(emq_call *c, const emq_op *ops, int nops, int reply, long long value);
void emq_stream_top(emq_call *c, int k);
void emq_reply_error(emq_call *c, const char *code, size_t codelen, const char *msg, size_t msglen);
void emq_reply_array(emq_call *c, long n);
void emq_reply_string(emq_call *c, const char *s, size_t len);

// INFO.
void emq_info_section(ValkeyModuleInfoCtx *ictx, const char *name);
void emq_info_int(ValkeyModuleInfoCtx *ictx, const char *field, long long v);

#endif
