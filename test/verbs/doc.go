// Package verbs proves, on real servers, every rule of the four write verbs
// and EMQ.CAPS (docs/commands.md, docs/ids.md): each success with the exact
// data it leaves, each refusal with its code and text and with nothing
// written, the order in which several broken rules answer, wake-ups and
// WATCH, differential runs against the built-in compositions the verbs
// replace, and replication to a replica that has no module.
//
// Run it with go test ./test/verbs after make build.
package verbs
