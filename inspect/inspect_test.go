package inspect_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/echomq/emq/client"
	emqerrors "github.com/echomq/emq/errors"
	"github.com/echomq/emq/ids"
	"github.com/echomq/emq/inspect"
	"github.com/echomq/emq/internal/queuetest"
	"github.com/echomq/emq/internal/valkeytest"
	"github.com/echomq/emq/keys"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/valkey-io/valkey-go"
)

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

// clock is a settable clock for an Inspector.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// fixed is an Inspector over vk whose clock stands at the fixture's Now.
func fixed(vk valkey.Client) *inspect.Inspector {
	return inspect.New(vk, inspect.Options{Now: func() time.Time { return queuetest.Now }})
}

// TestReadingQueues: what an operator reads of the fixture's queues, on
// one server.
func TestReadingQueues(t *testing.T) {
	s := valkeytest.Start(t, valkeytest.Options{})
	f := queuetest.Fill(t, s.Client())
	in := fixed(s.Client())

	t.Run("discovery finds every queue and no topic", func(t *testing.T) {
		names, err := in.Queues(ctx(t))
		require.NoError(t, err)
		assert.Equal(t, []string{"emails", "invoices", "payments"}, names)
	})
	t.Run("a queue of only a config or only schedules is found", func(t *testing.T) {
		require.NoError(t, s.Do("HSET", keys.Set("quiet", keys.Config), "paused", "1").Error())
		require.NoError(t, s.Do("ZADD", keys.Set("cron", keys.Repeats), "1", "nightly").Error())
		t.Cleanup(func() { s.Do("DEL", keys.Set("quiet", keys.Config), keys.Set("cron", keys.Repeats)) })
		names, err := inspect.New(s.Client(), inspect.Options{}).Queues(ctx(t))
		require.NoError(t, err)
		assert.Equal(t, []string{"cron", "emails", "invoices", "payments", "quiet"}, names)
		sums, err := in.Summaries(ctx(t), []string{"cron", "quiet", "nosuch"})
		require.NoError(t, err)
		assert.Equal(t, int64(1), sums[0].Repeats, "its schedules counted")
		for i, blank := range []bool{false, false, true} {
			assert.Equal(t, blank, sums[i].Blank(), "%s: a schedule or a setting is no mistyped name", sums[i].Queue)
		}
	})
	t.Run("summaries count each state and read the config", func(t *testing.T) {
		sums, err := in.Summaries(ctx(t), []string{"emails", "payments", "invoices", "nosuch"})
		require.NoError(t, err)
		require.Len(t, sums, 4)
		emails := sums[0]
		assert.Equal(t, map[inspect.State]int64{"pending": 3, "active": 1, "delayed": 1, "dead": 2}, emails.Counts)
		assert.Equal(t, int64(7), emails.Total())
		assert.False(t, emails.Paused)
		assert.Equal(t, "-", emails.Limit.String())
		assert.Equal(t, f.EmailsPending[1].String(), emails.Head, "the oldest pending job waits at priority 2")
		assert.Equal(t, time.Hour-6*time.Second, emails.HeadAge, "the head was minted 6 s after T0")
		payments := sums[1]
		assert.True(t, payments.Paused)
		assert.Equal(t, inspect.Limit{Max: 10, Window: time.Second}, payments.Limit)
		assert.Equal(t, "10/1s", payments.Limit.String())
		assert.Equal(t, map[inspect.State]int64{"pending": 0, "active": 0, "delayed": 0, "dead": 0}, sums[3].Counts)
		assert.Empty(t, sums[3].Head, "an unknown queue is empty, not an error")
	})
	t.Run("delayed jobs due and leases passed are counted by the inspector's clock", func(t *testing.T) {
		for _, tc := range []struct {
			after        time.Duration // past the fixture's Now: its delayed job is due at +30m, its lease passes after +5m
			due, expired int64
		}{{0, 0, 0}, {5 * time.Minute, 0, 0}, {10 * time.Minute, 0, 1}, {30 * time.Minute, 1, 1}} {
			at := inspect.New(s.Client(), inspect.Options{Now: func() time.Time { return queuetest.Now.Add(tc.after) }})
			sum, err := at.Summary(ctx(t), "emails")
			require.NoError(t, err)
			assert.Equal(t, tc.due, sum.Due, "due at +%v", tc.after)
			assert.Equal(t, tc.expired, sum.Expired, "expired at +%v", tc.after)
			assert.Equal(t, int64(1), sum.Counts[inspect.Delayed], "counted where it is")
		}
	})
	t.Run("a config written by hand reads as the verbs read it", func(t *testing.T) {
		for i, tc := range []struct {
			config []string
			paused bool
			limit  string
			claims int // of 3 pending jobs, what a claim of 10 delivers
		}{
			{[]string{"paused", "0"}, true, "-", 0},
			{[]string{"paused", ""}, true, "-", 0},
			{[]string{"rate_max", "2", "rate_ms", "60000"}, false, "2/1m0s", 2},
			{[]string{"rate_max", "05", "rate_ms", "60000"}, false, "-", 3},
			{[]string{"rate_max", "2000000", "rate_ms", "60000"}, false, "-", 3},
			{[]string{"rate_max", "2"}, false, "-", 3},
		} {
			t.Run(strings.Join(tc.config, " "), func(t *testing.T) {
				q := fmt.Sprintf("byhand%d", i)
				made := []string{keys.Set(q, keys.Config), keys.Set(q, keys.Limiter), keys.Pending(q), keys.Set(q, keys.ActiveSet)}
				require.NoError(t, s.Do(append([]string{"HSET", made[0]}, tc.config...)...).Error())
				for j := range 3 {
					id := fmt.Sprintf("JOB0018f2a4c1e%05d", j)
					made = append(made, keys.Job(q, id))
					require.NoError(t, s.Do("EMQ.ENQUEUE", "2", keys.Job(q, id), keys.Pending(q), id, "p").Error())
				}
				t.Cleanup(func() { s.Do(append([]string{"DEL"}, made...)...) })
				sum, err := in.Summary(ctx(t), q)
				require.NoError(t, err)
				assert.Equal(t, tc.paused, sum.Paused)
				assert.Equal(t, tc.limit, sum.Limit.String())
				claimed, err := s.Do("EMQ.CLAIM", "4", keys.Pending(q), keys.Set(q, keys.ActiveSet), keys.Set(q, keys.DelayedSet),
					keys.Set(q, keys.DeadSet), "60000", "10", "3").ToArray()
				if tc.claims == 0 {
					assert.True(t, valkey.IsValkeyNil(err), "the verb claims nothing: %v", err)
				} else {
					require.NoError(t, err)
					assert.Len(t, claimed, tc.claims, "what the verb does")
				}
			})
		}
	})
	t.Run("a queue with a key of another type is unreadable, the others are read", func(t *testing.T) {
		require.NoError(t, s.Do("SET", keys.Pending("wt"), "notazset").Error())
		require.NoError(t, s.Do("HSET", keys.Set("cfg", keys.Config), "x", "1").Error())
		require.NoError(t, s.Do("SET", keys.Pending("cfg"), "x").Error())
		t.Cleanup(func() { s.Do("DEL", keys.Pending("wt"), keys.Pending("cfg"), keys.Set("cfg", keys.Config)) })
		sums, err := in.Summaries(ctx(t), []string{"emails", "wt", "payments", "cfg"})
		require.NoError(t, err)
		require.Len(t, sums, 4)
		assert.NoError(t, sums[0].Err)
		assert.Equal(t, int64(7), sums[0].Total())
		for _, broken := range []inspect.Summary{sums[1], sums[3]} {
			assert.ErrorContains(t, broken.Err, "WRONGTYPE", broken.Queue)
			assert.True(t, inspect.Refused(broken.Err))
		}
		assert.True(t, sums[2].Paused, "the queue after it read as usual")
		_, err = in.Summary(ctx(t), "wt")
		assert.ErrorContains(t, err, "WRONGTYPE", "asked for alone, the queue is its error")
	})
	t.Run("dead jobs list newest first with their errors", func(t *testing.T) {
		rows, total, err := in.Jobs(ctx(t), "emails", inspect.Dead, 0, 10)
		require.NoError(t, err)
		assert.Equal(t, int64(2), total)
		require.Len(t, rows, 2)
		for i, r := range rows {
			assert.Equal(t, f.EmailsDead[i].String(), r.ID)
			assert.True(t, r.Row)
			assert.Equal(t, int64(1), r.Attempts)
			assert.Equal(t, f.DeadError, r.Error)
			assert.Equal(t, int64(len("to: bob@example.com")), r.PayloadSize)
		}
		assert.Equal(t, queuetest.T0.Add(20*time.Minute), rows[0].At().UTC())
	})
	t.Run("pending jobs page in claim order", func(t *testing.T) {
		var got []string
		var priorities []int64
		for offset := 0; ; offset += 2 {
			rows, total, err := in.Jobs(ctx(t), "emails", inspect.Pending, offset, 2)
			require.NoError(t, err)
			assert.Equal(t, int64(3), total)
			if len(rows) == 0 {
				break
			}
			for _, r := range rows {
				got = append(got, r.ID)
				priorities = append(priorities, r.Priority)
				assert.True(t, r.At().IsZero(), "a pending score is a priority, not a time")
			}
		}
		assert.Equal(t, []string{f.EmailsPending[1].String(), f.EmailsPending[2].String(), f.EmailsPending[0].String()}, got,
			"priority 0 first, in mint order, then priority 2")
		assert.Equal(t, []int64{0, 0, queuetest.EmailsPriority}, priorities)
	})
	t.Run("a page outside 1 … MaxPage is refused", func(t *testing.T) {
		for _, page := range [][2]int{{-1, 10}, {0, 0}, {0, inspect.MaxPage + 1}} {
			_, _, err := in.Jobs(ctx(t), "emails", inspect.Dead, page[0], page[1])
			assert.Error(t, err, "offset %d limit %d", page[0], page[1])
		}
	})
	t.Run("a dangling member lists without a row", func(t *testing.T) {
		require.NoError(t, s.Do("ZADD", keys.Set("emails", "delayed"), "1", "JOB00000000000000ff").Error())
		t.Cleanup(func() { s.Do("ZREM", keys.Set("emails", "delayed"), "JOB00000000000000ff") })
		rows, _, err := in.Jobs(ctx(t), "emails", inspect.Delayed, 0, 10)
		require.NoError(t, err)
		require.Len(t, rows, 2)
		assert.False(t, rows[0].Row)
		assert.True(t, rows[1].Row)
	})
	// strayDelayed lists the delayed jobs of emails with id due first,
	// whose row a hand wrote with the command row (its key appended after
	// the command's name), both gone when the test ends.
	strayDelayed := func(t *testing.T, id string, row ...string) []inspect.JobRow {
		require.NoError(t, s.Do("ZADD", keys.Set("emails", "delayed"), "1", id).Error())
		require.NoError(t, s.Do(slices.Concat(row[:1], []string{keys.Job("emails", id)}, row[1:])...).Error())
		t.Cleanup(func() {
			s.Do("ZREM", keys.Set("emails", "delayed"), id)
			s.Do("DEL", keys.Job("emails", id))
		})
		rows, _, err := in.Jobs(ctx(t), "emails", inspect.Delayed, 0, 10)
		require.NoError(t, err)
		require.Len(t, rows, 2)
		return rows
	}
	t.Run("a row of another type lists as dangling, NotHash, and the page goes on", func(t *testing.T) {
		rows := strayDelayed(t, "JOB00000000000000fd", "SET", "str")
		assert.Equal(t, inspect.JobRow{ID: "JOB00000000000000fd", State: inspect.Delayed, Score: 1, NotHash: true,
			Age: rows[0].Age}, rows[0], "no row, no fields")
		assert.True(t, rows[1].Row)
	})
	t.Run("a member that is no JOB id lists without a row, whatever a hand wrote under it", func(t *testing.T) {
		rows := strayDelayed(t, "not-a-job", "HSET", "attempts", "3", "priority", "2")
		assert.Equal(t, inspect.JobRow{ID: "not-a-job", State: inspect.Delayed, Score: 1}, rows[0], "no row, no fields")
		assert.False(t, rows[0].IsJob())
		assert.True(t, rows[1].IsJob())
	})
	t.Run("search by id finds the queue holding the job", func(t *testing.T) {
		found, unreadable, err := in.Find(ctx(t), f.PaymentsPending[1].String())
		require.NoError(t, err)
		assert.Equal(t, []string{"payments"}, found)
		assert.Empty(t, unreadable)
		found, _, err = in.Find(ctx(t), "JOB00000000000000ff")
		require.NoError(t, err)
		assert.Empty(t, found)
	})
	t.Run("search by id finds a kept done job of a queue drained since", func(t *testing.T) {
		const id = "JOB00000000000000fe"
		require.NoError(t, s.Do("HSET", keys.Job("drained", id), "state", "done", "attempts", "1", "result", "r").Error())
		t.Cleanup(func() { s.Do("DEL", keys.Job("drained", id)) })
		found, _, err := in.Find(ctx(t), id)
		require.NoError(t, err)
		assert.Equal(t, []string{"drained"}, found, "no queue discovery finds holds it")
	})
	t.Run("search as a user granted one queue's keys names the queues it may not read", func(t *testing.T) {
		vk := s.ClientAs(t, "emails", "+@all", "~"+keys.Set("emails", "*"))
		found, unreadable, err := fixed(vk).Find(ctx(t), f.PaymentsPending[1].String())
		require.NoError(t, err, "a queue it may not read is no failure of the search")
		assert.Empty(t, found)
		assert.Equal(t, []string{"invoices", "payments"}, unreadable)
		found, _, err = fixed(vk).Find(ctx(t), f.EmailsDead[0].String())
		require.NoError(t, err)
		assert.Equal(t, []string{"emails"}, found)
	})
	t.Run("INFO emq reads as ordered integer fields", func(t *testing.T) {
		nodes, err := in.Stats(ctx(t))
		require.NoError(t, err)
		require.Len(t, nodes, 1)
		assert.Equal(t, s.Addr, nodes[0].Addr)
		assert.Equal(t, int64(3), nodes[0].Get("emq_jobs_dead"), "the fixture's deaths")
		assert.Equal(t, int64(1), nodes[0].Get("emq_jobs_delayed"))
		assert.Equal(t, "emq_calls_enqueue", nodes[0].Fields[0].Name)
		assert.True(t, inspect.IsLevel("emq_blocked_workers"))
		assert.False(t, inspect.IsLevel("emq_jobs_acked"))
	})
}

// TestABusyServerFailsTheReadNotTheQueues: a server busy with a script
// answers every read BUSY, which says nothing of a queue's keys: the read
// fails (a scrape fails, the target is marked down), where a queue with a
// key of another type is one unreadable queue among those read.
func TestABusyServerFailsTheReadNotTheQueues(t *testing.T) {
	s := valkeytest.Start(t, valkeytest.Options{Config: []string{"busy-reply-threshold", "50"}})
	queuetest.Fill(t, s.Client())
	in := fixed(s.Client())
	scripter := s.ClientAs(t, "scripter", "+@all", "~*") // a connection of its own
	busy := make(chan error, 1)
	go func() {
		busy <- scripter.Do(context.Background(), scripter.B().Eval().Script("while true do end").Numkeys(0).Build()).Error()
	}()
	require.Eventually(t, func() bool { return strings.HasPrefix(fmt.Sprint(s.Do("PING").Error()), "BUSY") },
		10*time.Second, 20*time.Millisecond, "the script to run")
	sums, err := in.Summaries(ctx(t), []string{"emails", "payments"})
	require.Error(t, err, "summaries %v", sums)
	assert.Contains(t, err.Error(), "BUSY")
	require.NoError(t, s.Do("SCRIPT", "KILL").Error())
	<-busy
	sums, err = in.Summaries(ctx(t), []string{"emails", "payments"})
	require.NoError(t, err)
	assert.NoError(t, sums[0].Err)
}

// TestDiscoveryCache: a list of queues is served from cache while fresh,
// then served stale while one background scan refreshes it, and scanned
// before it is served once it is twice the cache's time old.
func TestDiscoveryCache(t *testing.T) {
	s := valkeytest.Start(t, valkeytest.Options{})
	clk := &clock{now: time.Now()}
	in := inspect.New(s.Client(), inspect.Options{CacheFor: time.Minute, Now: clk.Now, ScanCount: 10})
	enqueue := func(q string) {
		require.NoError(t, s.Do("ZADD", keys.Pending(q), "0", "JOB0000000000000001").Error())
	}
	enqueue("a")
	for i := range 500 { // keys that are no queue: many SCAN calls of COUNT 10
		require.NoError(t, s.Do("SET", fmt.Sprintf("other:%d", i), "x").Error())
	}
	names, err := in.Queues(ctx(t))
	require.NoError(t, err)
	assert.Equal(t, []string{"a"}, names)

	enqueue("b")
	names, err = in.Queues(ctx(t))
	require.NoError(t, err)
	assert.Equal(t, []string{"a"}, names, "fresh: from the cache")

	clk.Add(time.Minute)
	names, err = in.Queues(ctx(t))
	require.NoError(t, err)
	assert.Equal(t, []string{"a"}, names, "stale: answered at once")
	assert.Eventually(t, func() bool {
		names, err := in.Queues(ctx(t))
		return err == nil && len(names) == 2
	}, 10*time.Second, 10*time.Millisecond, "the background scan finds b")

	enqueue("c")
	names, err = in.Refresh(ctx(t))
	require.NoError(t, err)
	assert.Equal(t, []string{"a", "b", "c"}, names, "Refresh scans now")

	enqueue("d")
	clk.Add(2 * time.Minute) // nobody asked meanwhile
	names, err = in.Queues(ctx(t))
	require.NoError(t, err)
	assert.Equal(t, []string{"a", "b", "c", "d"}, names, "too old to serve: scanned first")
}

// TestDiscoveryWaitsNoLongerThanItsContext: a scan waits for the one under
// way only as long as its own context allows — a page or a scrape while
// the server is stalled is answered at its bound, not held up until the
// other scan's ends too.
func TestDiscoveryWaitsNoLongerThanItsContext(t *testing.T) {
	s := valkeytest.Start(t, valkeytest.Options{})
	require.NoError(t, s.Do("ZADD", keys.Pending("a"), "0", "JOB0000000000000001").Error())
	in := inspect.New(s.Client(), inspect.Options{})
	_, err := in.Refresh(ctx(t))
	require.NoError(t, err)
	thaw := s.Freeze(t)
	defer thaw()
	first := make(chan struct{})
	go func() {
		defer close(first)
		c, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, _ = in.Refresh(c) // held up by the stalled server
	}()
	time.Sleep(200 * time.Millisecond)
	c, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	began := time.Now()
	_, err = in.Queues(c)
	took := time.Since(began)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Less(t, took, 2500*time.Millisecond, "answered at its own bound (500 ms), not the first scan's (5 s)")
	thaw()
	<-first
}

// scans is a client that notes the most SCANs it had in flight at once;
// each takes a few milliseconds more, so that scans at once overlap.
type scans struct {
	valkey.Client
	mu            sync.Mutex
	now, mostSeen int
}

func (c *scans) Do(ctx context.Context, cmd valkey.Completed) valkey.ValkeyResult {
	if cmd.Commands()[0] != "SCAN" {
		return c.Client.Do(ctx, cmd)
	}
	c.mu.Lock()
	c.now++
	c.mostSeen = max(c.mostSeen, c.now)
	c.mu.Unlock()
	defer func() { c.mu.Lock(); c.now--; c.mu.Unlock() }()
	time.Sleep(2 * time.Millisecond)
	return c.Client.Do(ctx, cmd)
}

// TestSearchesScanOneAtATime: a search for an id no queue discovered
// holds scans the keyspace for its row, and searches at once — a page
// that asks the dashboard's search again and again — scan one at a time,
// as discovery does, not one each: each whole scan costs the server's
// thread some 0.4 µs a key (0.8 s at 2 million keys).
func TestSearchesScanOneAtATime(t *testing.T) {
	s := valkeytest.Start(t, valkeytest.Options{})
	require.NoError(t, s.Do("ZADD", keys.Pending("a"), "0", "JOB0000000000000001").Error())
	for i := range 200 { // keys that are no queue: many SCAN calls of COUNT 10
		require.NoError(t, s.Do("SET", fmt.Sprintf("other:%d", i), "x").Error())
	}
	vk := &scans{Client: s.Client()}
	in := inspect.New(vk, inspect.Options{ScanCount: 10})
	_, err := in.Refresh(ctx(t))
	require.NoError(t, err)
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			found, _, err := in.Find(ctx(t), fmt.Sprintf("JOB00000000000000%02x", 0xf0+i))
			assert.NoError(t, err)
			assert.Empty(t, found)
		}()
	}
	wg.Wait()
	assert.Equal(t, 1, vk.mostSeen, "one scan at a time")
}

// TestForEach: a bulk action visits each selected job once, in batches,
// through the verb it is given.
func TestForEach(t *testing.T) {
	s := valkeytest.Start(t, valkeytest.Options{})
	c := client.New(s.Client())
	m, err := ids.NewMinter(3)
	require.NoError(t, err)
	q, err := c.Queue("bulk", m, client.Policy{})
	require.NoError(t, err)
	in := inspect.New(s.Client(), inspect.Options{})
	const n = 250
	queuetest.Dead(t, s.Client(), "bulk", n)
	revive := func(ctx context.Context, id ids.ID) error { return q.Revive(ctx, id) }

	t.Run("a selection before a time leaves the later jobs", func(t *testing.T) {
		p, err := in.ForEach(ctx(t), inspect.Selection{Queue: "bulk", State: inspect.Dead, Before: time.UnixMilli(1)}, revive, nil)
		require.NoError(t, err)
		assert.Equal(t, inspect.Progress{}, p)
		assert.Equal(t, int64(n), zcard(t, s, keys.Set("bulk", "dead")))
	})
	t.Run("revive all counts every job once, with failures skipped", func(t *testing.T) {
		require.NoError(t, s.Do("ZADD", keys.Set("bulk", "dead"), "0", "JOB00000000000000ff").Error()) // no row: EMQNOJOB
		var reports []inspect.Progress
		p, err := in.ForEach(ctx(t), inspect.Selection{Queue: "bulk", State: inspect.Dead}, revive,
			func(p inspect.Progress) { reports = append(reports, p) })
		require.NoError(t, err)
		assert.Equal(t, n+1, p.Total)
		assert.Equal(t, n, p.Done)
		assert.Equal(t, 1, p.Failed)
		assert.ErrorIs(t, p.Err, emqerrors.NoJob)
		assert.Len(t, reports, 3, "batches of 100")
		assert.Equal(t, int64(n), zcard(t, s, keys.Pending("bulk")))
		assert.Equal(t, int64(1), zcard(t, s, keys.Set("bulk", "dead")), "the dangling id stays")
	})
	t.Run("a deadline passed before ctx's timer says so is the stop, not a read that failed on it", func(t *testing.T) {
		queuetest.Dead(t, s.Client(), "late", 150)
		late, err := c.Queue("late", m, client.Policy{})
		require.NoError(t, err)
		deadline := time.Now().Add(300 * time.Millisecond)
		ctx := lagging{Context: ctx(t), deadline: deadline}
		p, err := in.ForEach(ctx, inspect.Selection{Queue: "late", State: inspect.Dead}, func(ctx context.Context, id ids.ID) error {
			time.Sleep(time.Until(deadline)) // the first batch outlasts the deadline
			return late.Revive(context.Background(), id)
		}, nil)
		assert.Equal(t, context.DeadlineExceeded, err)
		assert.Equal(t, inspect.Progress{Total: 150, Done: 100}, p)
	})
}

// lagging is a context whose deadline passes with Err still nil, as a
// context's is between its deadline and its timer's firing.
type lagging struct {
	context.Context
	deadline time.Time
}

func (l lagging) Deadline() (time.Time, bool) { return l.deadline, true }

func zcard(t *testing.T, s *valkeytest.Server, key string) int64 {
	t.Helper()
	n, err := s.Do("ZCARD", key).AsInt64()
	require.NoError(t, err)
	return n
}

// addrsOf is the addresses of nodes.
func addrsOf(nodes []inspect.Node) []string {
	addrs := make([]string, len(nodes))
	for i, n := range nodes {
		addrs[i] = n.Addr
	}
	return addrs
}

// TestClusterDiscovery: on a cluster every primary is scanned, replicas
// are not, and counts come from the node serving each queue.
func TestClusterDiscovery(t *testing.T) {
	cl := valkeytest.StartCluster(t, 3, 1, valkeytest.Options{})
	queuetest.Fill(t, cl.Client())
	in := fixed(cl.Client())
	primaries, err := in.Primaries(ctx(t))
	require.NoError(t, err)
	var want []string
	for _, p := range cl.Primaries {
		want = append(want, p.Addr)
	}
	assert.ElementsMatch(t, want, addrsOf(primaries))

	names, err := in.Queues(ctx(t))
	require.NoError(t, err)
	assert.Equal(t, []string{"emails", "invoices", "payments"}, names)
	owners := map[string]bool{}
	for _, q := range names {
		owners[cl.Owner(t, cl.Slot(t, keys.Pending(q))).Addr] = true
	}
	assert.Greater(t, len(owners), 1, "the fixture's queues live on more than one primary")
	sums, err := in.Summaries(ctx(t), names)
	require.NoError(t, err)
	assert.Equal(t, int64(7), sums[0].Total())
	stats, err := in.Stats(ctx(t))
	require.NoError(t, err)
	assert.Len(t, stats, 3)
	assert.Equal(t, int64(3), inspect.Sum(stats)[indexOf(t, inspect.Sum(stats), "emq_jobs_dead")].Value)

	t.Run("a primary promoted since the client read the cluster is named as not read yet, not as down", func(t *testing.T) {
		promoted := cl.Replicas[1]
		// valkey-go knows a replica only if the cluster listed it online
		// when the client read the map — usually not, the replicas just
		// synced; on a loaded machine it may: then the promoted node is
		// one it asks, and is read
		_, knew := cl.Client().Nodes()[promoted.Addr]
		cl.Failover(t, promoted) // the client follows no MOVED meanwhile: it still knows the old primary
		primaries, err := fixed(cl.Client()).Primaries(ctx(t))
		if knew {
			require.NoError(t, err, "the client knew the replica promoted")
			assert.Contains(t, addrsOf(primaries), promoted.Addr)
		} else {
			var lost *inspect.UnreachableError
			require.ErrorAs(t, err, &lost)
			assert.Equal(t, []string{promoted.Addr}, lost.Addrs)
			assert.Contains(t, err.Error(), "primary "+promoted.Addr+" is not read yet (the client has not learned of it:")
			assert.NotContains(t, err.Error(), "did not answer")
		}

		vk := cl.Client()
		for _, q := range []string{"emails", "invoices", "payments"} { // a redirect teaches the client
			require.NoError(t, vk.Do(ctx(t), vk.B().Zcard().Key(keys.Pending(q)).Build()).Error())
		}
		assert.Eventually(t, func() bool {
			_, err := fixed(vk).Primaries(ctx(t))
			return err == nil
		}, 10*time.Second, 50*time.Millisecond, "read once the client has learned of it")
	})
	t.Run("a replica down hides no queue", func(t *testing.T) {
		cl.Replicas[0].Stop()
		names, err := fixed(cl.Client()).Refresh(ctx(t))
		require.NoError(t, err)
		assert.Equal(t, []string{"emails", "invoices", "payments"}, names)
	})
}

// TestClusterPrimaryDown: a primary that does not answer is never left out
// silently — the reads name it in an *UnreachableError alongside what the
// other primaries hold, and no list that lacks it is cached.
func TestClusterPrimaryDown(t *testing.T) {
	cl := valkeytest.StartCluster(t, 3, 0, valkeytest.Options{})
	queuetest.Fill(t, cl.Client())
	in := fixed(cl.Client())
	down := cl.Owner(t, cl.Slot(t, keys.Pending("emails")))
	var kept []string
	for _, q := range []string{"emails", "invoices", "payments"} {
		if cl.Owner(t, cl.Slot(t, keys.Pending(q))) != down {
			kept = append(kept, q)
		}
	}
	_, err := in.Primaries(ctx(t)) // every primary answers: the list is cached
	require.NoError(t, err)
	down.Stop()
	var lost *inspect.UnreachableError
	for _, read := range []struct {
		name string
		run  func() (int, error)
	}{
		{"Refresh", func() (int, error) { names, err := in.Refresh(ctx(t)); return len(names), err }},
		{"Queues", func() (int, error) { names, err := in.Queues(ctx(t)); return len(names), err }},
		{"Overview", func() (int, error) { sums, err := in.Overview(ctx(t)); return len(sums), err }},
		{"Stats", func() (int, error) { nodes, err := in.Stats(ctx(t)); return len(nodes) + 1, err }},
		{"Queues again: nothing was cached", func() (int, error) { names, err := in.Queues(ctx(t)); return len(names), err }},
	} {
		t.Run(read.name+" names the primary down and reads the others", func(t *testing.T) {
			n, err := read.run()
			require.ErrorAs(t, err, &lost)
			assert.True(t, inspect.Partial(err))
			assert.Equal(t, []string{down.Addr}, lost.Addrs)
			assert.Contains(t, err.Error(), "primary "+down.Addr+" did not answer")
			if read.name == "Stats" {
				assert.Equal(t, 3, n, "the two primaries that answer")
			} else {
				assert.Equal(t, len(kept), n, "the queues of the primaries that answer: %v", kept)
			}
		})
	}
	t.Run("the primaries known before are not served from the cache", func(t *testing.T) {
		in := inspect.New(cl.Client(), inspect.Options{CacheFor: time.Hour})
		nodes, err := in.Primaries(ctx(t))
		require.ErrorAs(t, err, &lost)
		assert.Len(t, nodes, 2)
	})
}

// TestClusterNodeStalled: a primary that neither answers nor closes its
// connections (stopped, stalled) holds no read up until its deadline: it
// is named as one down, and the others are read as usual, within seconds.
func TestClusterNodeStalled(t *testing.T) {
	cl := valkeytest.StartCluster(t, 3, 0, valkeytest.Options{})
	queuetest.Fill(t, cl.Client())
	read := func(t *testing.T) (int, time.Duration, error) {
		c, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		began := time.Now()
		sums, err := fixed(cl.Client()).Overview(c)
		return len(sums), time.Since(began), err
	}
	t.Run("a primary stalled is named, and the others read", func(t *testing.T) {
		down := cl.Owner(t, cl.Slot(t, keys.Pending("emails")))
		kept := 0
		for _, q := range []string{"emails", "invoices", "payments"} {
			if cl.Owner(t, cl.Slot(t, keys.Pending(q))) != down {
				kept++
			}
		}
		thaw := down.Freeze(t)
		defer thaw()
		n, took, err := read(t)
		var lost *inspect.UnreachableError
		require.ErrorAs(t, err, &lost)
		assert.Equal(t, []string{down.Addr}, lost.Addrs)
		assert.Equal(t, kept, n, "the queues of the primaries that answer")
		assert.Less(t, took, 10*time.Second, "not held up until the deadline")
	})
}

func indexOf(t *testing.T, fields []inspect.Field, name string) int {
	t.Helper()
	for i, f := range fields {
		if f.Name == name {
			return i
		}
	}
	t.Fatalf("no field %s", name)
	return -1
}

// stalledCluster is a cluster whose nodes flag a stalled node failed only
// after a minute: a test's reads meet it stalled, not yet failed.
func stalledCluster(t *testing.T, replicasEach int) *valkeytest.Cluster {
	cl := valkeytest.StartCluster(t, 3, replicasEach, valkeytest.Options{Config: []string{"cluster-node-timeout", "60000"}})
	queuetest.Fill(t, cl.Client())
	return cl
}

// timed runs read under a bound of 10 s, a scrape's, and says how long it
// took.
func timed(read func(ctx context.Context) error) (time.Duration, error) {
	c, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	began := time.Now()
	err := read(c)
	return time.Since(began), err
}

// TestClusterReplicaStalled: a replica that neither answers nor closes
// its connections costs a read one wait of 2 s at most, the first time it
// is met — not one per ROLE round of each read — and fails none: its
// copies are not read. (Before: 4 s a scrape, and one in three failed at
// its 10 s bound naming a primary that answered, the bound spent waiting
// on the replica.)
func TestClusterReplicaStalled(t *testing.T) {
	cl := stalledCluster(t, 1)
	in := inspect.New(cl.ClientOfEveryNode(t, valkey.ClientOption{}), inspect.Options{})
	scrape := func(ctx context.Context) error { // as dashboard.Collector reads
		sums, err := in.Overview(ctx)
		if err != nil {
			return err
		}
		nodes, err := in.Stats(ctx)
		if err == nil && (len(sums) != 3 || len(nodes) != 3) {
			err = fmt.Errorf("%d queues, %d nodes read", len(sums), len(nodes))
		}
		return err
	}
	require.NoError(t, scrape(ctx(t)))
	cl.Replicas[1].Freeze(t)
	var total time.Duration
	for i := range 4 {
		took, err := timed(scrape)
		require.NoError(t, err, "scrape %d", i)
		assert.Less(t, took, 4*time.Second, "scrape %d: one wait of 2 s at most", i)
		if i > 0 {
			assert.Less(t, took, 1500*time.Millisecond, "scrape %d: the replica, silent already, is not waited on again", i)
		}
		total += took
	}
	assert.Less(t, total, 6*time.Second, "four scrapes")
}

// TestClusterPrimaryStalled: a primary that neither answers nor closes its
// connections costs one wait of 2 s, the first read that meets it; later
// reads name it at once while it stays silent, and read it again once it
// answers. (Before: emq queues 4 s, a dashboard page 6 s — each ROLE
// round of a read waited 2 s for it again.)
func TestClusterPrimaryStalled(t *testing.T) {
	cl := stalledCluster(t, 0)
	in := fixed(cl.ClientOfEveryNode(t, valkey.ClientOption{}))
	down := cl.Owner(t, cl.Slot(t, keys.Pending("emails")))
	_, err := in.Primaries(ctx(t))
	require.NoError(t, err)
	thaw := down.Freeze(t)
	page := func(ctx context.Context) error { // as the dashboard's overview reads
		if _, err := in.Primaries(ctx); !inspect.Partial(err) {
			return fmt.Errorf("primaries: %v", err)
		}
		names, err := in.Queues(ctx)
		if !inspect.Partial(err) {
			return fmt.Errorf("queues: %v", err)
		}
		_, err = in.Summaries(ctx, names)
		return err
	}
	reads := []struct {
		name string
		read func(ctx context.Context) error
	}{
		{"emq queues", func(ctx context.Context) error { _, err := in.Queues(ctx); return err }},
		{"the overview page", page},
		{"a scrape", func(ctx context.Context) error {
			if _, err := in.Overview(ctx); !inspect.Partial(err) {
				return fmt.Errorf("overview: %v", err)
			}
			_, err := in.Stats(ctx)
			return err
		}},
	}
	var total time.Duration
	for i, r := range reads {
		took, err := timed(r.read)
		var lost *inspect.UnreachableError
		if r.name != "the overview page" {
			require.ErrorAs(t, err, &lost, r.name)
			assert.Equal(t, []string{down.Addr}, lost.Addrs, r.name)
			assert.Contains(t, err.Error(), "primary "+down.Addr+" did not answer", r.name)
		} else {
			require.NoError(t, err, r.name)
		}
		assert.Less(t, took, 4*time.Second, "%s: one wait of 2 s at most", r.name)
		if i > 0 {
			assert.Less(t, took, 1500*time.Millisecond, "%s: the primary, silent already, is not waited on again", r.name)
		}
		total += took
	}
	assert.Less(t, total, 5*time.Second, "the three reads")

	thaw()
	assert.Eventually(t, func() bool {
		_, err := in.Primaries(ctx(t))
		return err == nil
	}, 10*time.Second, 50*time.Millisecond, "read again once it answers")
}

// TestClusterPrimaryFailed: a primary the cluster has flagged failed (no
// replica to promote) is named as down, whether the client still knows
// it or has dropped it from its slot map — not as one a failover promoted
// that the client has not learned of yet.
func TestClusterPrimaryFailed(t *testing.T) {
	cl := valkeytest.StartCluster(t, 3, 0, valkeytest.Options{})
	queuetest.Fill(t, cl.Client())
	down := cl.Primaries[1]
	knew := fixed(cl.Client())
	_, err := knew.Primaries(ctx(t))
	require.NoError(t, err)
	id := cl.ID(t, down)
	down.Freeze(t)
	var text string
	flagged := assert.Eventually(t, func() bool {
		var err error
		if text, err = cl.Primaries[0].Do("CLUSTER", "NODES").ToString(); err != nil {
			return false
		}
		for line := range strings.Lines(strings.TrimPrefix(text, "txt:")) { // RESP3's verbatim string
			if f := strings.Fields(line); len(f) > 2 && f[0] == id {
				return slices.Contains(strings.Split(f[2], ","), "fail")
			}
		}
		return false
	}, time.Minute, 100*time.Millisecond, "the cluster flags the primary failed")
	if !flagged {
		t.Fatalf("CLUSTER NODES of %s said:\n%s", cl.Primaries[0].Addr, text)
	}
	vk, err := valkey.NewClient(valkey.ClientOption{InitAddress: []string{cl.Primaries[0].Addr, cl.Primaries[2].Addr}, DisableCache: true})
	require.NoError(t, err)
	t.Cleanup(vk.Close)
	// valkey-go leaves a failed primary out of a new client's map on
	// Valkey (CLUSTER SHARDS); Redis 7.0's CLUSTER SLOTS keeps it, and the
	// new client asks it too: named down either way
	for name, in := range map[string]*inspect.Inspector{"a client that knew it": knew, "a client that never did": fixed(vk)} {
		t.Run(name, func(t *testing.T) {
			nodes, err := in.Stats(ctx(t)) // asks afresh
			var lost *inspect.UnreachableError
			require.ErrorAs(t, err, &lost)
			assert.Len(t, nodes, 2)
			assert.Equal(t, []string{down.Addr}, lost.Addrs)
			assert.Contains(t, err.Error(), "primary "+down.Addr+" is down (the cluster marks it failed")
			assert.NotContains(t, err.Error(), "not read yet")
		})
	}
}
