// api.h — the module API functions the C side calls, fetched by name at
// load (api.c), and what the C files share beyond shim.h. Only C includes it.
#ifndef EMQ_API_H
#define EMQ_API_H

#include "shim.h"

typedef struct ValkeyModuleCommand ValkeyModuleCommand;
typedef struct ValkeyModuleCallReply ValkeyModuleCallReply;
typedef struct ValkeyModuleScanCursor ValkeyModuleScanCursor;
typedef struct ValkeyModuleServerInfoData ValkeyModuleServerInfoData;

// Module API constants we use (valkeymodule.h).
#define API_OK 0
#define OPEN_READ (1 << 0)
#define OPEN_WRITE (1 << 1)
#define OPEN_KEY_NONOTIFY (1 << 17)
#define OPEN_KEY_NOSTATS (1 << 18)
#define OPEN_KEY_NOEXPIRE (1 << 19)
#define ZADD_ADDED (1 << 2)
#define ZADD_UPDATED (1 << 3)
#define NOTIFY_GENERIC (1 << 2)
#define NOTIFY_STRING (1 << 3)
#define NOTIFY_HASH (1 << 6)
#define NOTIFY_ZSET (1 << 7)
#define NOTIFY_STREAM (1 << 10)
#define HASH_DELETE ((ValkeyModuleString *)(long)1)
#define STREAM_ADD_AUTOID (1 << 0)
#define STREAM_ITERATOR_REVERSE (1 << 1)
#define STREAM_TRIM_APPROX (1 << 0)
#define CTX_FLAGS_LUA (1 << 0)
#define CTX_FLAGS_MULTI (1 << 1)
#define CTX_FLAGS_PRIMARY (1 << 2)
#define CTX_FLAGS_CLUSTER (1 << 5)
#define CTX_FLAGS_EVICT (1 << 9)
#define CTX_FLAGS_OOM (1 << 10)
#define CTX_FLAGS_LOADING (1 << 13)
#define CTX_FLAGS_DENY_BLOCKING (1 << 21)
#define CTX_FLAGS_ASYNC_LOADING (1 << 23)
#define CLIENTINFO_FLAG_TRACKING (1 << 3)
#define REPLY_STRING 0
#define REPLY_ERROR 1
#define REPLY_ARRAY 3

typedef int (*cmd_func)(ValkeyModuleCtx *, ValkeyModuleString **, int);

// A client's info (valkeymodule.h's ValkeyModuleClientInfo, version 1).
typedef struct {
    uint64_t version, flags, id;
    char addr[46];
    uint16_t port, db;
} client_info;

// A server event (valkeymodule.h's ValkeyModuleEvent, passed by value), and
// those the module subscribes to: a CONFIG SET, a SWAPDB, the event loop.
typedef struct {
    uint64_t id, dataver;
} server_event;
#define EVENT_SWAPDB 11
#define EVENT_EVENTLOOP 15
#define EVENT_CONFIG 16
#define SUBEVENT_CONFIG_CHANGE 0
#define SUBEVENT_EVENTLOOP_BEFORE_SLEEP 0
#define SUBEVENT_EVENTLOOP_AFTER_SLEEP 1
typedef void (*server_event_func)(ValkeyModuleCtx *, server_event, uint64_t, void *);

typedef struct {
    int (*GetApi)(const char *, void *);
    void (*SetModuleAttribs)(ValkeyModuleCtx *, const char *, int, int);
    void (*SetModuleOptions)(ValkeyModuleCtx *, int);
    int (*CreateCommand)(ValkeyModuleCtx *, const char *, cmd_func, const char *, int, int, int);
    ValkeyModuleCommand *(*GetCommand)(ValkeyModuleCtx *, const char *);
    int (*SetCommandInfo)(ValkeyModuleCommand *, const void *);
    int (*SetCommandACLCategories)(ValkeyModuleCommand *, const char *);
    int (*AddACLCategory)(ValkeyModuleCtx *, const char *);
    const char *(*StringPtrLen)(const ValkeyModuleString *, size_t *);
    int (*StringToLongLong)(const ValkeyModuleString *, long long *);
    ValkeyModuleString *(*CreateString)(ValkeyModuleCtx *, const char *, size_t);
    void (*RetainString)(ValkeyModuleCtx *, ValkeyModuleString *);
    void (*FreeString)(ValkeyModuleCtx *, ValkeyModuleString *);
    ValkeyModuleKey *(*OpenKey)(ValkeyModuleCtx *, ValkeyModuleString *, int);
    void (*CloseKey)(ValkeyModuleKey *);
    int (*KeyType)(ValkeyModuleKey *);
    int (*GetOpenKeyModesAll)(void);
    long long (*GetAbsExpire)(ValkeyModuleKey *);
    long long (*StreamTrimByLength)(ValkeyModuleKey *, int, long long);
    size_t (*ValueLength)(ValkeyModuleKey *);
    int (*DeleteKey)(ValkeyModuleKey *);
    char *(*StringDMA)(ValkeyModuleKey *, size_t *, int);
    int (*StringTruncate)(ValkeyModuleKey *, size_t);
    int (*SetAbsExpire)(ValkeyModuleKey *, long long);
    int (*HashSet)(ValkeyModuleKey *, int, ...);
    int (*HashGet)(ValkeyModuleKey *, int, ...);
    ValkeyModuleScanCursor *(*ScanCursorCreate)(void);
    void (*ScanCursorDestroy)(ValkeyModuleScanCursor *);
    int (*ScanKey)(ValkeyModuleKey *, ValkeyModuleScanCursor *,
                   void (*)(ValkeyModuleKey *, ValkeyModuleString *, ValkeyModuleString *, void *), void *);
    int (*ZsetAdd)(ValkeyModuleKey *, double, ValkeyModuleString *, int *);
    int (*ZsetRem)(ValkeyModuleKey *, ValkeyModuleString *, int *);
    int (*ZsetFirstInScoreRange)(ValkeyModuleKey *, double, double, int, int);
    ValkeyModuleString *(*ZsetRangeCurrentElement)(ValkeyModuleKey *, double *);
    int (*ZsetRangeNext)(ValkeyModuleKey *);
    void (*ZsetRangeStop)(ValkeyModuleKey *);
    int (*ZsetScore)(ValkeyModuleKey *, ValkeyModuleString *, double *);
    int (*StreamAdd)(ValkeyModuleKey *, int, uint64_t *, ValkeyModuleString **, int64_t);
    int (*StreamIteratorStart)(ValkeyModuleKey *, int, uint64_t *, uint64_t *);
    int (*StreamIteratorStop)(ValkeyModuleKey *);
    int (*StreamIteratorNextID)(ValkeyModuleKey *, uint64_t *, long *);
    int (*StreamIteratorNextField)(ValkeyModuleKey *, ValkeyModuleString **, ValkeyModuleString **);
    int (*Replicate)(ValkeyModuleCtx *, const char *, const char *, ...);
    int (*NotifyKeyspaceEvent)(ValkeyModuleCtx *, int, const char *, ValkeyModuleString *);
    int (*SignalModifiedKey)(ValkeyModuleCtx *, ValkeyModuleString *);
    long long (*Milliseconds)(void);
    uint64_t (*MonotonicMicroseconds)(void);
    ValkeyModuleCallReply *(*Call)(ValkeyModuleCtx *, const char *, const char *, ...);
    int (*CallReplyType)(ValkeyModuleCallReply *);
    size_t (*CallReplyLength)(ValkeyModuleCallReply *);
    ValkeyModuleCallReply *(*CallReplyArrayElement)(ValkeyModuleCallReply *, size_t);
    const char *(*CallReplyStringPtr)(ValkeyModuleCallReply *, size_t *);
    void (*FreeCallReply)(ValkeyModuleCallReply *);
    int (*ReplyWithCallReply)(ValkeyModuleCtx *, ValkeyModuleCallReply *);
    int (*ReplyWithError)(ValkeyModuleCtx *, const char *);
    int (*ReplyWithLongLong)(ValkeyModuleCtx *, long long);
    int (*ReplyWithArray)(ValkeyModuleCtx *, long);
    int (*ReplyWithNullArray)(ValkeyModuleCtx *);
    int (*ReplyWithNull)(ValkeyModuleCtx *);
    int (*ReplyWithStringBuffer)(ValkeyModuleCtx *, const char *, size_t);
    ValkeyModuleString *(*GetCurrentUserName)(ValkeyModuleCtx *);
    unsigned long long (*GetClientId)(ValkeyModuleCtx *);
    int (*GetClientInfoById)(void *, uint64_t);
    ValkeyModuleString *(*GetClientUserNameById)(ValkeyModuleCtx *, uint64_t);
    ValkeyModuleUser *(*GetModuleUserFromUserName)(ValkeyModuleString *);
    int (*ACLCheckKeyPermissions)(ValkeyModuleUser *, ValkeyModuleString *, int);
    int (*ACLCheckCommandPermissions)(ValkeyModuleUser *, ValkeyModuleString **, int);
    int (*ACLCheckPermissions)(ValkeyModuleUser *, ValkeyModuleString **, int, int, int *); // Valkey 9.1
    void (*FreeModuleUser)(ValkeyModuleUser *);
    int (*ACLAddLogEntry)(ValkeyModuleCtx *, ValkeyModuleUser *, ValkeyModuleString *, int);
    void (*Log)(ValkeyModuleCtx *, const char *, const char *, ...);
    void *(*Alloc)(size_t);
    void *(*Realloc)(void *, size_t);
    void (*Free)(void *);
    int (*RegisterInfoFunc)(ValkeyModuleCtx *, void (*)(ValkeyModuleInfoCtx *, int));
    int (*InfoAddSection)(ValkeyModuleInfoCtx *, const char *);
    int (*InfoAddFieldLongLong)(ValkeyModuleInfoCtx *, const char *, long long);
    int (*RegisterNumericConfig)(ValkeyModuleCtx *, const char *, long long, unsigned int, long long, long long,
                                 long long (*)(const char *, void *),
                                 int (*)(const char *, long long, void *, ValkeyModuleString **),
                                 int (*)(ValkeyModuleCtx *, void *, ValkeyModuleString **), void *);
    int (*LoadConfigs)(ValkeyModuleCtx *);
    // blocking verbs and their timers (wait.c)
    int (*GetContextFlags)(ValkeyModuleCtx *);
    int (*AvoidReplicaTraffic)(void);
    int (*GetSelectedDb)(ValkeyModuleCtx *);
    int (*SelectDb)(ValkeyModuleCtx *, int);
    ValkeyModuleBlockedClient *(*BlockClientOnKeys)(ValkeyModuleCtx *, cmd_func, cmd_func,
                                                    void (*)(ValkeyModuleCtx *, void *), long long, ValkeyModuleString **,
                                                    int, void *);
    void *(*GetBlockedClientPrivateData)(ValkeyModuleCtx *);
    int (*UnblockClient)(ValkeyModuleBlockedClient *, void *);
    int (*GetServerVersion)(void);
    ValkeyModuleString *(*GetBlockedClientReadyKey)(ValkeyModuleCtx *);
    void (*SignalKeyAsReady)(ValkeyModuleCtx *, ValkeyModuleString *);
    uint64_t (*CreateTimer)(ValkeyModuleCtx *, long long, void (*)(ValkeyModuleCtx *, void *), void *);
    int (*StopTimer)(ValkeyModuleCtx *, uint64_t, void **);
    int (*SubscribeToKeyspaceEvents)(ValkeyModuleCtx *, int,
                                     int (*)(ValkeyModuleCtx *, int, const char *, ValkeyModuleString *));
    int (*SubscribeToServerEvent)(ValkeyModuleCtx *, server_event, server_event_func);
    ValkeyModuleServerInfoData *(*GetServerInfo)(ValkeyModuleCtx *, const char *);
    const char *(*ServerInfoGetFieldC)(ValkeyModuleServerInfoData *, const char *);
    void (*FreeServerInfo)(ValkeyModuleCtx *, ValkeyModuleServerInfoData *);
} emq_api;

// api is the table emq_init fills; a function the server lacks stays NULL.
extern emq_api api;

// scripts_misread_nested_errors is whether the server's scripts misread an
// error element inside a command's reply (api.c, emq_init).
extern int scripts_misread_nested_errors;

// emq_release_settings_names drops call.c's caches of settings key names.
void emq_release_settings_names(void);
// emq_forget_clients forgets the client whose user call.c found last.
void emq_forget_clients(void);
// emq_forget_passes forgets wait.c's event-loop passes.
void emq_forget_passes(void);

// emq_probe_modes sets the modes call.c looks for a queue's config with,
// from what the server serves (at load).
void emq_probe_modes(void);

// emq_probe_wakeups learns whether the server offers a key's waiters a key
// that is gone, for wait.c (at load).
void emq_probe_wakeups(void);

// emq_write_refused returns the server's refusal of a write to key now —
// NOREPLICAS, MISCONF, READONLY, MASTERDOWN — or NULL (wait.c); the caller
// frees it.
ValkeyModuleCallReply *emq_write_refused(ValkeyModuleCtx *ctx, ValkeyModuleString *key);

// constant returns the string interned as emq.Constants[i].
ValkeyModuleString *emq_constant(uint32_t i);

// emq_stream_id writes a stream ID's text, <ms>-<seq>, and a NUL into buf
// (48 bytes), returning its length.
int emq_stream_id(char *buf, uint64_t ms, uint64_t seq);

// emq_verb_readonly reports whether verb number verb was created
// read-only (api.c).
int emq_verb_readonly(int verb);

#endif
