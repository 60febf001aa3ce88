// Package registry is the module's command table: one row per verb, holding
// everything the server and its users are told about it — name, arity,
// flags, key spec, ACL categories, capability token, docs — and the verb
// that serves it. Nothing about a verb is registered from anywhere else.
package registry

import (
	"github.com/echomq/emq/emq"
	"github.com/echomq/emq/host"
)

// Row is one verb.
type Row struct {
	host.CommandSpec
	Cap  string // the capability token EMQ.CAPS lists, or "" for none
	Verb emq.Verb
}

// ModuleName is the name the module registers as (MODULE LIST, INFO emq,
// emq.<config>); ACLCategory is the ACL category every verb sits in.
const (
	ModuleName  = "emq"
	ACLCategory = "emq"
)

// since is the module version that introduced the verbs.
const since = "0.1.0"

// The arguments every verb starts with.
var (
	numkeysArg = host.ArgSpec{Name: "numkeys", Type: host.ArgInteger, Summary: "the number of keys that follow"}
	entryArg   = host.ArgSpec{Name: "entry", Type: host.ArgBlock, Multiple: true, Sub: []host.ArgSpec{
		{Name: "id", Type: host.ArgString, Summary: "the EVT id of the entry"},
		{Name: "pairs", Type: host.ArgInteger, Summary: "the number of field/value pairs"},
		{Name: "data", Type: host.ArgBlock, Multiple: true, Sub: []host.ArgSpec{
			{Name: "field", Type: host.ArgString},
			{Name: "value", Type: host.ArgString},
		}},
	}}
)

// testRows are verbs a test build adds after the table (build tag emqtest);
// a release build has none.
var testRows []Row

// Rows returns the command table.
func Rows() []Row {
	rows := []Row{
		{
			CommandSpec: host.CommandSpec{
				Name: "EMQ.ENQUEUE", Arity: emq.EnqueueArity, Flags: "write deny-oom fast", ACL: "write fast " + ACLCategory,
				KeyFlags:   host.KeyRW | host.KeyInsert,
				Summary:    "Admits a job: writes its row and adds it to the pending set, or replies 0 if it exists.",
				Complexity: "O(log(N)) where N is the number of pending jobs.",
				Since:      since,
				Args: []host.ArgSpec{numkeysArg,
					{Name: "job_key", Type: host.ArgKey, Summary: "emq:{<queue>}:job:<JOB id>"},
					{Name: "pending_key", Type: host.ArgKey, Summary: "emq:{<queue>}:pending"},
					{Name: "id", Type: host.ArgString, Summary: "the JOB id"},
					{Name: "payload", Type: host.ArgString, Summary: "the job's payload"},
				},
			},
			Cap: "enqueue", Verb: emq.Enqueue,
		},
		{
			CommandSpec: host.CommandSpec{
				Name: "EMQ.APPEND", Arity: emq.StreamArity, Flags: "write deny-oom", ACL: "write slow " + ACLCategory,
				KeyFlags:   host.KeyRW | host.KeyUpdate,
				Summary:    "Appends a batch of entries to a stream, all of them or none.",
				Complexity: "O(M) where M is the number of fields in the batch.",
				Since:      since,
				Args: []host.ArgSpec{numkeysArg,
					{Name: "key", Type: host.ArgKey, Summary: "emq:{<topic>}:stream:<sname>"},
					{Name: "n", Type: host.ArgInteger, Summary: "the number of entries"},
					entryArg,
				},
			},
			Cap: "append", Verb: emq.Append,
		},
		{
			CommandSpec: host.CommandSpec{
				Name: "EMQ.PUBLISH", Arity: emq.StreamArity, Flags: "write deny-oom fast", ACL: "write fast " + ACLCategory,
				KeyFlags:   host.KeyRW | host.KeyUpdate,
				Summary:    "Publishes one envelope (msg and payload fields) to a topic's msgs stream.",
				Complexity: "O(M) where M is the number of fields of the envelope.",
				Since:      since,
				Args: []host.ArgSpec{numkeysArg,
					{Name: "key", Type: host.ArgKey, Summary: "emq:{<topic>}:stream:msgs"},
					{Name: "n", Type: host.ArgInteger, Summary: "always 1"},
					entryArg,
				},
			},
			Cap: "publish", Verb: emq.Publish,
		},
		{
			CommandSpec: host.CommandSpec{
				Name: "EMQ.FAILURES.INCR", Arity: emq.FailuresIncrArity, Flags: "write deny-oom fast", ACL: "write fast " + ACLCategory,
				KeyFlags:   host.KeyRW | host.KeyAccess | host.KeyUpdate,
				Summary:    "Counts a failure of a message for a subscriber and sets the count's TTL.",
				Complexity: "O(1)",
				Since:      since,
				Args: []host.ArgSpec{numkeysArg,
					{Name: "key", Type: host.ArgKey, Summary: "emq:{<topic>}:fail:<SUB id>:<MSG id>"},
					{Name: "fail_ttl_ms", Type: host.ArgInteger, Summary: "the TTL in ms, rounded up to seconds"},
				},
			},
			Cap: "failures.incr", Verb: emq.FailuresIncr,
		},
	}
	var tokens []string
	for _, r := range rows {
		tokens = append(tokens, r.Cap)
	}
	rows = append(rows, Row{
		CommandSpec: host.CommandSpec{
			Name: "EMQ.CAPS", Arity: emq.CapsArity, Flags: "readonly fast", ACL: "fast connection " + ACLCategory,
			Summary:    "Reports the module's version and the capability tokens of the verbs it serves.",
			Complexity: "O(1)",
			Since:      since,
		},
		Verb: emq.Caps(tokens),
	})
	return append(rows, testRows...)
}
