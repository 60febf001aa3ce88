package verbs

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/echomq/emq/ids"
	"github.com/echomq/emq/internal/valkeytest"
	"github.com/echomq/emq/keys"
)

// The jobs of the refusal cases' baseline, one in each state.
var (
	activeJob, pendingJob, delayedJob, deadJob, doneJob = newID(ids.Job, 7, 1), newID(ids.Job, 7, 2), newID(ids.Job, 7, 3), newID(ids.Job, 7, 4), newID(ids.Job, 7, 5)
	absentJob                                           = newID(ids.Job, 7, 6)
)

// lifecycleBaseline is queue q holding a job in every state, with times
// far ahead so that no sweep is due: what a refused call must leave alone.
func lifecycleBaseline(q queue) [][]string {
	const later = "9999999999999"
	return [][]string{
		{"HSET", q.job(activeJob), "state", "active", "attempts", "1", "payload", "a"},
		{"ZADD", q.active, later, activeJob},
		{"HSET", q.job(pendingJob), "state", "pending", "attempts", "0", "payload", "p"},
		{"ZADD", q.pending, "0", pendingJob},
		{"HSET", q.job(delayedJob), "state", "delayed", "attempts", "1", "payload", "l", "error", "e"},
		{"ZADD", q.delayed, later, delayedJob},
		{"HSET", q.job(deadJob), "state", "dead", "attempts", "3", "payload", "d", "error", "e"},
		{"ZADD", q.dead, "1", deadJob},
		{"HSET", q.job(doneJob), "state", "done", "attempts", "1", "payload", "k"},
		{"PEXPIREAT", q.job(doneJob), later},
	}
}

// numArg is an integer argument of a verb: its place in the call and its
// name and range as the refusal states them.
type numArg struct {
	at       int
	name     string
	min, max int64
}

func (n numArg) refusal() string {
	return fmt.Sprintf("EMQSHAPE %s must be an integer from %d to %d", n.name, n.min, n.max)
}

// lifecycleVerb is what the refusal table needs to know of a verb: a call
// that passes every check before the stored state, where its integers are
// and which place each of its keys is.
type lifecycleVerb struct {
	good    []string
	nums    []numArg
	numkeys int
	places  []string // by key: "job", "repeat", or the one-segment key's name
	// admits is true of a verb to which an absent job is no refusal
	// (SCHEDULE admits it, REMOVE replies 0)
	admits bool
}

func (v lifecycleVerb) name() string { return v.good[0] }

// with returns v's good call with argument i replaced by value.
func (v lifecycleVerb) with(i int, value string) []string {
	out := slices.Clone(v.good)
	out[i] = value
	return out
}

// lifecycleVerbs are the six verbs of the job lifecycle on queue q, each good
// call naming activeJob or, for REVIVE, deadJob.
func lifecycleVerbs(q queue) []lifecycleVerb {
	lease := numArg{name: "lease_ms", min: 1, max: 1<<31 - 1}
	attempt := numArg{name: "attempt", min: 1, max: 1<<31 - 1}
	maxAttempts := numArg{name: "max_attempts", min: 1, max: 1<<31 - 1}
	at := func(n numArg, i int) numArg { n.at = i; return n }
	return []lifecycleVerb{
		{q.claim(1000, 1, 5), []numArg{at(lease, 6), {7, "count", 1, 1000}, at(maxAttempts, 8)}, 4,
			[]string{keys.PendingSet, keys.ActiveSet, keys.DelayedSet, keys.DeadSet}, false},
		{q.extend(activeJob, 1, 1000), []numArg{at(attempt, 4), at(lease, 5)}, 2, []string{"job", keys.ActiveSet}, false},
		{q.ack(activeJob, 1, 0), []numArg{at(attempt, 4), {5, "keep_ms", 0, 1 << 40}}, 2, []string{"job", keys.ActiveSet}, false},
		{q.fail(activeJob, 1, 0, 5, "e"), []numArg{at(attempt, 7), {8, "backoff_ms", 0, 1 << 40}, at(maxAttempts, 9)}, 5,
			[]string{"job", keys.PendingSet, keys.ActiveSet, keys.DelayedSet, keys.DeadSet}, false},
		{q.stalledCheck(10), []numArg{{4, "limit", 1, 100_000}}, 2, []string{keys.PendingSet, keys.ActiveSet}, false},
		{q.revive(deadJob), nil, 3, []string{"job", keys.PendingSet, keys.DeadSet}, false},
	}
}

// queueVerbs are the verbs 0.3 added, on queue q, in lifecycleVerb's terms.
func queueVerbs(q queue) []lifecycleVerb {
	lease := numArg{name: "lease_ms", min: 1, max: 1<<31 - 1}
	maxAttempts := numArg{name: "max_attempts", min: 1, max: 1<<31 - 1}
	at := func(n numArg, i int) numArg { n.at = i; return n }
	control := func(verb, second string, args ...string) []string {
		return append([]string{verb, "2", keys.Set(q.name, keys.Config), keys.Set(q.name, second)}, args...)
	}
	return []lifecycleVerb{
		{q.schedule(absentJob, "p", 3, 0), []numArg{{7, "priority", 0, 1<<31 - 1}, {8, "at_ms", 0, 1 << 47}}, 3,
			[]string{"job", keys.PendingSet, keys.DelayedSet}, true},
		{q.enqueueMany(3, 0, absentJob, "p"), []numArg{{4, "priority", 0, 1<<31 - 1}, {5, "at_ms", 0, 1 << 47}}, 2,
			[]string{keys.PendingSet, keys.DelayedSet}, true},
		{q.remove(activeJob), nil, 5, []string{"job", keys.PendingSet, keys.ActiveSet, keys.DelayedSet, keys.DeadSet}, true},
		{control("EMQ.PAUSE", keys.PendingSet), nil, 2, []string{keys.Config, keys.PendingSet}, false},
		{control("EMQ.RESUME", keys.PendingSet), nil, 2, []string{keys.Config, keys.PendingSet}, false},
		{control("EMQ.LIMIT", keys.PendingSet, "10", "1000"), []numArg{{4, "max", 0, 1_000_000}, {5, "window_ms", 1, 1<<31 - 1}}, 2,
			[]string{keys.Config, keys.PendingSet}, false},
		{control("EMQ.EVENTS", keys.Events, "100"), []numArg{{4, "cap", 0, 1<<31 - 1}}, 2, []string{keys.Config, keys.Events}, false},
		{q.settle(1000, 1, 5, "ACK", activeJob, "1", "0"), []numArg{at(lease, 6), {7, "count", 0, 1000}, at(maxAttempts, 8), {9, "n", 0, 1000}}, 4,
			[]string{keys.PendingSet, keys.ActiveSet, keys.DelayedSet, keys.DeadSet}, false},
		{q.unrepeat("nightly"), nil, 2, []string{"repeat", keys.Repeats}, false},
		{[]string{"EMQ.REPEATS", "1", keys.Set(q.name, keys.Repeats)}, nil, 1, []string{keys.Repeats}, false},
	}
}

// wrongTypes are the types a key of place must not hold, each a way to
// write it: a job row and a config are hashes; the rest sorted sets, but
// the events key, a stream.
func wrongTypes(key, place string) [][]string {
	str, hash, zset := []string{"SET", key, "x"}, []string{"HSET", key, "f", "v"}, []string{"ZADD", key, "1", "m"}
	switch place {
	case "job", "repeat", keys.Config:
		return [][]string{str, zset}
	}
	return [][]string{str, hash}
}

// placeKey is the key of place in queue q, the job key naming id.
func placeKey(q queue, place, id string) string {
	switch place {
	case "job":
		return q.job(id)
	case "repeat":
		return keys.Repeat(q.name, "nightly")
	}
	return keys.Set(q.name, place)
}

// layoutRefusal is the EMQLAYOUT refusal of a key not in place's layout.
func layoutRefusal(place string) string {
	switch place {
	case "job":
		return "EMQLAYOUT job key must be emq:{<queue>}:job:<JOB id>"
	case "repeat":
		return "EMQLAYOUT repeat key must be emq:{<queue>}:repeat:<name>, the name at most 200 bytes"
	}
	return "EMQLAYOUT " + place + " key must be emq:{<queue>}:" + place
}

const (
	differentQueues = "EMQLAYOUT keys name different queues"
	jobKind         = "EMQKIND job id must be JOB-namespaced"
	noJob           = "EMQNOJOB the job key names no job"
	notActive       = "EMQLEASE the job is not active under this attempt"
	notDead         = "EMQSTATE the job is not dead"
)

// refusalsOf returns every refusal of v, each rule in docs/commands.md's
// order and then the stored state's, with the cases proving one rule beats
// the next.
func refusalsOf(q, r queue, v lifecycleVerb) []refusal {
	var out []refusal
	add := func(rule, want string, args []string, setup ...[]string) {
		out = append(out, refusal{name: v.name() + ": " + rule, setup: setup, args: args, want: want})
	}
	name, n := v.name(), len(v.good)
	firstKey, jobAt := 2, -1
	if v.places[0] == "job" {
		jobAt = firstKey
	}
	id := v.good[2][strings.LastIndexByte(v.good[2], ':')+1:]

	// the server's arity, then (1) shape
	if name != "EMQ.SETTLE" && name != "EMQ.ENQUEUEMANY" {
		add("one argument too few is the server's arity error", arityErr(name), v.good[:n-1])
	}
	switch name {
	case "EMQ.ENQUEUEMANY": // its jobs are pairs, counted
		pairs := "EMQSHAPE the arguments after at_ms must be 1 to 1000 <JOB id> <payload> pairs"
		add("six arguments is the server's arity error", arityErr(name), v.good[:6])
		add("an id without its payload is EMQSHAPE", pairs, v.good[:n-1])
		add("an argument more than the pairs is EMQSHAPE", pairs, append(slices.Clone(v.good), newID(ids.Job, 7, 9)))
		many := slices.Clone(v.good[:6])
		for i := range 1001 {
			many = append(many, newID(ids.Job, 8, uint32(i)), "p")
		}
		add("1001 jobs is EMQSHAPE", pairs, many)
		add("the pairs are checked before the numbers", pairs, v.with(4, "x")[:n-1])
		add("a MSG id is EMQKIND, naming its pair", "EMQKIND job 2: job id must be JOB-namespaced",
			append(slices.Clone(v.good), newID(ids.Msg, 7, 1), "p"))
		add("a malformed JOB id is EMQKIND", "EMQKIND job 1: job id must be JOB-namespaced", v.with(6, "JOB00000000000zzzzz"))
		msg := v.with(6, newID(ids.Msg, 7, 1))
		msg[2] = "emq:{q}:nothing"
		add("a malformed pending key beats a MSG id: layouts before kinds", layoutRefusal(keys.PendingSet), msg)
		add("a delayed key of another queue with a MSG id is EMQKIND: kinds before agreement", "EMQKIND job 1: job id must be JOB-namespaced",
			slices.Concat(v.with(3, r.delayed)[:6], []string{newID(ids.Msg, 7, 1), "p"}))
	case "EMQ.SETTLE": // its settlements are counted, not its arguments
		add("a settlement too few is EMQSHAPE", "EMQSHAPE the arguments hold fewer than n settlements: settlement 1 is missing", v.good[:10])
		add("a settlement short of an argument is EMQSHAPE", "EMQSHAPE settlement 1: ACK takes 3 arguments", v.good[:n-1])
		add("an argument more than the settlements is EMQSHAPE", "EMQSHAPE the arguments hold more than n=1 settlements", append(slices.Clone(v.good), "x"))
		add("nine arguments is the server's arity error", arityErr(name), v.good[:9])
	case "EMQ.REPEATS": // two more are a page: one, or three, are EMQSHAPE
		page := "EMQSHAPE EMQ.REPEATS takes an offset and a count, or neither"
		add("one argument more is EMQSHAPE", page, append(slices.Clone(v.good), "0"))
		add("three arguments more is EMQSHAPE", page, append(slices.Clone(v.good), "0", "1", "2"))
		add("a page's numbers are checked before the key", "EMQSHAPE count must be an integer from 1 to 1000",
			[]string{name, "1", "nokey", "0", "0"})
	case "EMQ.ACK": // one more is a result: refused beside keep_ms 0, and two more are too many
		add("a result with keep_ms 0 is EMQSHAPE", "EMQSHAPE a result needs keep_ms above 0: a row deleted at once cannot keep it",
			append(v.with(5, "0"), "r"))
		add("two arguments more is EMQSHAPE", "EMQSHAPE EMQ.ACK takes at most one result", append(slices.Clone(v.good), "x", "y"))
	default:
		add("one argument too many is the server's arity error", arityErr(name), append(slices.Clone(v.good), "x"))
	}
	numkeys := fmt.Sprintf("EMQSHAPE numkeys must be %d", v.numkeys)
	for _, bad := range []string{"0", fmt.Sprint(v.numkeys - 1), fmt.Sprint(v.numkeys + 1), "-1", "x", "0" + fmt.Sprint(v.numkeys), "+" + fmt.Sprint(v.numkeys)} {
		if bad != fmt.Sprint(v.numkeys) {
			add(fmt.Sprintf("numkeys %q is EMQSHAPE", bad), numkeys, v.with(1, bad))
		}
	}
	for _, num := range v.nums {
		bads := []string{fmt.Sprint(num.max + 1), "99999999999999999999", "-1", "+1", "01", "1.0", "", " 1", "1 ", "0x1"}
		if num.min > 0 {
			bads = append(bads, "0")
		}
		for _, bad := range bads {
			add(fmt.Sprintf("%s %q is EMQSHAPE", num.name, bad), num.refusal(), v.with(num.at, bad))
		}
		add(num.name+" is checked before any key's layout", num.refusal(), slices.Concat(v.with(num.at, "0x1")[:2], []string{"nokey"}, v.with(num.at, "0x1")[3:]))
	}

	// (2) layout, (3) kind, (4) agreement, (6) types, per key
	for i, place := range v.places {
		k := firstKey + i
		other := v.places[(i+1)%len(v.places)]
		alone := len(v.places) == 1 // a single key has no other place, no other key to disagree with
		if !alone {
			add(fmt.Sprintf("the %s key of another place is EMQLAYOUT", place), layoutRefusal(place), v.with(k, placeKey(q, other, id)))
			add(fmt.Sprintf("a %s key of another queue is EMQLAYOUT", place), differentQueues, v.with(k, placeKey(r, place, id)))
		}
		add(fmt.Sprintf("a %s key without the hash tag is EMQLAYOUT", place), layoutRefusal(place), v.with(k, strings.Replace(strings.Replace(v.good[k], "{", "", 1), "}", "", 1)))
		add(fmt.Sprintf("a %s key under another prefix is EMQLAYOUT", place), layoutRefusal(place), v.with(k, "x"+v.good[k]))
		if place == "job" {
			add("a job key naming a MSG id is EMQKIND", jobKind, v.with(k, q.job(newID(ids.Msg, 7, 1))))
			add("a job key naming a malformed JOB id is EMQKIND", jobKind, v.with(k, q.job("JOB00000000000zzzzz")))
			add("a job key of another queue naming a MSG id is EMQKIND: kinds before agreement", jobKind, v.with(k, r.job(newID(ids.Msg, 7, 1))))
			add("a job key that is a string is WRONGTYPE", wrongType, v.good, []string{"DEL", v.good[k]}, []string{"SET", v.good[k], "x"})
			if !v.admits {
				add("an absent job is EMQNOJOB", noJob, v.with(k, q.job(absentJob)))
			}
		} else {
			del := []string{"DEL", v.good[k]}
			for _, set := range wrongTypes(v.good[k], place) {
				add(fmt.Sprintf("a %s key holding a %s is WRONGTYPE", place, set[0]), wrongType, v.good, del, set)
			}
			set := wrongTypes(v.good[k], place)[0]
			if !alone {
				add(fmt.Sprintf("a %s key of another queue beats its WRONGTYPE: agreement before types", place), differentQueues,
					v.with(k, placeKey(r, place, id)), []string{"SET", placeKey(r, place, id), "x"})
			}
			if jobAt >= 0 && !v.admits {
				add(fmt.Sprintf("a %s key that is a string beats an absent job: types before state", place), wrongType,
					v.with(jobAt, q.job(absentJob)), del, set)
			}
			if jobAt >= 0 {
				add(fmt.Sprintf("a malformed %s key beats a MSG job id: layouts before kinds", place), layoutRefusal(place),
					slices.Concat(v.with(jobAt, q.job(newID(ids.Msg, 7, 1)))[:k], []string{"emq:{q}:nothing"}, v.good[k+1:]))
			}
		}
	}

	// (7) stored state
	switch name {
	case "EMQ.EXTEND", "EMQ.ACK", "EMQ.FAIL":
		att := v.nums[0].at
		for _, c := range []struct{ rule, id, attempt string }{
			{"a job active under another attempt", activeJob, "2"},
			{"a pending job (never claimed)", pendingJob, "1"},
			{"a delayed job", delayedJob, "1"},
			{"a dead job", deadJob, "3"},
			{"a done job", doneJob, "1"},
		} {
			args := v.with(att, c.attempt)
			args[jobAt] = q.job(c.id)
			add(c.rule+" is EMQLEASE", notActive, args)
		}
		args := v.with(jobAt, q.job(activeJob))
		add("a row whose attempts is not the decimal text of the attempt is EMQLEASE", notActive, args,
			[]string{"HSET", q.job(activeJob), "attempts", "01"})
		// the last attempt, which a claim reads attempts that are no count as
		// (so that it hands out no token again), is no token such a row holds
		for _, junk := range []string{"x", "-1", "01"} {
			add(fmt.Sprintf("a row whose attempts are %q, no count,", junk)+" is active under no attempt, the last one neither: EMQLEASE",
				notActive, v.with(att, "2147483647"), []string{"HSET", q.job(activeJob), "attempts", junk})
		}
	case "EMQ.REVIVE":
		for _, c := range []struct{ rule, id string }{
			{"an active job", activeJob}, {"a pending job", pendingJob}, {"a delayed job", delayedJob}, {"a done job", doneJob},
		} {
			add(c.rule+" is EMQSTATE", notDead, v.with(jobAt, q.job(c.id)))
		}
	}
	return out
}

func TestLifecycleRefusalsInPrecedenceOrderChangeNothing(t *testing.T) {
	s := valkeytest.Start(t, valkeytest.Options{})
	q, r := queueOf("q"), queueOf("r")
	var cases []refusal
	for _, v := range slices.Concat(lifecycleVerbs(q), queueVerbs(q)) {
		cases = append(cases, refusalsOf(q, r, v)...)
	}
	runRefusals(t, s, lifecycleBaseline(q), cases)
}
