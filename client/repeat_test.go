package client

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/echomq/emq/emq"
	emqerrors "github.com/echomq/emq/errors"
	"github.com/echomq/emq/ids"
	"github.com/echomq/emq/internal/valkeytest"
	"github.com/echomq/emq/keys"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/valkey-io/valkey-go"
)

// TestRepeat: schedules are set, replaced, listed and removed alike on a
// node with the module and on one without, where the scripts write the
// rows the verbs write.
func TestRepeat(t *testing.T) {
	for _, n := range startNodes(t) {
		t.Run(n.String(), func(t *testing.T) {
			t.Run("a schedule is set, listed, replaced and removed", func(t *testing.T) {
				const name = "set"
				q := newQueue(t, n, name, Policy{})
				before := time.Now()
				first, err := q.Repeat(ctx(t), "nightly", "0 3 * * *", []byte("report"),
					RepeatOptions{TZ: "Europe/Paris", Priority: 5, Limit: 10})
				require.NoError(t, err)
				rule, err := emq.ParseRule([]byte("0 3 * * *"), []byte("Europe/Paris"), before.UnixMilli(), 0, 10)
				require.NoError(t, err)
				assert.Equal(t, time.UnixMilli(rule.Next(before.UnixMilli(), 0)), first, "the first tick is the rule's")

				start := time.UnixMilli(time.Now().Add(-time.Minute).UnixMilli())
				end := start.Add(time.Hour)
				every, err := q.Repeat(ctx(t), "often", "@every 250ms", nil, RepeatOptions{Start: start, End: end})
				require.NoError(t, err)
				assert.Zero(t, every.Sub(start)%(250*time.Millisecond), "an interval ticks at start plus whole intervals")
				assert.True(t, every.After(before))

				list, err := q.Schedules(ctx(t))
				require.NoError(t, err)
				require.Len(t, list, 2)
				assert.Equal(t, []string{"often", "nightly"}, []string{list[0].Name, list[1].Name}, "next tick first")
				assert.WithinDuration(t, before, list[1].Start, 5*time.Second, "start 0 is now")
				list[1].Start = time.Time{}
				assert.Equal(t, Schedule{Name: "nightly", Spec: "0 3 * * *", TZ: "Europe/Paris", Payload: []byte("report"),
					Priority: 5, Limit: 10, Number: 1, Next: first}, list[1])
				assert.Equal(t, Schedule{Name: "often", Spec: "@every 250ms", Payload: []byte{}, Start: start, End: end,
					Number: 2, Next: every}, list[0])
				row := hash(t, n, keys.Repeat(name, "nightly"))
				assert.ElementsMatch(t, []string{"spec", "tz", "payload", "priority", "start", "end", "limit", "number", "made", "next", "last"},
					mapKeys(row), "the row holds the verb's fields")
				assert.Equal(t, "2", str(t, n, "HGET", keys.Set(name, keys.Config), "repeat_seq"))

				n.s.Do("HSET", keys.Repeat(name, "nightly"), "made", "4")
				replaced, err := q.Repeat(ctx(t), "nightly", "@hourly", []byte("v2"), RepeatOptions{Limit: 10})
				require.NoError(t, err)
				assert.Equal(t, time.Now().Truncate(time.Hour).Add(time.Hour), replaced)
				row = hash(t, n, keys.Repeat(name, "nightly"))
				assert.Equal(t, []string{"1", "4", "@hourly", "v2"}, []string{row["number"], row["made"], row["spec"], row["payload"]},
					"a replaced schedule keeps its number and its count")
				done, err := q.Repeat(ctx(t), "nightly", "@hourly", nil, RepeatOptions{Limit: 4})
				require.NoError(t, err)
				assert.True(t, done.IsZero(), "a replaced schedule that made its limit has no tick")
				assert.Equal(t, "inf", str(t, n, "ZSCORE", keys.Set(name, keys.Repeats), "nightly"))

				removed, err := q.Unrepeat(ctx(t), "nightly")
				require.NoError(t, err)
				assert.True(t, removed)
				removed, err = q.Unrepeat(ctx(t), "nightly")
				require.NoError(t, err)
				assert.False(t, removed, "removing twice finds nothing")
				n.s.Do("ZADD", keys.Set(name, keys.Repeats), "5", "ghost") // its row deleted by hand
				removed, err = q.Unrepeat(ctx(t), "ghost")
				require.NoError(t, err)
				assert.True(t, removed, "an entry whose row is gone is a schedule removed")
				assert.True(t, valkey.IsValkeyNil(n.s.Do("ZSCORE", keys.Set(name, keys.Repeats), "ghost").Error()), "its entry removed")
				list, err = q.Schedules(ctx(t))
				require.NoError(t, err)
				require.Len(t, list, 1)
				assert.Equal(t, "often", list[0].Name)
				assert.Zero(t, integer(t, n.s, "EXISTS", keys.Repeat(name, "nightly")))
			})
			t.Run("a schedule set again as it was keeps its start and next tick; a new rule ticks anew", func(t *testing.T) {
				const name = "again"
				q := newQueue(t, n, name, Policy{})
				first, err := q.Repeat(ctx(t), "often", "@every 100ms", []byte("v1"), RepeatOptions{})
				require.NoError(t, err)
				time.Sleep(250 * time.Millisecond) // nobody claims: the tick is due
				again, err := q.Repeat(ctx(t), "often", "@every 100ms", []byte("v2"), RepeatOptions{Priority: 2})
				require.NoError(t, err)
				assert.Equal(t, first, again, "the due tick kept, not one after the call")
				list, err := q.Schedules(ctx(t))
				require.NoError(t, err)
				assert.Equal(t, first.Add(-100*time.Millisecond), list[0].Start, "the start kept")
				assert.Equal(t, []byte("v2"), list[0].Payload)
				call := time.Now()
				anew, err := q.Repeat(ctx(t), "often", "@every 100ms", []byte("v2"), RepeatOptions{TZ: "UTC"})
				require.NoError(t, err)
				assert.True(t, anew.After(call.Add(-time.Second)) && anew.After(first), "another zone ticks anew: %v", anew)
			})
			t.Run("schedules are read a page at a time", func(t *testing.T) {
				q := newQueue(t, n, "paged", Policy{})
				var all []string
				for i := 1; i <= 5; i++ {
					name := fmt.Sprintf("every-%dm", i)
					_, err := q.Repeat(ctx(t), name, fmt.Sprintf("@every %dm", i), nil, RepeatOptions{})
					require.NoError(t, err)
					all = append(all, name)
				}
				names := func(list []Schedule) []string {
					out := []string{}
					for _, s := range list {
						out = append(out, s.Name)
					}
					return out
				}
				list, err := q.Schedules(ctx(t))
				require.NoError(t, err)
				require.Equal(t, all, names(list), "next tick first")
				for _, c := range []struct {
					offset, count int
					want          []string
				}{{0, 2, all[:2]}, {2, 2, all[2:4]}, {4, 2, all[4:]}, {5, 2, []string{}}, {1000, 1000, []string{}}, {0, 1000, all}} {
					page, err := q.SchedulesPage(ctx(t), c.offset, c.count)
					require.NoError(t, err)
					assert.Equal(t, c.want, names(page), "from %d, %d of them", c.offset, c.count)
				}
				full, err := q.SchedulesPage(ctx(t), 0, 5)
				require.NoError(t, err)
				assert.Equal(t, list, full, "a page's schedules are read as Schedules reads them")
				for _, c := range [][2]int{{0, 0}, {0, emq.MaxRepeatsPage + 1}, {-1, 1}} {
					_, err := q.SchedulesPage(ctx(t), c[0], c[1])
					require.ErrorIs(t, err, emqerrors.Shape, "offset %d, count %d", c[0], c[1])
				}
			})
			t.Run("a queue without schedules lists none", func(t *testing.T) {
				list, err := newQueue(t, n, "none", Policy{}).Schedules(ctx(t))
				require.NoError(t, err)
				assert.Empty(t, list)
			})
			t.Run("arguments the verb refuses are refused before sending and write nothing", func(t *testing.T) {
				q := newQueue(t, n, "bad", Policy{})
				now := time.Now()
				for _, c := range []struct {
					why, name, spec string
					opts            RepeatOptions
					code            emqerrors.Code
				}{
					{"an interval under a millisecond", "r", "@every 1us", RepeatOptions{}, emqerrors.Shape},
					{"an interval of no duration", "r", "@every 0s", RepeatOptions{}, emqerrors.Shape},
					{"a cron field out of range", "r", "61 * * * *", RepeatOptions{}, emqerrors.Shape},
					{"six cron fields", "r", "0 0 3 * * *", RepeatOptions{}, emqerrors.Shape},
					{"a zone in the spec", "r", "CRON_TZ=UTC 0 3 * * *", RepeatOptions{}, emqerrors.Shape},
					{"an unknown zone", "r", "@daily", RepeatOptions{TZ: "Mars/Olympus"}, emqerrors.Shape},
					{"a negative priority", "r", "@daily", RepeatOptions{Priority: -1}, emqerrors.Shape},
					{"a priority past 2^31-1", "r", "@daily", RepeatOptions{Priority: 1 << 31}, emqerrors.Shape},
					{"an end before the start", "r", "@daily", RepeatOptions{Start: now, End: now.Add(-time.Hour)}, emqerrors.Shape},
					{"no tick before the end", "r", "@every 2h", RepeatOptions{End: now.Add(time.Hour)}, emqerrors.Shape}, // whatever the time of day
					{"a negative limit", "r", "@daily", RepeatOptions{Limit: -1}, emqerrors.Shape},
					{"a name with a brace", "r{1}", "@daily", RepeatOptions{}, emqerrors.Layout},
					{"a name past 200 bytes", strings.Repeat("n", 201), "@daily", RepeatOptions{}, emqerrors.Layout},
				} {
					t.Run(c.why, func(t *testing.T) {
						before := digest(t, n.s)
						_, err := q.Repeat(ctx(t), c.name, c.spec, nil, c.opts)
						requireRefusal(t, err, c.code)
						assert.Equal(t, before, digest(t, n.s))
					})
				}
				_, err := q.Unrepeat(ctx(t), "r{1}")
				requireRefusal(t, err, emqerrors.Layout)
			})
			t.Run("a config that lost its numbering numbers a new schedule above the queue's", func(t *testing.T) {
				const name = "renumber"
				q := newQueue(t, n, name, Policy{})
				number := func(schedule string) string { return hash(t, n, keys.Repeat(name, schedule))["number"] }
				for _, schedule := range []string{"a", "b"} {
					_, err := q.Repeat(ctx(t), schedule, "@daily", nil, RepeatOptions{})
					require.NoError(t, err)
				}
				require.Equal(t, "2", number("b"))
				must(t, n.s, "DEL", keys.Set(name, keys.Config)) // "reset the queue's settings"
				_, err := q.Repeat(ctx(t), "c", "@daily", nil, RepeatOptions{})
				require.NoError(t, err)
				assert.Equal(t, "3", number("c"), "the config deleted")
				must(t, n.s, "HSET", keys.Set(name, keys.Config), "repeat_seq", "abc")
				_, err = q.Repeat(ctx(t), "d", "@daily", nil, RepeatOptions{})
				require.NoError(t, err)
				assert.Equal(t, "4", number("d"), "repeat_seq not a number")
				assert.Equal(t, "4", str(t, n, "HGET", keys.Set(name, keys.Config), "repeat_seq"))
			})
			t.Run("keys of another type are refused with WRONGTYPE and nothing is written", func(t *testing.T) {
				q := newQueue(t, n, "typed", Policy{})
				must(t, n.s, "SET", keys.Set("typed", keys.Repeats), "x")
				before := digest(t, n.s)
				_, err := q.Repeat(ctx(t), "r", "@daily", nil, RepeatOptions{})
				requireRefusal(t, err, emqerrors.WrongType)
				_, err = q.Schedules(ctx(t))
				requireRefusal(t, err, emqerrors.WrongType)
				_, err = q.Unrepeat(ctx(t), "r")
				requireRefusal(t, err, emqerrors.WrongType)
				assert.Equal(t, before, digest(t, n.s))
			})
		})
	}
}

// mapKeys is m's keys.
func mapKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// tickJob is the id of schedule number's job for tick.
func tickJob(t *testing.T, tick time.Time, number int64) ids.ID {
	t.Helper()
	id, ok := emq.TickID(tick.UnixMilli(), number)
	require.True(t, ok)
	return id
}

// queueState is what a tick writes to a queue: its job rows, pending, its
// schedules' rows and scores, and its events' fields (IDs left out).
func queueState(t *testing.T, n node, queue string) map[string]any {
	t.Helper()
	out := map[string]any{}
	for _, pattern := range []string{"job:*", "repeat:*"} {
		found, err := n.s.Do("KEYS", "emq:{"+queue+"}:"+pattern).AsStrSlice()
		require.NoError(t, err)
		for _, k := range found {
			out[k] = hash(t, n, k)
		}
	}
	for _, set := range []string{keys.PendingSet, keys.Repeats} {
		members, err := n.s.Do("ZRANGE", keys.Set(queue, set), "0", "-1", "WITHSCORES").AsStrSlice()
		require.NoError(t, err)
		out[set] = members
	}
	var events [][]string
	for _, e := range xrange(t, n.s, keys.Set(queue, keys.Events)) {
		var kv []string
		for _, f := range e.FieldValues {
			kv = append(kv, f.Field, f.Value)
		}
		events = append(events, kv)
	}
	out["events"] = events
	return out
}

// oftenWithoutModule is queue name on a node without the module, with a
// schedule "often" that ticks every interval (a Go duration).
func oftenWithoutModule(t *testing.T, name, interval string) (*valkeytest.Server, *Queue) {
	t.Helper()
	s, m := moduleless(t)
	q, err := New(s.Client()).Queue(name, m, Policy{})
	require.NoError(t, err)
	_, err = q.Repeat(ctx(t), "often", "@every "+interval, nil, RepeatOptions{})
	require.NoError(t, err)
	return s, q
}

// TestTicks: the fallback makes a schedule's ticks as the module's claim
// turn does — the same job, under the same id, with the same rows — and
// a tick made by both is one job.
func TestTicks(t *testing.T) {
	t.Run("a tick made by the module and by the fallback is one job, the same either way", func(t *testing.T) {
		n := nativeNode(t)
		s := n.s
		const name = "both"
		native := newQueue(t, n, name, Policy{})
		scripted, err := New(s.Client(), WithoutModule()).Queue(name, n.m, Policy{})
		require.NoError(t, err)
		config, repeats, row := keys.Set(name, keys.Config), keys.Set(name, keys.Repeats), keys.Repeat(name, "hourly")
		must(t, s, "EMQ.EVENTS", "2", config, keys.Set(name, keys.Events), "100")
		must(t, s, "EMQ.PAUSE", "2", config, native.pending) // a claim turn only sweeps and ticks
		tick := time.UnixMilli(time.Now().Add(300 * time.Millisecond).UnixMilli())
		_, err = native.Repeat(ctx(t), "hourly", "@every 1h", []byte("p"), RepeatOptions{Priority: 3, Start: tick.Add(-time.Hour)})
		require.NoError(t, err)
		time.Sleep(time.Until(tick.Add(20 * time.Millisecond)))
		dump := map[string]string{}
		for _, k := range []string{row, repeats} {
			d, err := s.Do("DUMP", k).ToString()
			require.NoError(t, err)
			dump[k] = d
		}
		// restore puts the schedule back as it was before its tick;
		// clean also drops what the tick made
		restore := func(clean bool) {
			if clean {
				must(t, s, "DEL", keys.Job(name, tickJob(t, tick, 1).String()), native.pending, keys.Set(name, keys.Events))
			}
			for k, d := range dump {
				must(t, s, "RESTORE", k, "0", d, "REPLACE")
			}
		}
		makers := map[string]func(){
			"module": func() {
				jobs, err := native.Claim(ctx(t), 1)
				require.NoError(t, err)
				require.Empty(t, jobs, "paused")
			},
			"fallback": func() {
				made, _, _, err := scripted.tickFallback(ctx(t))
				require.NoError(t, err)
				require.Equal(t, 1, made)
			},
		}
		var states []map[string]any
		for _, order := range [][2]string{{"module", "fallback"}, {"fallback", "module"}} {
			restore(true)
			makers[order[0]]()
			once := queueState(t, n, name)
			require.Equal(t, map[string]string{"state": "pending", "attempts": "0", "payload": "p", "priority": "3", "repeat": "hourly"},
				once[keys.Job(name, tickJob(t, tick, 1).String())], "%s: the tick's job", order[0])
			restore(false)
			if order[1] == "fallback" {
				made, _, _, err := scripted.tickFallback(ctx(t))
				require.NoError(t, err)
				assert.Zero(t, made, "the job exists: a tick made twice is one job")
			} else {
				makers[order[1]]()
			}
			assert.Equal(t, once, queueState(t, n, name), "%s after %s: nothing more", order[1], order[0])
			states = append(states, once)
		}
		assert.Equal(t, states[0], states[1], "the module's tick and the fallback's write the same")
		sched := states[0][row].(map[string]string)
		assert.Equal(t, "1", sched["made"])
		assert.Equal(t, strconv.FormatInt(tick.UnixMilli(), 10), sched["last"])
		assert.Equal(t, strconv.FormatInt(tick.Add(time.Hour).UnixMilli(), 10), sched["next"], "the next tick after now")
	})
	t.Run("two schedules given one number by hand make one job of a tick they share, and the server lives", func(t *testing.T) {
		n := nativeNode(t)
		const name = "twins"
		q := newQueue(t, n, name, Policy{})
		tick := time.UnixMilli(time.Now().Add(300 * time.Millisecond).UnixMilli())
		for _, schedule := range []string{"a", "b"} {
			_, err := q.Repeat(ctx(t), schedule, "@every 1h", []byte(schedule), RepeatOptions{Start: tick.Add(-time.Hour)})
			require.NoError(t, err)
		}
		must(t, n.s, "HSET", keys.Repeat(name, "b"), "number", "1")
		time.Sleep(time.Until(tick.Add(20 * time.Millisecond)))
		jobs, err := q.Claim(ctx(t), 2)
		require.NoError(t, err)
		require.Len(t, jobs, 1, "one id, one job")
		assert.Equal(t, tickJob(t, tick, 1), jobs[0].ID)
		assert.Equal(t, "PONG", str(t, n, "PING"))
		for _, schedule := range []string{"a", "b"} {
			assert.Equal(t, strconv.FormatInt(tick.UnixMilli(), 10), hash(t, n, keys.Repeat(name, schedule))["last"], "%s moved on", schedule)
		}
	})
	t.Run("over maxmemory the server refuses the fallback's tick, which writes nothing; with room it makes one job, of the first missed tick", func(t *testing.T) {
		s, q := oftenWithoutModule(t, "oom", "10ms")
		first := hash(t, node{s: s}, keys.Repeat("oom", "often"))["next"]
		time.Sleep(50 * time.Millisecond) // ticks come due
		must(t, s, "CONFIG", "SET", "maxmemory", "1")
		before := digest(t, s)
		made, _, _, err := q.tickFallback(ctx(t))
		assert.True(t, outOfMemory(err), "%v", err)
		assert.Zero(t, made)
		assert.Equal(t, before, digest(t, s))
		must(t, s, "CONFIG", "SET", "maxmemory", "0")
		made, _, _, err = q.tickFallback(ctx(t))
		require.NoError(t, err)
		assert.Equal(t, 1, made)
		assert.Equal(t, first, hash(t, node{s: s}, keys.Repeat("oom", "often"))["last"])
	})
	t.Run("as a claim turn, the fallback ticks nothing of a queue whose config lost repeat_seq, until the next Repeat", func(t *testing.T) {
		s, q := oftenWithoutModule(t, "lost", "10ms")
		must(t, s, "DEL", keys.Set("lost", keys.Config))
		time.Sleep(50 * time.Millisecond) // ticks come due
		made, _, until, err := q.tickFallback(ctx(t))
		require.NoError(t, err)
		assert.Zero(t, made)
		assert.Equal(t, time.Duration(-1), until, "no tick known")
		_, err = q.Repeat(ctx(t), "hourly", "@every 1h", nil, RepeatOptions{})
		require.NoError(t, err)
		made, _, _, err = q.tickFallback(ctx(t))
		require.NoError(t, err)
		assert.Equal(t, 1, made, "the first missed tick")
	})
	t.Run("the fallback run every few ms makes about one job per tick of an @every 100ms", func(t *testing.T) {
		s, m := moduleless(t)
		q, err := New(s.Client()).Queue("often", m, Policy{})
		require.NoError(t, err)
		start := time.UnixMilli(time.Now().UnixMilli())
		_, err = q.Repeat(ctx(t), "often", "@every 100ms", nil, RepeatOptions{Start: start})
		require.NoError(t, err)
		made := 0
		for time.Since(start) < 2*time.Second {
			n, _, _, err := q.tickFallback(ctx(t))
			require.NoError(t, err)
			made += n
			time.Sleep(5 * time.Millisecond)
		}
		ticks := int(time.Since(start) / (100 * time.Millisecond))
		members, err := s.Do("ZRANGE", q.pending, "0", "-1").AsStrSlice()
		require.NoError(t, err)
		assert.Len(t, members, made)
		t.Logf("%d jobs for %d ticks", made, ticks)
		assert.GreaterOrEqual(t, made, ticks/2, "a poll late by more than a tick makes one job for the ticks it missed")
		assert.LessOrEqual(t, made, ticks)
		seen := map[int64]bool{}
		for _, text := range members {
			id, ok := ids.Parse(ids.Job, []byte(text))
			require.True(t, ok)
			k := (int64(id.UnixMs()) - start.UnixMilli()) / 100
			assert.Equal(t, tickJob(t, start.Add(time.Duration(k)*100*time.Millisecond), 1), id, "a job per tick, under the tick's id")
			assert.False(t, seen[k], "tick %d made twice", k)
			seen[k] = true
		}
	})
	t.Run("the fallback drops a schedule whose row is gone and stops one at its limit", func(t *testing.T) {
		s, m := moduleless(t)
		q, err := New(s.Client()).Queue("ends", m, Policy{})
		require.NoError(t, err)
		start := time.Now().Add(-time.Minute)
		_, err = q.Repeat(ctx(t), "twice", "@every 10ms", []byte("p"), RepeatOptions{Start: start, Limit: 2})
		require.NoError(t, err)
		repeats := keys.Set("ends", keys.Repeats)
		must(t, s, "ZADD", repeats, "1", "ghost")
		for range 2 {
			time.Sleep(20 * time.Millisecond)
			made, _, _, err := q.tickFallback(ctx(t))
			require.NoError(t, err)
			assert.Equal(t, 1, made)
		}
		assert.True(t, valkey.IsValkeyNil(s.Do("ZSCORE", repeats, "ghost").Error()), "the ghost is dropped")
		list, err := q.Schedules(ctx(t))
		require.NoError(t, err)
		require.Len(t, list, 1)
		assert.Equal(t, int64(2), list[0].Made)
		assert.True(t, list[0].Next.IsZero(), "finished")
		made, _, _, err := q.tickFallback(ctx(t))
		require.NoError(t, err)
		assert.Zero(t, made)
		assert.Equal(t, int64(2), integer(t, s, "ZCARD", q.pending))
	})
	t.Run("a tick before the EMQ epoch (a score edited by hand) makes no job and is not counted, natively and on the fallback", func(t *testing.T) {
		const name = "early"
		row, repeats := keys.Repeat(name, "early"), keys.Set(name, keys.Repeats)
		check := func(t *testing.T, s *valkeytest.Server, q *Queue, tick func()) {
			for _, score := range []string{"1000", "1000.5", "-inf"} {
				_, err := q.Repeat(ctx(t), "early", "@every 1h", []byte("p"), RepeatOptions{})
				require.NoError(t, err)
				before := hash(t, node{s: s}, row)
				must(t, s, "ZADD", repeats, score, "early")
				tick()
				after := hash(t, node{s: s}, row)
				assert.Zero(t, integer(t, s, "ZCARD", q.pending), "%s: no job", score)
				assert.Equal(t, []string{before["made"], before["last"]}, []string{after["made"], after["last"]}, "%s: made and last as they were", score)
				next, err := strconv.ParseInt(after["next"], 10, 64)
				require.NoError(t, err)
				assert.Greater(t, next, time.Now().UnixMilli(), "%s: moved on to its next tick", score)
				assert.Equal(t, after["next"], str(t, node{s: s}, "ZSCORE", repeats, "early"), score)
			}
		}
		tickBothWays(t, name, 0, check)
	})
	t.Run("a tick at a fraction of a millisecond (a score edited by hand) makes its millisecond's job, natively and on the fallback", func(t *testing.T) {
		const name = "half"
		row, repeats := keys.Repeat(name, "half"), keys.Set(name, keys.Repeats)
		tick := time.UnixMilli(time.Now().Add(-time.Second).UnixMilli())
		check := func(t *testing.T, s *valkeytest.Server, q *Queue, run func()) {
			_, err := q.Repeat(ctx(t), "half", "@every 1h", []byte("p"), RepeatOptions{})
			require.NoError(t, err)
			must(t, s, "ZADD", repeats, strconv.FormatInt(tick.UnixMilli(), 10)+".5", "half")
			run()
			job, err := s.Do("ZRANGE", q.pending, "0", "-1").AsStrSlice()
			require.NoError(t, err)
			number, err := strconv.ParseInt(hash(t, node{s: s}, row)["number"], 10, 64)
			require.NoError(t, err)
			assert.Equal(t, []string{tickJob(t, tick, number).String()}, job, "the job of the tick's millisecond")
			assert.Equal(t, []string{"1", strconv.FormatInt(tick.UnixMilli(), 10)}, []string{hash(t, node{s: s}, row)["made"], hash(t, node{s: s}, row)["last"]})
		}
		tickBothWays(t, name, 1, check)
	})
	t.Run("on a node with the module the fallback leaves the ticks to the claim turns", func(t *testing.T) {
		n := nativeNode(t)
		q := newQueue(t, n, "native", Policy{})
		_, err := q.Repeat(ctx(t), "r", "@every 10ms", nil, RepeatOptions{Start: time.Now().Add(-time.Minute)})
		require.NoError(t, err)
		time.Sleep(20 * time.Millisecond)
		made, _, _, err := q.tickFallback(ctx(t))
		require.NoError(t, err)
		assert.Zero(t, made)
		assert.Zero(t, integer(t, n.s, "ZCARD", q.pending))
	})
}

// tickBothWays runs check on queue name of a node with the module, whose
// tick is a claim turn (of the queue paused: it only sweeps and ticks),
// and on one without, whose tick is the fallback's, which must make jobs
// jobs.
func tickBothWays(t *testing.T, name string, jobs int, check func(t *testing.T, s *valkeytest.Server, q *Queue, tick func())) {
	t.Run("module", func(t *testing.T) {
		n := nativeNode(t)
		q := newQueue(t, n, name, Policy{})
		check(t, n.s, q, func() {
			must(t, n.s, "EMQ.PAUSE", "2", keys.Set(name, keys.Config), q.pending)
			claimed, err := q.Claim(ctx(t), 1)
			require.NoError(t, err)
			assert.Empty(t, claimed, "paused")
		})
	})
	t.Run("fallback", func(t *testing.T) {
		s, m := moduleless(t)
		q, err := New(s.Client()).Queue(name, m, Policy{})
		require.NoError(t, err)
		check(t, s, q, func() {
			made, _, _, err := q.tickFallback(ctx(t))
			require.NoError(t, err)
			assert.Equal(t, jobs, made)
		})
	})
}

// TestRepeatScriptsWriteTheVerbsRows: the same calls on a node with the
// module and on one without leave the same keys, field for field, and
// reply the same.
func TestRepeatScriptsWriteTheVerbsRows(t *testing.T) {
	nodes := startNodes(t)
	// ticks after a start to come do not depend on when each node is called
	start := time.UnixMilli(time.Now().Add(24 * time.Hour).UnixMilli())
	// a start before the calls: the first tick after each, past+2h on both
	past := time.UnixMilli(time.Now().Add(-90 * time.Minute).UnixMilli())
	type reply struct {
		first   time.Time
		removed bool
		list    []Schedule
	}
	var states []map[string]any
	var replies [][]reply
	for _, n := range nodes {
		q := newQueue(t, n, "same", Policy{})
		var got []reply
		for _, step := range []func() reply{
			func() reply {
				first, err := q.Repeat(ctx(t), "a", "*/5 * * * *", []byte("p"), RepeatOptions{TZ: "Asia/Tokyo", Priority: 2, Start: start, Limit: 3})
				require.NoError(t, err)
				return reply{first: first}
			},
			func() reply {
				first, err := q.Repeat(ctx(t), "b", "@every 1500ms", nil, RepeatOptions{Start: start, End: start.Add(time.Hour)})
				require.NoError(t, err)
				return reply{first: first}
			},
			func() reply {
				must(t, n.s, "HSET", keys.Repeat("same", "a"), "made", "3")
				first, err := q.Repeat(ctx(t), "a", "@hourly", []byte("q"), RepeatOptions{Start: start, Limit: 3})
				require.NoError(t, err)
				return reply{first: first}
			},
			func() reply {
				// events on, and their key another type: REPEAT appends no event, and does not read it
				must(t, n.s, "HSET", keys.Set("same", keys.Config), "events", "10")
				must(t, n.s, "SET", keys.Set("same", keys.Events), "x")
				first, err := q.Repeat(ctx(t), "c", "@every 1h", nil, RepeatOptions{Start: start})
				require.NoError(t, err)
				must(t, n.s, "DEL", keys.Set("same", keys.Events))
				return reply{first: first}
			},
			func() reply {
				first, err := q.Repeat(ctx(t), "d", "@every 1h", nil, RepeatOptions{Start: past})
				require.NoError(t, err)
				require.Equal(t, past.Add(2*time.Hour), first, "no tick before the call")
				return reply{first: first}
			},
			func() reply {
				// the numbering lost: a replaced schedule writes it again, at the highest
				must(t, n.s, "DEL", keys.Set("same", keys.Config))
				first, err := q.Repeat(ctx(t), "a", "@hourly", []byte("r"), RepeatOptions{Start: start, Limit: 3})
				require.NoError(t, err)
				return reply{first: first}
			},
			func() reply {
				list, err := q.Schedules(ctx(t))
				require.NoError(t, err)
				return reply{list: list}
			},
			func() reply {
				removed, err := q.Unrepeat(ctx(t), "b")
				require.NoError(t, err)
				return reply{removed: removed}
			},
		} {
			got = append(got, step())
		}
		state := queueState(t, n, "same")
		state["config"] = hash(t, n, keys.Set("same", keys.Config))
		states = append(states, state)
		replies = append(replies, got)
	}
	assert.Equal(t, replies[0], replies[1], "the same replies")
	assert.Equal(t, states[0], states[1], "the same keys")
}

// TestWorkRunsTheSchedules: a worker gets a schedule's jobs whether the
// module makes its ticks (natively, in the claim turns and the queue's
// timer) or the worker itself does (without the module): "@every 100ms"
// for 1.5 s is about 15 jobs, each once.
func TestWorkRunsTheSchedules(t *testing.T) {
	for _, n := range startNodes(t) {
		t.Run(n.String(), func(t *testing.T) {
			q := newQueue(t, n, "ticking", Policy{})
			var mu sync.Mutex
			seen := map[string]int{}
			wctx, stop := context.WithCancel(ctx(t))
			done := make(chan error, 1)
			go func() {
				done <- q.Work(wctx, func(_ context.Context, j *Job) error {
					mu.Lock()
					seen[j.ID.String()]++
					mu.Unlock()
					return nil
				}, WorkOptions{Concurrency: 2})
			}()
			_, err := q.Repeat(ctx(t), "tick", "@every 100ms", []byte("p"), RepeatOptions{})
			require.NoError(t, err)
			time.Sleep(1500 * time.Millisecond)
			_, err = q.Unrepeat(ctx(t), "tick")
			require.NoError(t, err)
			time.Sleep(100 * time.Millisecond)
			stop()
			require.NoError(t, <-done)
			mu.Lock()
			defer mu.Unlock()
			for id, k := range seen {
				assert.Equal(t, 1, k, "%s handled once", id)
			}
			assert.InDelta(t, 15, len(seen), 3, "one job per tick")
		})
	}
}

// TestAWorkerSaysOnceThatTicksAreHeldBack: on a node without the module
// over maxmemory, where the server refuses its ticks, a worker logs one
// warning, not an error at every look, and makes the ticks again once
// there is room.
func TestAWorkerSaysOnceThatTicksAreHeldBack(t *testing.T) {
	s, q := oftenWithoutModule(t, "held", "20ms")
	var logs logBuffer
	var handled atomic.Int64
	must(t, s, "CONFIG", "SET", "maxmemory", "1")
	stop := working(t, q, func(context.Context, *Job) error { handled.Add(1); return nil },
		WorkOptions{Concurrency: 1, Poll: 100 * time.Millisecond, Logger: logs.logger()})
	time.Sleep(400 * time.Millisecond)
	assert.Zero(t, handled.Load(), "no tick made over maxmemory")
	must(t, s, "CONFIG", "SET", "maxmemory", "0")
	eventually(t, "a tick's job handled", func() bool { return handled.Load() > 0 })
	require.NoError(t, stop())
	assert.Equal(t, 1, strings.Count(logs.String(), "schedule ticks held back"), logs.String())
	assert.NotContains(t, logs.String(), "level=ERROR")
}

// TestAWorkerLooksForTicksWhenOneComes: a worker that makes its queue's
// ticks itself (no module) looks for due ones when the next tick it knows
// of comes, at most Poll apart — not every 50 ms whatever the schedules —
// and sees within Poll a schedule another client sets; with the module it
// never looks (the server makes the ticks).
func TestAWorkerLooksForTicksWhenOneComes(t *testing.T) {
	const poll = 400 * time.Millisecond
	for _, n := range startNodes(t) {
		t.Run(n.String(), func(t *testing.T) {
			q := newQueue(t, n, "looking", Policy{})
			other, err := New(n.s.Client()).Queue("looking", n.m, Policy{})
			require.NoError(t, err)
			var handled atomic.Int64
			wctx, stop := context.WithCancel(ctx(t))
			done := make(chan error, 1)
			go func() {
				done <- q.Work(wctx, func(context.Context, *Job) error { handled.Add(1); return nil },
					WorkOptions{Poll: poll})
			}()
			defer func() { stop(); require.NoError(t, <-done) }()
			looks := func(d time.Duration) int {
				return strings.Count(strings.Join(n.s.Monitor(t).For(t, d), "\n"), scheduleScripts.due.sha1)
			}
			time.Sleep(100 * time.Millisecond) // its first look

			idle := looks(2 * time.Second)
			_, err = other.Repeat(ctx(t), "daily", "@daily", []byte("p"), RepeatOptions{})
			require.NoError(t, err)
			far := looks(2 * time.Second)
			_, err = other.Repeat(ctx(t), "quick", "@every 200ms", []byte("p"), RepeatOptions{})
			require.NoError(t, err)
			set := time.Now()
			require.Eventually(t, func() bool { return handled.Load() > 0 }, 5*time.Second, 5*time.Millisecond)
			first := time.Since(set)
			t.Logf("%s: looks in 2 s with no schedule %d, with one a day away %d; another client's @every 200ms: first job after %v",
				n, idle, far, first)
			if n.native {
				assert.Zero(t, idle+far, "the server makes the ticks")
				return
			}
			assert.LessOrEqual(t, idle, 8, "about one look per Poll, not one per 50 ms (40)")
			assert.LessOrEqual(t, far, 8)
			assert.Less(t, first, poll+400*time.Millisecond, "seen within Poll, made within its first 200 ms")
			quick := looks(time.Second)
			assert.GreaterOrEqual(t, quick, 3, "a look per tick of a 200 ms schedule")
		})
	}
}
