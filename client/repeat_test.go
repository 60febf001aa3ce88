package client

import (
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/echomq/emq/emq"
	emqerrors "github.com/echomq/emq/errors"
	"github.com/echomq/emq/ids"
	"github.com/echomq/emq/internal/valkeytest"
	"github.com/echomq/emq/keys"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// hash is a hash key's fields and values.
func hash(t *testing.T, s *valkeytest.Server, key string) map[string]string {
	t.Helper()
	m, err := s.Do("HGETALL", key).AsStrMap()
	require.NoError(t, err)
	return m
}

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
				row := hash(t, n.s, keys.Repeat(name, "nightly"))
				assert.ElementsMatch(t, []string{"spec", "tz", "payload", "priority", "start", "end", "limit", "number", "made", "next", "last"},
					mapKeys(row), "the row holds the verb's fields")
				assert.Equal(t, "2", str(t, n, "HGET", keys.Set(name, keys.Config), "repeat_seq"))

				n.s.Do("HSET", keys.Repeat(name, "nightly"), "made", "4")
				replaced, err := q.Repeat(ctx(t), "nightly", "@hourly", []byte("v2"), RepeatOptions{Limit: 10})
				require.NoError(t, err)
				assert.Equal(t, time.Now().Truncate(time.Hour).Add(time.Hour), replaced)
				row = hash(t, n.s, keys.Repeat(name, "nightly"))
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
				list, err = q.Schedules(ctx(t))
				require.NoError(t, err)
				require.Len(t, list, 1)
				assert.Equal(t, "often", list[0].Name)
				assert.Zero(t, integer(t, n.s, "EXISTS", keys.Repeat(name, "nightly")))
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
					{"no tick before the end", "r", "@daily", RepeatOptions{End: now.Add(time.Hour)}, emqerrors.Shape},
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
