// api.c — fetching the module API by name, and registering the module and
// its commands: names, flags, key positions, docs and ACL categories.
#include <stdlib.h>
#include <string.h>

#include "api.h"

emq_api api;

// The key spec of command info version 1 (valkeymodule.h's layout).
typedef struct {
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
} key_spec;

_Static_assert(sizeof(key_spec) == 56, "key spec layout");
_Static_assert(sizeof(emq_cmd_arg) == 72, "command arg layout");

#define API_V1 1
#define INFO_VERSION 1
#define KSPEC_BS_INDEX 2
#define KSPEC_FK_RANGE 2
#define OPTION_NO_IMPLICIT_SIGNAL_MODIFIED (1 << 1)
#define OPTIONS_HANDLE_REPL_ASYNC_LOAD (1 << 2)
#define OPTIONS_HANDLE_ATOMIC_SLOT_MIGRATION (1 << 5) // Valkey 9.0

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
    key_spec *key_specs;
    emq_cmd_arg *args;
} command_info;

static const info_version command_info_v1 = {INFO_VERSION, 16, sizeof(key_spec), sizeof(emq_cmd_arg)};

// Fetch API function NAME under its RedisModule_ name, which both Valkey and
// Redis serve; a function the server lacks stays NULL.
#define FETCH(name) api.GetApi("RedisModule_" #name, (void **)&api.name)

static void release_constants(void);

// emq_server_info copies INFO section's field, NUL-terminated, into buf
// (cap bytes, cut to fit) and returns its length, or -1 when the server has
// no such field (or no GetServerInfo).
int emq_server_info(ValkeyModuleCtx *ctx, const char *section, const char *field, char *buf, size_t cap) {
    if (!api.GetServerInfo || !api.ServerInfoGetFieldC || !api.FreeServerInfo || cap == 0) return -1;
    ValkeyModuleServerInfoData *info = api.GetServerInfo(ctx, section);
    if (!info) return -1;
    const char *value = api.ServerInfoGetFieldC(info, field);
    int n = -1;
    if (value) {
        size_t len = strlen(value);
        if (len >= cap) len = cap - 1;
        memcpy(buf, value, len);
        buf[len] = 0;
        n = (int)len;
    }
    api.FreeServerInfo(ctx, info);
    return n;
}

// valkey_version returns a Valkey server's version as major*100+minor
// (9.1.2: 901), or 0 for another (Redis, whose option bits differ).
static int valkey_version(ValkeyModuleCtx *ctx) {
    char version[32];
    if (emq_server_info(ctx, "server", "valkey_version", version, sizeof(version)) <= 0) return 0;
    const char *minor = strchr(version, '.');
    return atoi(version) * 100 + (minor ? atoi(minor + 1) : 0);
}

// emq_init names the module and fetches the API. A load refused because the
// name is taken touches nothing: the loaded module keeps serving with it.
// Only a copy loaded from another path, whose api is its own and empty,
// fetches Log, so that its refusal says why in the server's log.
int emq_init(ValkeyModuleCtx *ctx, const char *name, int version) {
    int (*get_api)(const char *, void *) = (int (*)(const char *, void *))((void **)ctx)[0];
    int (*busy)(const char *) = NULL;
    if (get_api("RedisModule_IsModuleNameBusy", (void **)&busy) == API_OK && busy && busy(name)) {
        if (!api.Log) get_api("RedisModule_Log", (void **)&api.Log);
        return -1;
    }
    release_constants();
    emq_release_settings_names();
    emq_forget_clients();
    emq_forget_passes();
    memset(&api, 0, sizeof(api));
    api.GetApi = get_api;
    FETCH(SetModuleAttribs);
    FETCH(SetModuleOptions);
    FETCH(CreateCommand);
    FETCH(GetCommand);
    FETCH(SetCommandInfo);
    FETCH(SetCommandACLCategories);
    FETCH(AddACLCategory);
    FETCH(StringPtrLen);
    FETCH(StringToLongLong);
    FETCH(CreateString);
    FETCH(RetainString);
    FETCH(FreeString);
    FETCH(OpenKey);
    FETCH(CloseKey);
    FETCH(KeyType);
    FETCH(GetOpenKeyModesAll);
    FETCH(GetAbsExpire);
    FETCH(StreamTrimByLength);
    FETCH(ValueLength);
    FETCH(DeleteKey);
    FETCH(StringDMA);
    FETCH(StringTruncate);
    FETCH(SetAbsExpire);
    FETCH(HashSet);
    FETCH(HashGet);
    FETCH(ScanCursorCreate);
    FETCH(ScanCursorDestroy);
    FETCH(ScanKey);
    FETCH(ZsetAdd);
    FETCH(ZsetRem);
    FETCH(ZsetFirstInScoreRange);
    FETCH(ZsetRangeCurrentElement);
    FETCH(ZsetRangeNext);
    FETCH(ZsetRangeStop);
    FETCH(ZsetScore);
    FETCH(StreamAdd);
    FETCH(StreamIteratorStart);
    FETCH(StreamIteratorStop);
    FETCH(StreamIteratorNextID);
    FETCH(StreamIteratorNextField);
    FETCH(Replicate);
    FETCH(NotifyKeyspaceEvent);
    FETCH(SignalModifiedKey);
    FETCH(Milliseconds);
    FETCH(MonotonicMicroseconds);
    FETCH(Call);
    FETCH(CallReplyType);
    FETCH(CallReplyLength);
    FETCH(CallReplyArrayElement);
    FETCH(CallReplyStringPtr);
    FETCH(FreeCallReply);
    FETCH(ReplyWithCallReply);
    FETCH(ReplyWithError);
    FETCH(ReplyWithLongLong);
    FETCH(ReplyWithArray);
    FETCH(ReplyWithNullArray);
    FETCH(ReplyWithNull);
    FETCH(ReplyWithStringBuffer);
    FETCH(GetCurrentUserName);
    FETCH(GetClientId);
    FETCH(GetClientInfoById);
    FETCH(GetClientUserNameById);
    FETCH(GetModuleUserFromUserName);
    FETCH(ACLCheckKeyPermissions);
    FETCH(ACLCheckCommandPermissions);
    FETCH(ACLCheckPermissions);
    FETCH(FreeModuleUser);
    FETCH(ACLAddLogEntry);
    FETCH(Log);
    FETCH(Alloc);
    FETCH(Realloc);
    FETCH(Free);
    FETCH(RegisterInfoFunc);
    FETCH(InfoAddSection);
    FETCH(InfoAddFieldLongLong);
    FETCH(RegisterNumericConfig);
    FETCH(LoadConfigs);
    FETCH(GetContextFlags);
    FETCH(AvoidReplicaTraffic);
    FETCH(GetSelectedDb);
    FETCH(SelectDb);
    FETCH(BlockClientOnKeys);
    FETCH(GetBlockedClientPrivateData);
    FETCH(UnblockClient);
    FETCH(GetBlockedClientReadyKey);
    FETCH(GetServerVersion);
    FETCH(SignalKeyAsReady);
    FETCH(CreateTimer);
    FETCH(StopTimer);
    FETCH(SubscribeToKeyspaceEvents);
    FETCH(SubscribeToServerEvent);
    FETCH(GetServerInfo);
    FETCH(ServerInfoGetFieldC);
    FETCH(FreeServerInfo);
    emq_probe_modes();
    emq_probe_wakeups();
    if (!api.SetModuleAttribs) return -1;
    api.SetModuleAttribs(ctx, name, version, API_V1);
    // We signal the keys we write ourselves: opening a key to read it and
    // finding nothing to do must not invalidate WATCH or client tracking.
    // A replica's async load (repl-diskless-load swapdb, skipped while a
    // loaded module does not declare it handles one) loads the primary's
    // data beside the old and swaps them: the module has no data type to
    // load, keeps nothing of a key's value between calls (its waiters and
    // timers go by a queue's name), and its timers sweep only on a primary
    // that is not loading.
    // A slot's atomic migration (Valkey 9's CLUSTER MIGRATESLOTS, refused
    // while a loaded module does not declare it handles one) copies the
    // slot's keys to the new owner as commands before it takes the slot
    // over: the module keeps no state of keys it does not read in a call,
    // so keys arriving there, or leaving here, need nothing of it.
    int options = OPTION_NO_IMPLICIT_SIGNAL_MODIFIED | OPTIONS_HANDLE_REPL_ASYNC_LOAD;
    int valkey = valkey_version(ctx);
    if (valkey >= 900) options |= OPTIONS_HANDLE_ATOMIC_SLOT_MIGRATION;
    // Valkey 9.1 moved Lua into a module whose reading of a command's reply
    // misplaces an error inside an array: the script reads a wrong table,
    // or fails, and server.call then fails in every script until a restart
    // ("recursive call detected"); emq_apply refuses a script such a reply
    scripts_misread_nested_errors = valkey >= 901;
    if (api.SetModuleOptions) api.SetModuleOptions(ctx, options);
    return 0;
}

// emq_has reports whether the server serves the API function named fn, so
// Go can degrade where an older server lacks one.
int emq_has(const char *fn) {
    void *p = NULL;
    return api.GetApi && api.GetApi(fn, &p) == API_OK && p != NULL;
}

int emq_add_acl_category(ValkeyModuleCtx *ctx, const char *name) {
    return api.AddACLCategory ? api.AddACLCategory(ctx, name) : -1;
}

void emq_log(ValkeyModuleCtx *ctx, const char *level, const char *msg) {
    if (api.Log) api.Log(ctx, level, "%s", msg);
}

const char *emq_string_ptr(ValkeyModuleString *s, size_t *len) { return api.StringPtrLen(s, len); }

// ---- constants ------------------------------------------------------------

// The strings plans name besides the call's arguments (emq.Constants).
#define MAX_CONSTANTS 96
static ValkeyModuleString *constants[MAX_CONSTANTS];
static int nconstants;

int emq_intern(const char *s, size_t len) {
    if (nconstants == MAX_CONSTANTS) return -1;
    constants[nconstants] = api.CreateString(NULL, s, len);
    return nconstants++;
}

ValkeyModuleString *emq_constant(uint32_t i) { return constants[i]; }

// release_constants drops what emq_intern made, so a reload starts clean.
static void release_constants(void) {
    for (int i = 0; i < nconstants; i++) api.FreeString(NULL, constants[i]);
    nconstants = 0;
}

// ---- commands -------------------------------------------------------------

// The most verbs the module registers; each gets a trampoline that knows
// its row, so one C→Go entry serves a whole command.
#define MAX_VERBS 32

int emq_serve(ValkeyModuleCtx *ctx, ValkeyModuleString **argv, int argc, int verb);

#define TRAMPOLINE(n) \
    static int serve##n(ValkeyModuleCtx *ctx, ValkeyModuleString **argv, int argc) { return emq_serve(ctx, argv, argc, n); }
TRAMPOLINE(0)
TRAMPOLINE(1)
TRAMPOLINE(2)
TRAMPOLINE(3)
TRAMPOLINE(4)
TRAMPOLINE(5)
TRAMPOLINE(6)
TRAMPOLINE(7)
TRAMPOLINE(8)
TRAMPOLINE(9)
TRAMPOLINE(10)
TRAMPOLINE(11)
TRAMPOLINE(12)
TRAMPOLINE(13)
TRAMPOLINE(14)
TRAMPOLINE(15)
TRAMPOLINE(16)
TRAMPOLINE(17)
TRAMPOLINE(18)
TRAMPOLINE(19)
TRAMPOLINE(20)
TRAMPOLINE(21)
TRAMPOLINE(22)
TRAMPOLINE(23)
TRAMPOLINE(24)
TRAMPOLINE(25)
TRAMPOLINE(26)
TRAMPOLINE(27)
TRAMPOLINE(28)
TRAMPOLINE(29)
TRAMPOLINE(30)
TRAMPOLINE(31)
static const cmd_func trampolines[MAX_VERBS] = {
    serve0,  serve1,  serve2,  serve3,  serve4,  serve5,  serve6,  serve7,  serve8,  serve9,  serve10,
    serve11, serve12, serve13, serve14, serve15, serve16, serve17, serve18, serve19, serve20, serve21,
    serve22, serve23, serve24, serve25, serve26, serve27, serve28, serve29, serve30, serve31};

// readonly_verbs marks the verbs created read-only, set anew by every
// load's registration.
static unsigned char readonly_verbs[MAX_VERBS];

// emq_verb_readonly reports whether verb number verb is read-only.
int emq_verb_readonly(int verb) { return verb >= 0 && verb < MAX_VERBS && readonly_verbs[verb]; }

// emq_create_command creates verb number verb. Its keys are the keys
// arguments after numkeys: first 2, last 1+keys, step 1 — fixed positions
// that cluster routing, ACL and COMMAND GETKEYS read without asking us.
// readonly says flags hold "readonly".
int emq_create_command(ValkeyModuleCtx *ctx, int verb, const char *name, const char *flags, int readonly, int keys) {
    if (verb < 0 || verb >= MAX_VERBS) return -1;
    readonly_verbs[verb] = (unsigned char)(readonly != 0);
    int first = keys > 0 ? 2 : 0, last = keys > 0 ? 1 + keys : 0, step = keys > 0 ? 1 : 0;
    return api.CreateCommand(ctx, name, trampolines[verb], flags, first, last, step);
}

// emq_set_command_info sets arity, docs and the key spec: the keys begin at
// index 2 and run keys-1 further, one after the other.
int emq_set_command_info(ValkeyModuleCtx *ctx, const char *name, const char *summary, const char *complexity,
                         const char *since, int arity, int keys, uint64_t key_flags, emq_cmd_arg *args) {
    ValkeyModuleCommand *cmd = api.GetCommand(ctx, name);
    if (!cmd || !api.SetCommandInfo) return -1;
    key_spec specs[2];
    memset(specs, 0, sizeof(specs));
    if (keys > 0) {
        specs[0].flags = key_flags;
        specs[0].begin_search_type = KSPEC_BS_INDEX;
        specs[0].bs.index.pos = 2;
        specs[0].find_keys_type = KSPEC_FK_RANGE;
        specs[0].fk.range.lastkey = keys - 1;
        specs[0].fk.range.keystep = 1;
        specs[0].fk.range.limit = 0;
    }
    command_info info = {&command_info_v1, summary, complexity, since, NULL, NULL, arity, specs, args};
    return api.SetCommandInfo(cmd, &info);
}

int emq_set_acl_categories(ValkeyModuleCtx *ctx, const char *name, const char *categories) {
    ValkeyModuleCommand *cmd = api.GetCommand(ctx, name);
    if (!cmd || !api.SetCommandACLCategories) return -1;
    return api.SetCommandACLCategories(cmd, categories);
}
