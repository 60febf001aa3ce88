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
			Args: append([]host.ArgSpec{numkeysArg}, append(queueSets("pending", "active", "delayed", "dead"),
				integer("lease_ms", "the lease, in ms"),
				integer("count", "the most jobs to claim, 1 to 1000"),
				integer("max_attempts", "a job claimed this many times goes to dead instead"))...),
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
			Summary:    "Acknowledges a job active under the given attempt: deletes its row, or keeps it done for keep_ms.",
			Complexity: "O(log(N)) where N is the number of active jobs.",
			Since:      since02,
			Args: []host.ArgSpec{numkeysArg, key("job_key", "emq:{<queue>}:job:<JOB id>"), key("active_key", "emq:{<queue>}:active"),
				integer("attempt", "the attempt the claim handed out: the lease token"),
				integer("keep_ms", "how long to keep the finished row; 0 deletes it")},
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
			Summary:    "Brings a dead job back to pending with attempts 0.",
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
			KeyFlags: host.KeyRW,
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
