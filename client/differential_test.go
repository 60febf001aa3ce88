package client

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/echomq/emq/ids"
	"github.com/echomq/emq/keys"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/valkey-io/valkey-go"
)

// twin is one queue on two servers, the module's and a module-less one
// running the scripts, driven call by call with the same arguments.
type twin struct {
	t     *testing.T
	nodes []node
	long  [2]*Queue // lease 10 s
	short [2]*Queue // lease 30 ms
	// patient is the queue with 5 attempts, not 2: its Fail delays
	patient [2]*Queue
	kept    [2]*Queue // keep 1 h: an ack leaves the row done
	jobs    [2]map[string]*Job
}

const diffQueue = "diff"

// outcome is what a call answered, comparable across the servers: a
// value, or a refusal's text.
func outcome(v any, err error) any {
	if err != nil {
		return "error: " + err.Error()
	}
	return v
}

// same runs call on both servers, requires the same outcome and then the
// same data, its times within timeSlack of each other.
func (tw *twin) same(what string, call func(i int, n node) any) {
	tw.t.Helper()
	var got [2]any
	for i, n := range tw.nodes {
		got[i] = call(i, n)
	}
	require.Equal(tw.t, got[0], got[1], "%s: the verb and the script answer alike", what)
	a, b := tw.snapshot(tw.nodes[0]), tw.snapshot(tw.nodes[1])
	require.Equal(tw.t, a.lines, b.lines, "%s: the verb and the script leave the same data", what)
	for k, at := range a.times {
		if at.ms != b.times[k].ms { // equal infinities (a finished schedule's +inf) too
			require.InDelta(tw.t, at.ms, b.times[k].ms, float64(timeSlack.Milliseconds()),
				"%s: the verb and the script leave the same time in %s", what, at.where)
		}
	}
}

// timeSlack is how far apart the two servers' times of one write may be:
// the twin's calls run one after the other, a call apart, never a second.
const timeSlack = time.Second

// data is a snapshot of a server's data: its lines, each time in them
// written as <time>, and those times, in the order of the lines.
type data struct {
	lines []string
	times []moment
}

// moment is one time of a snapshot, in Unix or remaining ms, and where it
// was read.
type moment struct {
	where string
	ms    float64
}

// snapshot is a server's data: every key's type; a hash's fields; a sorted
// set's members, sorted, and pending's with their scores (priorities), in
// claim order; a string's value; a stream's entries' fields in order;
// whether a key expires. What each server reads from its own clock — the
// scores of the other sets (deadlines, due times, times of death), TTLs,
// the times of stream IDs and those events carry (lease, at) — are
// snapshot's times, compared within timeSlack: a script that wrote a
// second where the verb writes a millisecond, or no deadline, differs.
func (tw *twin) snapshot(n node) data {
	t := tw.t
	t.Helper()
	names, err := n.s.Do("KEYS", "*").AsStrSlice()
	require.NoError(t, err)
	slices.Sort(names)
	var out data
	at := func(where string, ms float64) string {
		out.times = append(out.times, moment{where, ms})
		return "<time>"
	}
	for _, k := range names {
		typ := str(t, n, "TYPE", k)
		line := k + " " + typ
		switch typ {
		case "hash":
			m, err := n.s.Do("HGETALL", k).AsStrMap()
			require.NoError(t, err)
			fields := make([]string, 0, len(m))
			for f, v := range m {
				fields = append(fields, f+"="+v)
			}
			slices.Sort(fields)
			line += " " + strings.Join(fields, " ")
		case "zset":
			if strings.HasSuffix(k, ":"+keys.PendingSet) {
				members, err := n.s.Do("ZRANGE", k, "0", "-1", "WITHSCORES").AsZScores()
				require.NoError(t, err)
				for _, m := range members {
					line += fmt.Sprintf(" %s@%g", m.Member, m.Score)
				}
				break
			}
			members, err := n.s.Do("ZRANGE", k, "0", "-1", "WITHSCORES").AsZScores()
			require.NoError(t, err)
			slices.SortFunc(members, func(a, b valkey.ZScore) int { return strings.Compare(a.Member, b.Member) })
			for _, m := range members {
				line += " " + m.Member + "@" + at(k+" "+m.Member, m.Score)
			}
		case "string":
			line += " " + str(t, n, "GET", k)
		case "stream":
			for _, e := range xrange(t, n.s, k) {
				ms, _, ok := strings.Cut(e.ID, "-")
				require.True(t, ok, "%s: a stream ID", e.ID)
				line += "\n " + at(k+" "+e.ID, timeOf(t, ms))
				for _, f := range e.FieldValues {
					if f.Field == "lease" || f.Field == "at" {
						f.Value = at(k+" "+e.ID+" "+f.Field, timeOf(t, f.Value))
					}
					line += " " + f.Field + "=" + f.Value
				}
			}
		}
		if ttl := integer(t, n.s, "PTTL", k); ttl >= 0 {
			line += " expires in " + at(k+"'s TTL", float64(ttl))
		}
		out.lines = append(out.lines, line)
	}
	return out
}

// timeOf is s, a decimal integer, as a time in ms.
func timeOf(t *testing.T, s string) float64 {
	t.Helper()
	n, err := strconv.ParseInt(s, 10, 64)
	require.NoError(t, err, "%q is a time", s)
	return float64(n)
}

// claim claims n jobs from q[i] and remembers their handles.
func (tw *twin) claim(qs [2]*Queue, count int) func(int, node) any {
	return func(i int, _ node) any {
		jobs, err := qs[i].Claim(ctx(tw.t), count)
		var view []string
		for _, j := range jobs {
			tw.jobs[i][j.ID.String()+"/"+fmt.Sprint(j.Attempt)] = j
			view = append(view, fmt.Sprintf("%s attempt %d %q", j.ID, j.Attempt, j.Payload))
		}
		return outcome(view, err)
	}
}

// newTwin makes the twin's handles on queue of both servers.
func newTwin(t *testing.T, nodes []node, queue string) *twin {
	tw := &twin{t: t, nodes: nodes, jobs: [2]map[string]*Job{{}, {}}}
	for i, n := range nodes {
		tw.long[i] = newQueue(t, n, queue, Policy{Lease: 10 * time.Second, MaxAttempts: 2})
		tw.short[i] = newQueue(t, n, queue, Policy{Lease: 30 * time.Millisecond, MaxAttempts: 2})
		tw.patient[i] = newQueue(t, n, queue, Policy{MaxAttempts: 5})
		tw.kept[i] = newQueue(t, n, queue, Policy{MaxAttempts: 2, Keep: time.Hour})
	}
	return tw
}

// job is the handle of id's attempt on server i.
func (tw *twin) job(i int, id ids.ID, attempt int64) *Job {
	tw.t.Helper()
	j, ok := tw.jobs[i][id.String()+"/"+fmt.Sprint(attempt)]
	require.True(tw.t, ok, "%s attempt %d was claimed", id, attempt)
	return j
}

// TestScriptsMatchTheVerbs drives the module's verbs and the fallback's
// scripts through the same sequence — claims, extends, acks, fails with
// and without backoff, exhausted attempts, revives, stalled checks, leases
// and delays running out — and requires the same replies and refusals and
// the same data after every call, and the same DEBUG DIGEST at the end.
func TestScriptsMatchTheVerbs(t *testing.T) {
	nodes := startNodes(t)
	tw := newTwin(t, nodes, diffQueue)
	const expire = 80 * time.Millisecond // past a short lease and a short backoff
	boom := errors.New("boom")
	var j [6]ids.ID
	for k := range j {
		j[k] = nodes[0].m.Mint(ids.Job)
		tw.same("enqueue", func(i int, n node) any {
			return outcome(n.c.Enqueue(ctx(t), diffQueue, j[k], []byte(fmt.Sprint("p", k))))
		})
	}
	tw.same("a duplicate enqueue", func(i int, n node) any { return outcome(n.c.Enqueue(ctx(t), diffQueue, j[0], nil)) })
	tw.same("a claim under a long lease", tw.claim(tw.long, 2))
	tw.same("a claim under a short lease", tw.claim(tw.short, 2))
	tw.same("extend", func(i int, _ node) any { _, err := tw.job(i, j[0], 1).Extend(ctx(t)); return outcome(nil, err) })
	tw.same("ack", func(i int, _ node) any { return outcome(nil, tw.job(i, j[0], 1).Ack(ctx(t))) })
	tw.same("ack of a deleted row", func(i int, _ node) any { return outcome(nil, tw.job(i, j[0], 1).Ack(ctx(t))) })
	tw.same("fail, backoff 0", func(i int, _ node) any { return outcome(tw.job(i, j[1], 1).FailAfter(ctx(t), boom, 0)) })
	tw.same("fail of a pending job", func(i int, _ node) any { return outcome(tw.job(i, j[1], 1).FailAfter(ctx(t), boom, 0)) })
	time.Sleep(expire)
	tw.same("a claim that requeues expired leases", tw.claim(tw.long, 3))
	tw.same("ack of a stale attempt", func(i int, _ node) any { return outcome(nil, tw.job(i, j[2], 1).Ack(ctx(t))) })
	tw.same("extend of a stale attempt", func(i int, _ node) any { _, err := tw.job(i, j[2], 1).Extend(ctx(t)); return outcome(nil, err) })
	tw.same("fail with a backoff", func(i int, _ node) any {
		h := *tw.job(i, j[2], 2)
		h.q = tw.patient[i]
		return outcome(h.FailAfter(ctx(t), boom, 30*time.Millisecond))
	})
	tw.same("fail at max attempts", func(i int, _ node) any { return outcome(tw.job(i, j[3], 2).FailAfter(ctx(t), boom, 0)) })
	tw.same("revive of an active job", func(i int, _ node) any { return outcome(nil, tw.long[i].Revive(ctx(t), j[1])) })
	tw.same("revive of a dead job", func(i int, _ node) any { return outcome(nil, tw.long[i].Revive(ctx(t), j[3])) })
	tw.same("revive of no job", func(i int, _ node) any { return outcome(nil, tw.long[i].Revive(ctx(t), j[0])) })
	time.Sleep(expire)
	tw.same("stalled check with nothing stalled", func(i int, _ node) any { return outcome(tw.long[i].StalledCheck(ctx(t), 10)) })
	tw.same("a claim that promotes a due job at max attempts to dead", tw.claim(tw.short, 10))
	time.Sleep(expire)
	tw.same("stalled check, limited", func(i int, _ node) any { return outcome(tw.long[i].StalledCheck(ctx(t), 2)) })
	tw.same("stalled check of the rest", func(i int, _ node) any { return outcome(tw.long[i].StalledCheck(ctx(t), 10)) })
	tw.same("a claim over the count", func(i int, _ node) any { return outcome(tw.long[i].Claim(ctx(t), 1001)) })
	tw.same("ack keeping the row", func(i int, _ node) any {
		h := *tw.job(i, j[1], 2)
		h.q = tw.kept[i]
		return outcome(nil, h.Ack(ctx(t)))
	})
	tw.same("ack of a done job", func(i int, _ node) any { return outcome(nil, tw.job(i, j[1], 2).Ack(ctx(t))) })
	tw.same("revive of the exhausted job", func(i int, _ node) any { return outcome(nil, tw.long[i].Revive(ctx(t), j[2])) })

	// Nothing left holds a time but the done row's expiry, an absolute time
	// of each server's clock: without it, the same data to the digest.
	for _, n := range nodes {
		must(t, n.s, "PERSIST", keys.Job(diffQueue, j[1].String()))
	}
	assert.Equal(t, digest(t, nodes[0].s), digest(t, nodes[1].s), "the same data, to the digest")
}
