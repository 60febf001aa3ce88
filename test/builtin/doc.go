// Package builtin proves, against real valkey-server processes on loopback,
// that the emq verbs behave like built-in commands inside a server, as
// docs/commands.md promises: replicas and AOF replays without the module
// apply their effects, save points and forks keep working, cluster routing,
// ACL, out-of-memory, transactions, scripts, keyspace notifications,
// tracking, MONITOR, SLOWLOG and the module's lifecycle all treat them as
// they treat HSET or XADD.
//
// The suites are short by default (the package runs in well under five
// minutes on two cores); EMQ_SOAK=1 lengthens the fork and workload loops.
package builtin
