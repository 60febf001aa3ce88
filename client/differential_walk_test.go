package client

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/echomq/emq/ids"
	"github.com/echomq/emq/keys"
	"github.com/stretchr/testify/require"
)

// walkSize is the random walk's size, name (EMQ_WALK_SEEDS: how many
// walks, from seed 1; EMQ_WALK_STEPS: the steps of each), or def when
// unset: make test's few hundred steps; `make walk` takes many.
func walkSize(t *testing.T, name string, def int) int {
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	require.NoError(t, err, name)
	return n
}

// walk is a random walk over a queue's verbs on both servers of a twin,
// its ids and the attempts it claimed.
type walk struct {
	tw    *twin
	r     *rand.Rand
	queue string
	// long leases for an hour: no lease of it passes while the walk runs,
	// whose two servers' clocks are a call apart; short's pass within
	// shortPassed, which the walk waits out after every claim of it
	long, short, kept [2]*Queue
	ids               []ids.ID
	// claimed are the attempts the walk claimed (their handles on the
	// first server), in the order it did
	claimed []*Job
	seen    map[string]bool
}

// shortPassed is past a short lease, a short delay and a short backoff.
const shortPassed = 60 * time.Millisecond

// TestScriptsMatchTheVerbsOnARandomWalk drives the module's verbs and the
// fallback's scripts through random sequences of a queue's lifecycle —
// admissions at priorities and times, claims under long and short leases,
// extends, acks, results, failures, releases, settlements, revives,
// removals, stalled checks, pause, limits, events — with writes by hand
// between them (dangling ids, an id in a second set, rows deleted or of
// another type, ids that are no JOB ids, settings), and requires the same
// replies and the same data after every step, as TestScriptsMatchTheVerbs
// does for its fixed sequence. A failure names the seed and the step.
// Schedules (REPEAT) and waiting claims are left to their own tests: the
// ticks they make and the times they wake are each server's own clock's.
func TestScriptsMatchTheVerbsOnARandomWalk(t *testing.T) {
	nodes := startNodes(t)
	steps := walkSize(t, "EMQ_WALK_STEPS", 250)
	for seed := range walkSize(t, "EMQ_WALK_SEEDS", 3) {
		t.Run(fmt.Sprint("seed ", seed+1), func(t *testing.T) {
			queue := fmt.Sprint("walk", seed+1)
			w := &walk{tw: newTwin(t, nodes, queue), r: rand.New(rand.NewPCG(uint64(seed+1), 7)), queue: queue, seen: map[string]bool{}}
			w.tw.both("FLUSHALL") // the snapshots read every key: this walk's alone
			// stream nodes of 4 entries, so that an events stream is trimmed as it grows
			w.tw.both("CONFIG", "SET", "stream-node-max-entries", "4")
			for i, n := range nodes {
				w.long[i] = newQueue(t, n, queue, Policy{Lease: time.Hour, MaxAttempts: 2})
				w.short[i] = newQueue(t, n, queue, Policy{Lease: 20 * time.Millisecond, MaxAttempts: 2})
				w.kept[i] = newQueue(t, n, queue, Policy{Lease: time.Hour, MaxAttempts: 2, Keep: time.Hour})
			}
			for step := range steps {
				w.step(fmt.Sprintf("seed %d, step %d", seed+1, step))
			}
		})
	}
}

// step takes one random step, named what.
func (w *walk) step(what string) {
	tw, r, t := w.tw, w.r, w.tw.t
	boom := errors.New("boom")
	defer w.noteClaimed()
	// an id of the walk, at times one never admitted
	anyID := func() ids.ID {
		if len(w.ids) == 0 || r.IntN(8) == 0 {
			return w.mint()
		}
		return w.ids[r.IntN(len(w.ids))]
	}
	// a claimed attempt's handle on server i, under the policy of qs
	handle := func(i int, h *Job, qs [2]*Queue) *Job { return tw.under(qs, i, h.ID, h.Attempt) }
	// a claimed attempt, most often one of the last few claimed
	pick := func() (*Job, bool) {
		n := len(w.claimed)
		switch {
		case n == 0:
			return nil, false
		case r.IntN(4) > 0:
			return w.claimed[n-1-r.IntN(min(n, 4))], true
		}
		return w.claimed[r.IntN(n)], true
	}
	set := func(name string) string { return keys.Set(w.queue, name) }

	switch k := r.IntN(100); {
	case k < 14: // admit, now, at a priority, later, or due soon
		id := w.mint()
		if r.IntN(5) == 0 {
			id = anyID() // at times again
		}
		var opts []EnqueueOption
		soon := false
		switch r.IntN(5) {
		case 1:
			opts = append(opts, Priority(r.IntN(4)))
		case 2:
			opts = append(opts, Priority(r.IntN(4)), After(time.Hour))
		case 3:
			opts = append(opts, At(time.Now().Add(-time.Hour)))
		case 4:
			opts, soon = append(opts, Priority(r.IntN(4)), After(10*time.Millisecond)), true
		}
		tw.same(what+": admit", tw.admit(w.long, id, "p"+id.String()[15:], opts...))
		w.note(id)
		if soon {
			time.Sleep(shortPassed)
		}
	case k < 18: // a batch, repeating ids
		batch := make([]ids.ID, 1+r.IntN(4))
		for b := range batch {
			batch[b] = w.mint()
			if r.IntN(4) == 0 {
				batch[b] = anyID() // at times again, or twice in the batch
			}
			w.note(batch[b])
		}
		var opts []EnqueueOption
		if r.IntN(2) == 0 {
			opts = append(opts, Priority(r.IntN(4)))
		}
		tw.same(what+": enqueue many", tw.enqueueMany(w.long, batch, "many", opts...))
	case k < 32:
		tw.same(what+": claim", tw.claim(w.long, 1+r.IntN(4)))
	case k < 37:
		tw.same(what+": claim under a short lease", tw.claim(w.short, 1+r.IntN(3)))
		time.Sleep(shortPassed)
	case k < 42:
		if h, ok := pick(); ok {
			tw.same(what+": extend", func(i int, _ node) any {
				_, err := handle(i, h, w.long).Extend(ctx(t))
				return outcome(nil, err)
			})
		}
	case k < 48:
		if h, ok := pick(); ok {
			tw.same(what+": ack", func(i int, _ node) any { return outcome(nil, handle(i, h, w.long).Ack(ctx(t))) })
		}
	case k < 51:
		if h, ok := pick(); ok {
			tw.same(what+": ack with a result, kept", func(i int, _ node) any {
				return outcome(nil, handle(i, h, w.kept).AckResult(ctx(t), []byte("r")))
			})
		}
	case k < 58:
		if h, ok := pick(); ok {
			backoff := []time.Duration{0, 10 * time.Millisecond, time.Hour}[r.IntN(3)]
			tw.same(what+": fail", func(i int, _ node) any { return outcome(handle(i, h, w.long).FailAfter(ctx(t), boom, backoff)) })
			if backoff == 10*time.Millisecond {
				time.Sleep(shortPassed)
			}
		}
	case k < 61:
		if h, ok := pick(); ok {
			tw.same(what+": release", func(i int, _ node) any { return outcome(nil, handle(i, h, w.long).Release(ctx(t))) })
		}
	case k < 67: // settle a few, then claim
		n := r.IntN(4)
		kinds := make([]int, n)
		hs := make([]*Job, n)
		for s := range n {
			hs[s], _ = pick()
			kinds[s] = r.IntN(5)
		}
		if len(w.claimed) == 0 {
			n = 0
		}
		tw.same(what+": settle", tw.settle(w.kept, r.IntN(3), func(i int) []Settlement {
			var list []Settlement
			for s := range n {
				j := handle(i, hs[s], w.kept)
				switch kinds[s] {
				case 0:
					list = append(list, Settlement{Job: j})
				case 1:
					list = append(list, Settlement{Job: j, Result: []byte("s")})
				case 2:
					list = append(list, Settlement{Job: j, Err: boom})
				case 3:
					list = append(list, Settlement{Job: j, Err: boom, Backoff: time.Hour})
				case 4:
					list = append(list, Settlement{Job: j, Release: true})
				}
			}
			return list
		}))
	case k < 72:
		id := anyID()
		tw.same(what+": revive", func(i int, _ node) any { return outcome(nil, w.long[i].Revive(ctx(t), id)) })
	case k < 75:
		id := anyID()
		tw.same(what+": remove", func(i int, _ node) any { return outcome(w.long[i].Remove(ctx(t), id)) })
	case k < 79:
		limit := 1 + r.IntN(3)
		tw.same(what+": stalled check", func(i int, _ node) any { return outcome(w.long[i].StalledCheck(ctx(t), limit)) })
	case k < 81:
		tw.same(what+": pause", func(i int, _ node) any { return outcome(w.long[i].Pause(ctx(t))) })
	case k < 86:
		tw.same(what+": resume", func(i int, _ node) any { return outcome(w.long[i].Resume(ctx(t))) })
	case k < 88:
		// a window longer than any walk: it ends when the walk ends it
		n := []int{0, 0, 2, 5}[r.IntN(4)]
		window := time.Duration(0)
		if n > 0 {
			window = 24 * time.Hour
		}
		tw.same(what+": limit", func(i int, _ node) any { return outcome(nil, w.long[i].Limit(ctx(t), n, window)) })
	case k < 91:
		tw.both("PEXPIRE", set(keys.Limiter), "1") // the window ends
		time.Sleep(5 * time.Millisecond)
	case k < 92:
		capacity := []int{0, 3, 50}[r.IntN(3)]
		tw.same(what+": events", func(i int, _ node) any { return outcome(w.long[i].SetEvents(ctx(t), capacity)) })
	default: // a write by hand
		id := anyID()
		row := keys.Job(w.queue, id.String())
		sets := []string{keys.PendingSet, keys.ActiveSet, keys.DelayedSet, keys.DeadSet}
		switch r.IntN(8) {
		case 0: // an id into a set, maybe a second one, maybe dangling
			tw.both("ZADD", set(sets[r.IntN(len(sets))]), strconv.Itoa(r.IntN(3)), id.String())
		case 1:
			tw.both("DEL", row)
		case 2:
			if r.IntN(3) == 0 { // rarely: it refuses the job's every verb
				tw.both("SET", row, "x")
			}
		case 3: // an id that is no JOB id, with a row
			junk := "junk" + strconv.Itoa(r.IntN(3))
			tw.both("HSET", keys.Job(w.queue, junk), "state", "active", "attempts", "1", "payload", "j")
			tw.both("ZADD", set(sets[r.IntN(len(sets))]), "1", junk)
		case 4: // a setting, as a hand writes it (no window that ends while the walk runs)
			values := map[string][]string{"paused": {"1", "0"}, "rate_max": {"1", "x", "0", "-1"}, "rate_ms": {"x", "0", "-1", "86400000"}}
			field := []string{"paused", "rate_max", "rate_ms"}[r.IntN(3)]
			tw.both("HSET", set(keys.Config), field, values[field][r.IntN(len(values[field]))])
		case 5: // a row's fields as a hand leaves them
			if str(t, tw.nodes[0], "TYPE", row) == "hash" {
				field := []string{"attempts", "priority", "revived", "state"}[r.IntN(4)]
				value := []string{"x", "-1", "0", "2", "dead"}[r.IntN(5)]
				tw.both("HSET", row, field, value)
			}
		case 6:
			tw.both("ZREM", set(sets[r.IntN(len(sets))]), id.String())
		case 7: // a row of another type mended
			if str(t, tw.nodes[0], "TYPE", row) == "string" {
				tw.both("DEL", row)
			}
		}
		tw.same(what+": a claim after a write by hand", tw.claim(w.long, 1+r.IntN(2)))
	}
}

// noteClaimed adds the attempts claimed since it last looked to claimed,
// in a fixed order.
func (w *walk) noteClaimed() {
	var names []string
	for name := range w.tw.jobs[0] {
		if !w.seen[name] {
			w.seen[name] = true
			names = append(names, name)
		}
	}
	slices.Sort(names)
	for _, name := range names {
		w.claimed = append(w.claimed, w.tw.jobs[0][name])
	}
}

// mint is a new JOB id.
func (w *walk) mint() ids.ID { return w.tw.nodes[0].m.Mint(ids.Job) }

// note remembers id as one of the walk's.
func (w *walk) note(id ids.ID) {
	if !slices.Contains(w.ids, id) {
		w.ids = append(w.ids, id)
	}
}
