// Package emq holds the EchoMQ verbs: each one parses its arguments, checks
// every rule docs/commands.md states for it, reads what it must from the
// keyspace and returns a [Plan] — the built-in writes that carry its effect,
// in order.
//
// A verb reads top to bottom as one pipeline:
//
//   - shape: the argument counts and numbers (EMQSHAPE);
//   - fence: every rule decidable from the arguments alone — key layouts
//     (EMQLAYOUT), ids and their namespaces (EMQKIND), keys agreeing with each
//     other and with id arguments (EMQLAYOUT), the envelope (EMQENVELOPE);
//   - reads: key types (WRONGTYPE) and stored values (EMQCOUNT, EMQORDER);
//   - plan: the writes, as data;
//   - apply: one call into the [Server], which makes every write of the plan
//     or none.
//
// Every refusal is decided before apply, so a refused call writes nothing.
// The package never touches the server itself: [Server] is the whole of
// what a verb needs from it, which keeps the verbs testable and fuzzable
// without one.
package emq
