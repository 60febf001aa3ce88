// admin.c — the module's configs (emq.<name>), its INFO section, and the
// server's config changes it follows.
#include <stdint.h>

#include "api.h"
#include "_cgo_export.h"

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

// config_change is valkeymodule.h's ValkeyModuleConfigChangeV1: the data
// of a config change event.
typedef struct {
    uint64_t version;
    uint32_t num_changes;
    const char **config_names;
} config_change;

// on_config_change runs on the main thread after a CONFIG SET, never in a
// forked child or from a crash report.
static void on_config_change(ValkeyModuleCtx *ctx, server_event e, uint64_t sub, void *data) {
    if (e.id != EVENT_CONFIG || sub != SUBEVENT_CONFIG_CHANGE || !data) return;
    const config_change *cc = data;
    emqConfigChanged(ctx, (char **)cc->config_names, cc->num_changes);
}

int emq_subscribe_config(ValkeyModuleCtx *ctx) {
    if (!api.SubscribeToServerEvent) return -1;
    return api.SubscribeToServerEvent(ctx, (server_event){EVENT_CONFIG, 1}, on_config_change);
}
