// Package emq holds the EchoMQ verbs: each one parses its arguments, checks
// every rule docs/commands.md states for it, reads what it must from the
// keyspace and fills a [Plan] — the built-in writes that carry its effect,
// in order, and its reply — which the [Server] applies.
//
// A verb reads top to bottom as one pipeline:
//
//   - shape: the argument counts and numbers (EMQSHAPE);
//   - fence: every rule decidable from the arguments alone — key layouts
//     (EMQLAYOUT), ids and their namespaces (EMQKIND), keys agreeing with each
//     other and with id arguments (EMQLAYOUT), the envelope (EMQENVELOPE);
//   - reads: key types (WRONGTYPE), the keys a verb derives (NOPERM,
//     TRYAGAIN), stored values and states (EMQCOUNT, EMQORDER, EMQNOJOB,
//     EMQLEASE, EMQSTATE, NOGROUP);
//   - plan: the writes and the reply, as data (the Plan of the [Call]);
//   - apply: one call into the [Server] ([Server.Apply]), which makes the
//     plan's writes and replies.
//
// Every refusal is decided before apply, so a refused call writes nothing;
// the checks only a write can make — an append not above its stream's top,
// an events stream that takes no entry — are made by apply before any
// other write, and refuse the call with nothing written.
// The package never touches the server itself: [Server] is the whole of
// what a verb needs from it, which keeps the verbs testable and fuzzable
// without one.
package emq
