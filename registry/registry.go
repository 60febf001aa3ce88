// Package registry is the module's command table: one row per verb, holding
// everything the server and its users are told about it beside what the
// verb itself declares (package emq's [emq.Verb]: name, arity, key count,
// capability token, check, handler) — flags, key flags, ACL categories and
// docs. Nothing about a verb is registered from anywhere else; EMQ.CAPS's
// tokens, INFO's counters and the tests' lists of verbs all come from it.
package registry

import (
	"strings"

	"github.com/echomq/emq/emq"
	"github.com/echomq/emq/host"
)

// Row is one verb: the verb and what the server is told about it. Name,
// Arity and Keys in the spec come from the verb.
type Row struct {
	host.CommandSpec
	Verb *emq.Verb
}

// ModuleName is the name the module registers as (MODULE LIST, INFO emq,
// emq.<config>); ACLCategory is the ACL category every verb sits in.
const (
	ModuleName  = "emq"
	ACLCategory = "emq"
)

// The module versions that introduced the verbs, as COMMAND DOCS shows.
const (
	since01 = "0.1.0"
	since02 = "0.2.0"
	since03 = "0.3.0"
)

// The arguments several verbs share.
var (
	numkeysArg = host.ArgSpec{Name: "numkeys", Type: host.ArgInteger, Summary: "the number of keys that follow"}
	entryBlock = []host.ArgSpec{
		{Name: "id", Type: host.ArgString, Summary: "the EVT id of the entry"},
		{Name: "pairs", Type: host.ArgInteger, Summary: "the number of field/value pairs"},
		{Name: "data", Type: host.ArgBlock, Multiple: true, Sub: []host.ArgSpec{
			{Name: "field", Type: host.ArgString},
			{Name: "value", Type: host.ArgString},
		}},
	}
)

// key documents a key argument by its layout.
func key(name, layout string) host.ArgSpec {
	return host.ArgSpec{Name: name, Type: host.ArgKey, Summary: layout}
}

// queueSets documents a queue's set keys, by set name.
func queueSets(sets ...string) []host.ArgSpec {
	out := make([]host.ArgSpec, len(sets))
	for i, set := range sets {
		out[i] = key(set+"_key", "emq:{<queue>}:"+set)
	}
	return out
}

// integer documents an integer argument.
func integer(name, summary string) host.ArgSpec {
	return host.ArgSpec{Name: name, Type: host.ArgInteger, Summary: summary}
}

// The counts a claim takes: a claim's, and SETTLE's, which may settle only.
const (
	claimCount  = "the most jobs to claim, 1 to 1000"
	settleCount = "the most jobs to claim after settling, 0 to 1000 (0: settle only)"
)

// claimArgs documents a claim's arguments, its count as count says,
// followed by more.
func claimArgs(count string, more ...host.ArgSpec) []host.ArgSpec {
	args := append([]host.ArgSpec{numkeysArg}, queueSets("pending", "active", "delayed", "dead")...)
	args = append(args,
		integer("lease_ms", "the lease, in ms"),
		integer("count", count),
		integer("max_attempts", "a job claimed this many times goes to dead instead"))
	return append(args, more...)
}

// controlArgs documents a queue setting verb's keys: the config, then
// the key named second.
func controlArgs(second string) []host.ArgSpec {
	return []host.ArgSpec{numkeysArg, key("config_key", "emq:{<queue>}:config"), key(second+"_key", "emq:{<queue>}:"+second)}
}

// testRows are verbs a test build adds after the table (build tag emqtest);
// a release build has none.
var testRows []Row

// table is the command table, EMQ.CAPS aside (Rows adds it last).
var table = []Row{
	{
		Verb: emq.Enqueue,
		CommandSpec: host.CommandSpec{
			Flags: "write deny-oom fast", ACL: "write fast",
			KeyFlags:   host.KeyRW | host.KeyInsert,
			Summary:    "Admits a job: writes its row and adds it to the pending set, or replies 0 if it exists.",
			Complexity: "O(log(N)) where N is the number of pending jobs.",
			Since:      since01,
			Args: []host.ArgSpec{numkeysArg,
				key("job_key", "emq:{<queue>}:job:<JOB id>"),
				key("pending_key", "emq:{<queue>}:pending"),
				{Name: "id", Type: host.ArgString, Summary: "the JOB id"},
				{Name: "payload", Type: host.ArgString, Summary: "the job's payload"},
			},
		},
	},
	{
		Verb: emq.Append,
		CommandSpec: host.CommandSpec{
			Flags: "write deny-oom", ACL: "write slow",
			KeyFlags:   host.KeyRW | host.KeyUpdate,
			Summary:    "Appends a batch of entries to a stream, all of them or none.",
			Complexity: "O(M) where M is the number of fields in the batch.",
			Since:      since01,
			Args: []host.ArgSpec{numkeysArg,
				key("key", "emq:{<topic>}:stream:<sname>"),
				integer("n", "the number of entries"),
				{Name: "entry", Type: host.ArgBlock, Multiple: true, Sub: entryBlock},
			},
		},
	},
	{
		Verb: emq.Publish,
		CommandSpec: host.CommandSpec{
			Flags: "write deny-oom fast", ACL: "write fast",
			KeyFlags:   host.KeyRW | host.KeyUpdate,
			Summary:    "Publishes one envelope (msg and payload fields) to a topic's msgs stream.",
			Complexity: "O(M) where M is the number of fields of the envelope.",
			Since:      since01,
			Args: []host.ArgSpec{numkeysArg,
				key("key", "emq:{<topic>}:stream:msgs"),
				integer("n", "always 1"),
				{Name: "entry", Type: host.ArgBlock, Sub: entryBlock},
			},
		},
	},
	{
		Verb: emq.FailuresIncr,
		CommandSpec: host.CommandSpec{
			Flags: "write deny-oom fast", ACL: "write fast",
			KeyFlags:   host.KeyRW | host.KeyAccess | host.KeyUpdate,
			Summary:    "Counts a failure of a message for a subscriber and sets the count's TTL.",
			Complexity: "O(1)",
			Since:      since01,
			Args: []host.ArgSpec{numkeysArg,
				key("key", "emq:{<topic>}:fail:<SUB id>:<MSG id>"),
				integer("fail_ttl_ms", "the TTL in ms, rounded up to seconds"),
			},
		},
	},
	{
		Verb: emq.Claim,
		CommandSpec: host.CommandSpec{
			Flags: "write fast", ACL: "write fast",
			KeyFlags:   host.KeyRW | host.KeyAccess | host.KeyUpdate,
			Summary:    "Claims up to count jobs under a lease, after promoting due delayed jobs and requeueing stalled ones.",
			Complexity: "O((count + B) * log(N)) where B is emq.sweep-batch and N the size of the queue's sets.",
			Since:      since02,
			Args:       claimArgs(claimCount),
		},
	},
	{
		Verb: emq.BClaim,
		CommandSpec: host.CommandSpec{
			Flags: "write blocking", ACL: "write slow blocking",
			KeyFlags:   host.KeyRW | host.KeyAccess | host.KeyUpdate,
			Summary:    "Claims as EMQ.CLAIM does; when nothing is claimable, blocks until a job is or the timeout passes.",
			Complexity: "O((count + B) * log(N)) per turn where B is emq.sweep-batch and N the size of the queue's sets.",
			Since:      since02,
			Args:       claimArgs(claimCount, integer("timeout_ms", "how long to wait, in ms; 0 waits forever")),
		},
	},
	{
		Verb: emq.Extend,
		CommandSpec: host.CommandSpec{
			Flags: "write fast", ACL: "write fast",
			KeyFlags:   host.KeyRW | host.KeyAccess | host.KeyUpdate,
			Summary:    "Extends the lease of a job active under the given attempt; replies the new deadline.",
			Complexity: "O(log(N)) where N is the number of active jobs.",
			Since:      since02,
			Args: []host.ArgSpec{numkeysArg, key("job_key", "emq:{<queue>}:job:<JOB id>"), key("active_key", "emq:{<queue>}:active"),
				integer("attempt", "the attempt the claim handed out: the lease token"),
				integer("lease_ms", "the new lease, from now, in ms")},
		},
	},
	{
		Verb: emq.Ack,
		CommandSpec: host.CommandSpec{
			Flags: "write fast", ACL: "write fast",
			KeyFlags:   host.KeyRW | host.KeyAccess | host.KeyUpdate,
			Summary:    "Acknowledges a job active under the given attempt: deletes its row, or keeps it done for keep_ms, with its result.",
			Complexity: "O(log(N)) where N is the number of active jobs.",
			Since:      since02,
			Args: []host.ArgSpec{numkeysArg, key("job_key", "emq:{<queue>}:job:<JOB id>"), key("active_key", "emq:{<queue>}:active"),
				integer("attempt", "the attempt the claim handed out: the lease token"),
				integer("keep_ms", "how long to keep the finished row; 0 deletes it"),
				{Name: "result", Type: host.ArgString, Summary: "what the job returned, kept in the row (since 0.3.0; needs keep_ms > 0)", Optional: true}},
		},
	},
	{
		Verb: emq.Fail,
		CommandSpec: host.CommandSpec{
			Flags: "write fast", ACL: "write fast",
			KeyFlags:   host.KeyRW | host.KeyAccess | host.KeyUpdate,
			Summary:    "Fails a job active under the given attempt: to pending, to delayed after a backoff, or to dead.",
			Complexity: "O(log(N)) where N is the size of the queue's sets.",
			Since:      since02,
			Args: append(append([]host.ArgSpec{numkeysArg, key("job_key", "emq:{<queue>}:job:<JOB id>")},
				queueSets("pending", "active", "delayed", "dead")...),
				integer("attempt", "the attempt the claim handed out: the lease token"),
				integer("backoff_ms", "0 retries now; else the job is delayed this long"),
				integer("max_attempts", "a job with this many attempts goes to dead"),
				host.ArgSpec{Name: "error", Type: host.ArgString, Summary: "why it failed, kept in the row"}),
		},
	},
	{
		Verb: emq.StalledCheck,
		CommandSpec: host.CommandSpec{
			Flags: "write", ACL: "write slow",
			KeyFlags:   host.KeyRW | host.KeyAccess | host.KeyUpdate,
			Summary:    "Requeues at most limit active jobs whose lease passed; replies how many.",
			Complexity: "O(L * log(N)) where L is the limit and N the size of the queue's sets.",
			Since:      since02,
			Args: append(append([]host.ArgSpec{numkeysArg}, queueSets("pending", "active")...),
				integer("limit", "the most jobs to requeue, 1 to 100000")),
		},
	},
	{
		Verb: emq.Revive,
		CommandSpec: host.CommandSpec{
			Flags: "write deny-oom fast", ACL: "write fast",
			KeyFlags:   host.KeyRW | host.KeyAccess | host.KeyUpdate,
			Summary:    "Brings a dead job back to pending with a fresh budget of attempts (its attempts kept: tokens never repeat).",
			Complexity: "O(log(N)) where N is the size of the queue's sets.",
			Since:      since02,
			Args: append([]host.ArgSpec{numkeysArg, key("job_key", "emq:{<queue>}:job:<JOB id>")},
				queueSets("pending", "dead")...),
		},
	},
	{
		Verb: emq.Park,
		CommandSpec: host.CommandSpec{
			Flags: "write deny-oom", ACL: "write slow",
			KeyFlags: host.KeyRW | host.KeyAccess | host.KeyUpdate,
			Summary: "Dead-letters a pending stream entry its consumer owns, acknowledges it and deletes its " +
				"failure count, or replies nil if it is not pending.",
			Complexity: "O(F + log(N)) where F is the number of fields of the entry and N the group's pending entries.",
			Since:      since02,
			Args: []host.ArgSpec{numkeysArg,
				key("source_key", "emq:{<topic>}:stream:<sname>"),
				key("dlq_key", "emq:{<topic>}:stream:<dlq sname>"),
				key("fail_key", "emq:{<topic>}:fail:<SUB id>:<MSG id>"),
				{Name: "group", Type: host.ArgString, Summary: "the consumer group"},
				{Name: "consumer", Type: host.ArgString, Summary: "the consumer that owns the entry"},
				{Name: "entry_id", Type: host.ArgString, Summary: "the entry's stream ID, <ms>-<seq>"},
				{Name: "id", Type: host.ArgString, Summary: "the EVT id of the dead-letter entry"},
				{Name: "reason", Type: host.ArgString, Summary: "why the message is parked"},
			},
		},
	},
	{
		Verb: emq.Schedule,
		CommandSpec: host.CommandSpec{
			Flags: "write deny-oom fast", ACL: "write fast",
			KeyFlags:   host.KeyRW | host.KeyInsert,
			Summary:    "Admits a job at a priority, now or at a time: to pending or to delayed; replies 0 if it exists.",
			Complexity: "O(log(N)) where N is the size of the set the job joins.",
			Since:      since03,
			Args: append(append([]host.ArgSpec{numkeysArg, key("job_key", "emq:{<queue>}:job:<JOB id>")},
				queueSets("pending", "delayed")...),
				host.ArgSpec{Name: "id", Type: host.ArgString, Summary: "the JOB id"},
				host.ArgSpec{Name: "payload", Type: host.ArgString, Summary: "the job's payload"},
				integer("priority", "0 to 2147483647; lower is claimed first"),
				integer("at_ms", "Unix ms to admit it at; 0 or a past time admits it now")),
		},
	},
	{
		Verb: emq.Pause,
		CommandSpec: host.CommandSpec{
			Flags: "write fast", ACL: "write fast",
			KeyFlags:   host.KeyRW | host.KeyUpdate,
			Summary:    "Pauses a queue: its claims sweep but claim nothing; replies 0 if it was paused.",
			Complexity: "O(1)",
			Since:      since03,
			Args:       controlArgs("pending"),
		},
	},
	{
		Verb: emq.Resume,
		CommandSpec: host.CommandSpec{
			Flags: "write fast", ACL: "write fast",
			KeyFlags:   host.KeyRW | host.KeyUpdate,
			Summary:    "Resumes a paused queue and wakes its waiting workers; replies 0 if it was not paused.",
			Complexity: "O(1)",
			Since:      since03,
			Args:       controlArgs("pending"),
		},
	},
	{
		Verb: emq.Limit,
		CommandSpec: host.CommandSpec{
			Flags: "write fast", ACL: "write fast",
			KeyFlags:   host.KeyRW | host.KeyUpdate,
			Summary:    "Limits a queue's claims to max jobs per window_ms; max 0 removes the limit.",
			Complexity: "O(1)",
			Since:      since03,
			Args: append(controlArgs("pending"),
				integer("max", "jobs per window, 0 to 1000000; 0 removes the limit"),
				integer("window_ms", "the window, 1 to 2147483647 ms")),
		},
	},
	{
		Verb: emq.Events,
		CommandSpec: host.CommandSpec{
			Flags: "write fast", ACL: "write fast",
			KeyFlags:   host.KeyRW | host.KeyUpdate,
			Summary:    "Turns a queue's lifecycle events stream on, capped at about cap entries, or off with cap 0.",
			Complexity: "O(1)",
			Since:      since03,
			Args:       append(controlArgs("events"), integer("cap", "the stream's cap, MAXLEN ~; 0 turns events off")),
		},
	},
	{
		Verb: emq.Remove,
		CommandSpec: host.CommandSpec{
			Flags: "write fast", ACL: "write fast",
			KeyFlags:   host.KeyRW | host.KeyAccess | host.KeyDelete,
			Summary:    "Removes a job whatever its state: its row and its entry in every set; replies 0 if there is none.",
			Complexity: "O(log(N)) where N is the size of the queue's sets.",
			Since:      since03,
			Args: append([]host.ArgSpec{numkeysArg, key("job_key", "emq:{<queue>}:job:<JOB id>")},
				queueSets("pending", "active", "delayed", "dead")...),
		},
	},
	{
		Verb: emq.Settle,
		CommandSpec: host.CommandSpec{
			Flags: "write", ACL: "write slow",
			KeyFlags:   host.KeyRW | host.KeyAccess | host.KeyUpdate,
			Summary:    "Settles the jobs a worker finished (ACK, DONE with a result, FAIL) or gives back unstarted (RELEASE) and claims the next ones, in one turn.",
			Complexity: "O((n + count + B) * log(N)) where n is the settlements, B emq.sweep-batch and N the size of the queue's sets.",
			Since:      since03,
			Args: append(claimArgs(settleCount), integer("n", "the number of settlements, 0 to 1000"),
				host.ArgSpec{Name: "settlement", Type: host.ArgBlock, Multiple: true, Optional: true, Sub: []host.ArgSpec{
					{Name: "kind", Type: host.ArgString, Summary: "ACK <id> <attempt> <keep_ms>, DONE <id> <attempt> <keep_ms> <result>, FAIL <id> <attempt> <backoff_ms> <error> or RELEASE <id> <attempt>"},
					{Name: "id", Type: host.ArgString, Summary: "the JOB id"},
					integer("attempt", "the lease token"),
					{Name: "ms", Type: host.ArgInteger, Summary: "keep_ms, or backoff_ms; none for RELEASE", Optional: true},
					{Name: "text", Type: host.ArgString, Summary: "DONE's result, FAIL's error", Optional: true},
				}}),
		},
	},
	{
		Verb: emq.Repeat,
		CommandSpec: host.CommandSpec{
			Flags: "write deny-oom", ACL: "write slow",
			KeyFlags:   host.KeyRW | host.KeyUpdate,
			Summary:    "Sets a named schedule of a queue (cron or @every) whose ticks the server turns into jobs; replies its first tick.",
			Complexity: "O(log(N)) where N is the queue's schedules.",
			Since:      since03,
			Args: []host.ArgSpec{numkeysArg,
				key("repeat_key", "emq:{<queue>}:repeat:<name>"), key("repeats_key", "emq:{<queue>}:repeats"),
				key("config_key", "emq:{<queue>}:config"),
				{Name: "spec", Type: host.ArgString, Summary: "a 5-field cron expression, @hourly-style descriptor or @every <duration>"},
				{Name: "tz", Type: host.ArgString, Summary: "an IANA time zone; empty for UTC"},
				{Name: "payload", Type: host.ArgString, Summary: "each job's payload"},
				integer("priority", "each job's priority"),
				integer("start_ms", "ticks come after it; 0 for now"),
				integer("end_ms", "no tick after it; 0 for never"),
				integer("limit", "the most jobs it makes; 0 for no limit")},
		},
	},
	{
		Verb: emq.Unrepeat,
		CommandSpec: host.CommandSpec{
			Flags: "write fast", ACL: "write fast",
			KeyFlags:   host.KeyRW | host.KeyDelete,
			Summary:    "Removes a named schedule of a queue; replies 0 if there is none.",
			Complexity: "O(log(N)) where N is the queue's schedules.",
			Since:      since03,
			Args: []host.ArgSpec{numkeysArg,
				key("repeat_key", "emq:{<queue>}:repeat:<name>"), key("repeats_key", "emq:{<queue>}:repeats")},
		},
	},
	{
		Verb: emq.Repeats,
		CommandSpec: host.CommandSpec{
			Flags: "readonly", ACL: "read slow",
			KeyFlags:   host.KeyRO | host.KeyAccess,
			Summary:    "Lists a queue's schedules, next tick first: each its name and its row's fields; all of them, or a page.",
			Complexity: "O(N) where N is the queue's schedules; a page O(offset+count).",
			Since:      since03,
			Args: []host.ArgSpec{numkeysArg, key("repeats_key", "emq:{<queue>}:repeats"),
				{Name: "page", Type: host.ArgBlock, Optional: true, Sub: []host.ArgSpec{
					integer("offset", "the rank of the page's first schedule, from 0"),
					integer("count", "how many schedules the page lists, 1 to 1000")}}},
		},
	},
	{
		Verb: emq.EnqueueMany,
		CommandSpec: host.CommandSpec{
			Flags: "write deny-oom", ACL: "write slow",
			KeyFlags:   host.KeyRW | host.KeyInsert,
			Summary:    "Admits a batch of jobs of one queue at a priority, now or at a time; replies one element per job.",
			Complexity: "O(M log(N)) where M is the number of jobs and N the size of the set they join.",
			Since:      since03,
			Args: append(append([]host.ArgSpec{numkeysArg}, queueSets("pending", "delayed")...),
				integer("priority", "0 to 2147483647; lower is claimed first"),
				integer("at_ms", "Unix ms to admit them at; 0 or a past time admits them now"),
				host.ArgSpec{Name: "job", Type: host.ArgBlock, Multiple: true, Sub: []host.ArgSpec{
					{Name: "id", Type: host.ArgString, Summary: "the JOB id"},
					{Name: "payload", Type: host.ArgString, Summary: "the job's payload"},
				}}),
		},
	},
}

// caps is EMQ.CAPS's row; its verb is made from the table's tokens.
var caps = host.CommandSpec{
	// a discovery command: it answers while loading and on a stale replica
	Flags: "readonly fast allow-loading allow-stale", ACL: "read fast connection",
	Summary:    "Reports the module's version and the capability tokens of the verbs it serves.",
	Complexity: "O(1)",
	Since:      since01,
}

// Rows returns the command table, every row's spec filled from its verb.
func Rows() []Row {
	rows := make([]Row, 0, len(table)+1+len(testRows))
	rows = append(rows, table...)
	rows = append(rows, Row{CommandSpec: caps, Verb: emq.Caps(Tokens())})
	rows = append(rows, testRows...)
	for i := range rows {
		r := &rows[i]
		r.Name, r.Arity, r.Keys = r.Verb.Name, r.Verb.Arity, r.Verb.Keys
		r.ACL = strings.TrimSpace(r.ACL + " " + ACLCategory)
	}
	return rows
}

// Lookup returns the row of the verb name (any case), or nil.
func Lookup(name string) *Row {
	for _, r := range Rows() {
		if strings.EqualFold(r.Name, name) {
			return &r
		}
	}
	return nil
}

// Tokens returns the capability tokens EMQ.CAPS lists, in table order.
func Tokens() []string {
	var tokens []string
	for _, r := range table {
		if r.Verb.Cap != "" {
			tokens = append(tokens, r.Verb.Cap)
		}
	}
	return tokens
}
