package host

/*
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"runtime/debug"
	"unsafe"

	"github.com/echomq/emq/emq"
	"github.com/echomq/emq/keys"
)

// Loader sets the module up when the server loads it: it registers
// everything the module serves.
type Loader func(m *Module) error

var loader Loader

// Serve makes load the module's OnLoad. The c-shared main calls it from init.
func Serve(load Loader) { loader = load }

// Handler serves one call of a verb: the arguments, viewed in place, and an
// empty plan to fill.
type Handler func(c *Call, args [][]byte, plan *emq.Plan)

// handlers are the registered verbs, by the number their C trampoline knows;
// sweeper is a queue's sweep, which its timer runs (no command).
var (
	handlers []Handler
	sweeper  Handler
)

// OnSweep makes h the sweep a queue's timer runs on the primary when a job
// of the queue comes due, with the queue's four sets as its keys.
func (m *Module) OnSweep(h Handler) { sweeper = h }

// Module is the server's context while the module loads, or while it tells
// the module of a config change (OnConfigChange).
type Module struct {
	ctx  *C.ValkeyModuleCtx
	argv **C.ValkeyModuleString
	argc C.int
}

// RedisModule_OnLoad is the entry a server calls when it loads the module:
// Redis by this name alone, Valkey when it finds no ValkeyModule_OnLoad.
//
//export RedisModule_OnLoad
func RedisModule_OnLoad(ctx *C.ValkeyModuleCtx, argv **C.ValkeyModuleString, argc C.int) C.int {
	return onLoad(ctx, argv, argc)
}

// ValkeyModule_OnLoad is the entry Valkey calls when it loads the module.
//
//export ValkeyModule_OnLoad
func ValkeyModule_OnLoad(ctx *C.ValkeyModuleCtx, argv **C.ValkeyModuleString, argc C.int) C.int {
	return onLoad(ctx, argv, argc)
}

// unloadRefusal is logged when the server asks to unload the module.
const unloadRefusal = "emq: refusing MODULE UNLOAD: a Go runtime cannot be unloaded from a running process"

// RedisModule_OnUnload refuses MODULE UNLOAD (onUnload), for Redis.
//
//export RedisModule_OnUnload
func RedisModule_OnUnload(ctx *C.ValkeyModuleCtx) C.int { return onUnload(ctx) }

// ValkeyModule_OnUnload refuses MODULE UNLOAD (onUnload), for Valkey.
//
//export ValkeyModule_OnUnload
func ValkeyModule_OnUnload(ctx *C.ValkeyModuleCtx) C.int { return onUnload(ctx) }

func onUnload(ctx *C.ValkeyModuleCtx) C.int {
	(&Module{ctx: ctx}).Log(Notice, unloadRefusal)
	return 1 // ERR: the server cancels the unload and the verbs keep working
}

func onLoad(ctx *C.ValkeyModuleCtx, argv **C.ValkeyModuleString, argc C.int) (rc C.int) {
	m := &Module{ctx: ctx, argv: argv, argc: argc}
	defer func() {
		if r := recover(); r != nil {
			m.Log(Warning, fmt.Sprintf("emq: load failed: %v\n%s", r, debug.Stack()))
			rc = 1
		}
	}()
	if loader == nil {
		return 1
	}
	if err := loader(m); err != nil {
		m.Log(Warning, "emq: load failed: "+err.Error())
		return 1
	}
	atLeastMinProcs()
	return 0
}

// Args returns the arguments that follow the module's path on the
// loadmodule line. Call it after Init.
func (m *Module) Args() []string {
	var args []string
	for _, s := range unsafe.Slice(m.argv, int(m.argc)) {
		var n C.size_t
		p := C.emq_string_ptr(s, &n)
		args = append(args, C.GoStringN(p, C.int(n)))
	}
	return args
}

// Init names the module and fetches the API. It fails if a module of that
// name is loaded already, or if the server does not know a built-in the
// module writes as or calls by its name.
func (m *Module) Init(name string, version int) error {
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	if C.emq_init(m.ctx, cname, C.int(version)) != 0 {
		return fmt.Errorf("a module named %s is loaded already", name)
	}
	if cmd := C.emq_unknown_builtin(m.ctx); cmd != nil {
		return fmt.Errorf("the server knows no %s command (rename-command): the module replicates its writes "+
			"as built-ins and calls some, each by its own name", C.GoString(cmd))
	}
	for kind, key := range settingsLayouts {
		head, tail := keys.Around(key.name)
		if C.emq_settings_layout(C.int(kind), cBytes(head), C.size_t(len(head)), cBytes(tail), C.size_t(len(tail)),
			cBytes(key.field), C.size_t(len(key.field)), C.int(key.access)) == 0 {
			return fmt.Errorf("the layout of the %s key, %q + queue + %q, is too long", key.name, head, tail)
		}
	}
	// A second load in one process (after a first that failed) starts from
	// clean state; a load refused above leaves the serving module alone.
	handlers, sweeper, frames, depth, infoFunc, nconfigs, yielded, called = nil, nil, nil, 0, nil, 0, 0, 0
	resetWaits()
	return nil
}

// settingsLayouts are a queue's settings keys (emq.SettingsKeys) in the
// order C numbers them: each key's name, the config field naming it, and
// the access verbs make to it.
var settingsLayouts = [C.EMQ_NUM_SETTINGS]struct {
	name, field string
	access      emq.Access
}{
	C.EMQ_SETTINGS_CONFIG:  {keys.Config, "", emq.ConfigAccess},
	C.EMQ_SETTINGS_LIMITER: {keys.Limiter, emq.LimiterField, emq.LimiterAccess},
	C.EMQ_SETTINGS_EVENTS:  {keys.Events, emq.EventsField, emq.EventsAccess},
}

// Has reports whether the server serves the module API function name (as in
// "RedisModule_AddACLCategory").
func (m *Module) Has(name string) bool {
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	return C.emq_has(cname) != 0
}

// ServerInfo returns field of INFO section (as "maxmemory_policy" of
// "memory"), or "" when the server has no such field.
func (m *Module) ServerInfo(section, field string) string {
	csection, cfield := C.CString(section), C.CString(field)
	defer C.free(unsafe.Pointer(csection))
	defer C.free(unsafe.Pointer(cfield))
	var buf [128]C.char
	n := C.emq_server_info(m.ctx, csection, cfield, &buf[0], C.size_t(len(buf)))
	if n < 0 {
		return ""
	}
	return C.GoStringN(&buf[0], n)
}

var configChanged func(*Module, []string)

// OnConfigChange registers f, called after each CONFIG SET with the names of
// the configs it set, on a Module for the server's context of the event.
func (m *Module) OnConfigChange(f func(m *Module, names []string)) error {
	configChanged = f // before the subscription: no event finds it unset
	if C.emq_subscribe_config(m.ctx) != 0 {
		return errors.New("cannot subscribe to config changes")
	}
	return nil
}

//export emqConfigChanged
func emqConfigChanged(ctx *C.ValkeyModuleCtx, names **C.char, n C.uint32_t) {
	guard(ctx, "config changed", nil, func() {
		injectPanic("config changed")
		set := make([]string, n)
		for i, name := range unsafe.Slice(names, int(n)) {
			set[i] = C.GoString(name)
		}
		configChanged(&Module{ctx: ctx}, set)
	})
}

// Level is a server log level.
type Level string

// The log levels the module uses.
const (
	Notice  Level = "notice"
	Warning Level = "warning"
)

// Log writes msg to the server log.
func (m *Module) Log(level Level, msg string) { logf(m.ctx, level, msg) }

func logf(ctx *C.ValkeyModuleCtx, level Level, msg string) {
	clevel, cmsg := C.CString(string(level)), C.CString(msg)
	defer C.free(unsafe.Pointer(clevel))
	defer C.free(unsafe.Pointer(cmsg))
	C.emq_log(ctx, clevel, cmsg)
}

// AddACLCategory adds an ACL category the module's commands can be put in.
func (m *Module) AddACLCategory(name string) error {
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	if C.emq_add_acl_category(m.ctx, cname) != 0 {
		return fmt.Errorf("cannot add ACL category %s", name)
	}
	return nil
}

// Intern makes the strings plans refer to by negative emq.Ref, in order.
func (m *Module) Intern(strs []string) error {
	for _, s := range strs {
		cs := C.CString(s)
		i := C.emq_intern(cs, C.size_t(len(s)))
		C.free(unsafe.Pointer(cs))
		if i < 0 {
			return errors.New("too many interned strings")
		}
	}
	return nil
}
