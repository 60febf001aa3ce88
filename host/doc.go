// Package host is the module's only binding to the Valkey module API, and
// the only package that uses cgo or unsafe.
//
// The C side fetches just the API functions the module uses, by name
// (api.c), and does each key operation of a verb in one call: open and learn
// the types (call.c), or make a plan's writes, replicate them as the
// built-ins they stand for, fire their keyspace events, signal the keys, and
// reply (apply.c); shim.h declares what Go and C share. The Go side
// gives those calls Go types: [Module] for loading and registering, [Call]
// for one command in flight (it implements emq.Server), [Info] for INFO.
//
// A command crosses from C into Go once: the C handler views all of argv,
// then calls the Go handler, which reads the arguments in place (no copy)
// and crosses back only to open keys and to apply its plan.
//
// A blocking verb (EMQ.BCLAIM) whose plan asks to wait keeps its client
// blocked on a key (wait.go, wait.c); the server enters Go the same way
// when the key is signalled, running the verb again as a wake-up.
package host
