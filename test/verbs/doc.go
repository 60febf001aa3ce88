// Package verbs proves, on real servers, the rules docs/commands.md and
// docs/ids.md state for every verb: each success with the exact data it
// leaves, each refusal with its code and text and with nothing written,
// the order in which several broken rules answer; the job lifecycle, its
// schedules, its events and its parked messages; the blocking claim's
// waits, wake-ups and timers, and what holds while writes are paused;
// WATCH, differential runs against the built-in compositions the verbs
// replace, and replication to a replica that has no module.
//
// Run it with go test ./test/verbs after make build.
package verbs
