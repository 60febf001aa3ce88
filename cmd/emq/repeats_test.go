package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/echomq/emq/client"
	"github.com/echomq/emq/ids"
	"github.com/echomq/emq/internal/valkeytest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/valkey-io/valkey-go"
)

// repeatsStart is the schedules' start in these tests, and their clock: a
// schedule's first tick is after the REPEAT call, so their times are to
// come on the server's clock and the tables read the same on any day.
var repeatsStart = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

// reportsQueue is a queue named reports on vk, its ids minted on node 9,
// with its schedules poll (every 15 minutes, at priority 5, 3 jobs at
// most) and nightly (02:30 in Berlin), both from repeatsStart.
func reportsQueue(t *testing.T, vk valkey.Client) *client.Queue {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	m, err := ids.NewMinter(9)
	require.NoError(t, err)
	q, err := client.New(vk).Queue("reports", m, client.Policy{Lease: time.Hour})
	require.NoError(t, err)
	_, err = q.Repeat(ctx, "nightly", "30 2 * * *", []byte("build the report"),
		client.RepeatOptions{TZ: "Europe/Berlin", Start: repeatsStart})
	require.NoError(t, err)
	_, err = q.Repeat(ctx, "poll", "@every 15m", []byte("poll the feed"), client.RepeatOptions{Priority: 5, Start: repeatsStart, Limit: 3})
	require.NoError(t, err)
	return q
}

// TestCLIRepeats: repeats lists a queue's schedules, next tick first and
// the finished last, as the golden table and as JSON; queues counts them;
// unrepeat removes those named — exit 3 for one that does not exist, 4
// for a name the server refuses, the other names removed all the same.
func TestCLIRepeats(t *testing.T) {
	s := valkeytest.Start(t, valkeytest.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	q := reportsQueue(t, s.Client())
	repeats := func(args ...string) result {
		t.Helper()
		return emqAt(t, s.Addr, repeatsStart, append([]string{"repeats", "reports"}, args...)...)
	}
	names := func() []string {
		t.Helper()
		list, err := q.Schedules(ctx)
		require.NoError(t, err)
		var out []string
		for _, sc := range list {
			out = append(out, sc.Name)
		}
		return out
	}

	t.Run("the table", func(t *testing.T) {
		r := repeats()
		require.Equal(t, exitOK, r.code, r.stderr)
		assert.Empty(t, r.stderr)
		golden(t, "repeats_reports", r.stdout)
	})
	t.Run("--json parses", func(t *testing.T) {
		r := repeats("--json")
		require.Equal(t, exitOK, r.code, r.stderr)
		var out []repeatJSON
		require.NoError(t, json.Unmarshal([]byte(r.stdout), &out))
		require.Len(t, out, 2)
		payload := "poll the feed"
		assert.Equal(t, repeatJSON{Name: "poll", Spec: "@every 15m", Payload: &payload, Priority: 5, StartMs: repeatsStart.UnixMilli(),
			Limit: 3, Number: 2, NextMs: repeatsStart.Add(15 * time.Minute).UnixMilli()}, out[0])
		assert.Equal(t, "Europe/Berlin", out[1].TZ)
		assert.Equal(t, time.Date(2030, 1, 1, 1, 30, 0, 0, time.UTC).UnixMilli(), out[1].NextMs, "02:30 in Berlin")
	})
	t.Run("a page at a time: --limit and --offset, stderr saying what is left", func(t *testing.T) {
		r := repeats("--limit", "1")
		require.Equal(t, exitOK, r.code, r.stderr)
		assert.Regexp(t, `^NAME +WHEN +NEXT +LAST +MADE +PRIORITY +PAYLOAD\npoll +`, r.stdout)
		assert.Equal(t, 2, strings.Count(r.stdout, "\n"), "the header and one schedule")
		assert.Equal(t, "1 of 2 shown; --offset 1 for more\n", r.stderr)
		r = repeats("--limit", "1", "--offset", "1", "--json")
		require.Equal(t, exitOK, r.code, r.stderr)
		var out []repeatJSON
		require.NoError(t, json.Unmarshal([]byte(r.stdout), &out))
		require.Len(t, out, 1)
		assert.Equal(t, "nightly", out[0].Name)
		assert.Empty(t, r.stderr, "the last page says nothing")
		r = repeats("--offset", "5")
		require.Equal(t, exitOK, r.code, r.stderr)
		assert.Equal(t, "2 in all, each before --offset 5\n", r.stderr)
		// a name whose row is no schedule holds a rank, in no page: a page
		// that covers the last rank says nothing more is left
		require.NoError(t, s.Do("ZADD", "emq:{reports}:repeats", "1", "broken").Error())
		require.NoError(t, s.Do("SET", "emq:{reports}:repeat:broken", "x").Error())
		r = repeats()
		require.Equal(t, exitOK, r.code, r.stderr)
		assert.Empty(t, r.stderr, "all of it shown")
		r = repeats("--limit", "2")
		require.Equal(t, exitOK, r.code, r.stderr)
		assert.Equal(t, "1 of 3 shown; --offset 2 for more\n", r.stderr, "the next page after the ranks covered")
		require.NoError(t, s.Do("DEL", "emq:{reports}:repeat:broken").Error())
		require.NoError(t, s.Do("ZREM", "emq:{reports}:repeats", "broken").Error())
		for _, bad := range [][]string{{"--limit", "0"}, {"--limit", "1001"}, {"--offset", "-1"}} {
			r := repeats(bad...)
			assert.Equal(t, exitUsage, r.code, bad)
			assert.Contains(t, r.stderr, "--limit is 1 … 1000 and --offset ≥ 0", bad)
		}
	})
	t.Run("a queue of only schedules is counted, and no mistyped name", func(t *testing.T) {
		r := emq(t, s.Addr, "queues")
		require.Equal(t, exitOK, r.code, r.stderr)
		assert.Contains(t, r.stdout, "\nreports  0        0       0        0     no      -      2          -\n")
		// the commands that note a queue the server knows nothing of
		for _, args := range [][]string{{"jobs", "reports"}, {"pause", "reports"}, {"events", "reports", "10"}} {
			r := emq(t, s.Addr, args...)
			require.Equal(t, exitOK, r.code, r.stderr)
			assert.NotContains(t, r.stderr, "mistyped", args)
		}
		for _, args := range [][]string{{"resume", "reports"}, {"events", "reports", "off"}} {
			require.Equal(t, exitOK, emq(t, s.Addr, args...).code, args)
		}
	})
	t.Run("a finished schedule comes last, with its last tick", func(t *testing.T) {
		_, err := q.Repeat(ctx, "once", "@every 50ms", []byte("ping"), client.RepeatOptions{Limit: 1})
		require.NoError(t, err)
		time.Sleep(100 * time.Millisecond)
		jobs, err := q.Claim(ctx, 1)
		require.NoError(t, err)
		require.Len(t, jobs, 1, "the schedule's one job")
		r := repeats()
		require.Equal(t, exitOK, r.code, r.stderr)
		assert.Regexp(t, `\nonce +@every 50ms +finished +\S+ ago +1 of 1 +0 +4B\n$`, r.stdout)
		r = repeats("--json")
		var out []repeatJSON
		require.NoError(t, json.Unmarshal([]byte(r.stdout), &out))
		require.Len(t, out, 3)
		assert.Zero(t, out[2].NextMs)
		assert.Equal(t, int64(1), out[2].Made)
		assert.NotZero(t, out[2].LastMs)
	})
	t.Run("a queue without schedules says so on stderr", func(t *testing.T) {
		r := emq(t, s.Addr, "repeats", "emails")
		require.Equal(t, exitOK, r.code, r.stderr)
		assert.Equal(t, "emails has no repeat schedule\n", r.stderr)
		assert.Equal(t, "NAME  WHEN  NEXT  LAST  MADE  PRIORITY  PAYLOAD\n", r.stdout)
	})
	t.Run("unrepeat removes the schedules named", func(t *testing.T) {
		r := emq(t, s.Addr, "unrepeat", "reports", "once", "poll")
		require.Equal(t, exitOK, r.code, r.stderr)
		assert.Equal(t, "removed schedule once\nremoved schedule poll\n", r.stdout)
		assert.Equal(t, []string{"nightly"}, names())
	})
	t.Run("a schedule that does not exist: exit 3", func(t *testing.T) {
		r := emq(t, s.Addr, "unrepeat", "reports", "poll", "--json")
		assert.Equal(t, exitNotFound, r.code)
		var out eachJSON
		require.NoError(t, json.Unmarshal([]byte(r.stdout), &out))
		assert.Equal(t, eachJSON{Done: []string{}, Failed: []failedJSON{{ID: "poll", Error: "queue reports has no schedule poll"}}}, out)
	})
	t.Run("a name the server refuses: exit 4, the others removed", func(t *testing.T) {
		r := emq(t, s.Addr, "unrepeat", "reports", "a{b", "nightly")
		assert.Equal(t, exitRefused, r.code)
		assert.Contains(t, r.stderr, "a{b: EMQLAYOUT")
		assert.Equal(t, "removed schedule nightly\n", r.stdout)
		assert.Empty(t, names())
	})
	t.Run("a name that needs it is quoted", func(t *testing.T) {
		const odd = "esc\x1b[2Jname"
		_, err := q.Repeat(ctx, odd, "@hourly", []byte("x"), client.RepeatOptions{Start: repeatsStart})
		require.NoError(t, err)
		r := repeats()
		require.Equal(t, exitOK, r.code, r.stderr)
		terminalSafe(t, r.stdout)
		assert.Contains(t, r.stdout, "\n\"esc\\x1b[2Jname\"  @hourly  in 1h00m  ")
		r = emq(t, s.Addr, "unrepeat", "reports", odd)
		require.Equal(t, exitOK, r.code, r.stderr)
		assert.Equal(t, "removed schedule \"esc\\x1b[2Jname\"\n", r.stdout)
	})
}

// TestCLIRepeatsWithoutModule: on a server without the module the client's
// scripts list and remove the schedules alike.
func TestCLIRepeatsWithoutModule(t *testing.T) {
	s := valkeytest.Start(t, valkeytest.Options{NoModule: true})
	reportsQueue(t, s.Client())
	r := emqAt(t, s.Addr, repeatsStart, "repeats", "reports")
	require.Equal(t, exitOK, r.code, r.stderr)
	golden(t, "repeats_reports", r.stdout)
	r = emq(t, s.Addr, "unrepeat", "reports", "poll", "nightly")
	require.Equal(t, exitOK, r.code, r.stderr)
	r = emq(t, s.Addr, "repeats", "reports")
	assert.Equal(t, "reports has no repeat schedule\n", r.stderr)
}
