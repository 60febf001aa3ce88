package main

import (
	"context"
	"encoding/json"
	"errors"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/echomq/emq/client"
	"github.com/echomq/emq/ids"
	"github.com/echomq/emq/internal/readable"
	"github.com/echomq/emq/internal/valkeytest"
	"github.com/echomq/emq/keys"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The server's clock stamps a tail's stream IDs, times and job ids: a
// golden file holds them as <id>, <time> and JOB1, JOB2 … in the order
// they first come.
var (
	streamIDs = regexp.MustCompile(`\b\d{13}-\d+\b`)
	stamps    = regexp.MustCompile(`\b\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z\b`)
	jobIDs    = regexp.MustCompile(`\bJOB[0-9a-f]{16}\b`)
)

// clocked replaces what the server's clock stamped in a tail's output.
func clocked(out string) string {
	out = stamps.ReplaceAllString(streamIDs.ReplaceAllString(out, "<id>"), "<time>")
	seen := map[string]string{}
	return jobIDs.ReplaceAllStringFunc(out, func(id string) string {
		if seen[id] == "" {
			seen[id] = "JOB" + strconv.Itoa(len(seen)+1)
		}
		return seen[id]
	})
}

// events makes one of most kinds of event on queue mail, events on: added,
// scheduled, claimed, extended, completed, failed to dead and to delayed,
// revived, removed, paused, resumed, limited (16 in all).
func events(t *testing.T, s *valkeytest.Server) *client.Queue {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	m, err := ids.NewMinter(5)
	require.NoError(t, err)
	q, err := client.New(s.Client()).Queue("mail", m, client.Policy{MaxAttempts: 1, Keep: time.Hour})
	require.NoError(t, err)
	_, err = q.SetEvents(ctx, 1000)
	require.NoError(t, err)
	claim := func() *client.Job {
		jobs, err := q.Claim(ctx, 1)
		require.NoError(t, err)
		require.Len(t, jobs, 1)
		return jobs[0]
	}
	_, err = q.Enqueue(ctx, []byte("welcome"), client.Priority(2))
	require.NoError(t, err)
	_, err = q.Enqueue(ctx, []byte("later"), client.After(time.Hour))
	require.NoError(t, err)
	j := claim()
	_, err = j.Extend(ctx)
	require.NoError(t, err)
	require.NoError(t, j.AckResult(ctx, []byte("250 OK")))
	_, err = q.Enqueue(ctx, []byte("bounce"))
	require.NoError(t, err)
	j = claim()
	_, err = j.FailAfter(ctx, errors.New("550 no such user"), 0)
	require.NoError(t, err)
	dead := j.ID
	retried, err := client.New(s.Client()).Queue("mail", m, client.Policy{MaxAttempts: 3})
	require.NoError(t, err)
	_, err = retried.Enqueue(ctx, []byte("greylisted"))
	require.NoError(t, err)
	jobs, err := retried.Claim(ctx, 1)
	require.NoError(t, err)
	require.Len(t, jobs, 1)
	_, err = jobs[0].FailAfter(ctx, errors.New("421 try again"), time.Hour)
	require.NoError(t, err)
	require.NoError(t, q.Revive(ctx, dead))
	_, err = q.Remove(ctx, dead)
	require.NoError(t, err)
	_, err = q.Pause(ctx)
	require.NoError(t, err)
	_, err = q.Resume(ctx)
	require.NoError(t, err)
	require.NoError(t, q.Limit(ctx, 10, time.Second))
	return q
}

// hintLine and hintCLI are the key names and the queue's name in tail's
// hint to turn events on.
var (
	hintLine = regexp.MustCompile(`valkey-cli EMQ.EVENTS 2 (.*) 10000\n`)
	hintCLI  = regexp.MustCompile(`emq events (.*) 10000\n`)
)

// TestCLITail: emq tail prints a queue's events, one line each (one JSON
// object with --json), from where --from says, live as they come; it says
// when the queue's events are off and how to turn them on.
func TestCLITail(t *testing.T) {
	s := valkeytest.Start(t, valkeytest.Options{})
	q := events(t, s)
	const n = 15 // all but the last, limited

	t.Run("--from 0 prints every event the stream holds", func(t *testing.T) {
		r := emq(t, s.Addr, "tail", "mail", "--from", "0", "--count", strconv.Itoa(n))
		require.Equal(t, exitOK, r.code, r.stderr)
		assert.Empty(t, r.stderr, "events are on: no note")
		golden(t, "tail_mail", clocked(r.stdout))
	})
	var last string
	t.Run("--json is one object per line", func(t *testing.T) {
		r := emq(t, s.Addr, "tail", "mail", "--from", "0", "--count", strconv.Itoa(n), "--json")
		require.Equal(t, exitOK, r.code, r.stderr)
		lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
		require.Len(t, lines, n)
		var names []string
		for _, line := range lines {
			var ev map[string]any
			require.NoError(t, json.Unmarshal([]byte(line), &ev), line)
			names = append(names, ev["event"].(string))
			last = ev["id"].(string)
			assert.Positive(t, ev["time_ms"], line)
		}
		assert.Equal(t, []string{"added", "scheduled", "claimed", "extended", "completed", "added", "claimed", "failed",
			"added", "claimed", "failed", "revived", "removed", "paused", "resumed"}, names)
		var failed map[string]any
		require.NoError(t, json.Unmarshal([]byte(lines[7]), &failed))
		delete(failed, "id")
		delete(failed, "time_ms")
		assert.Equal(t, map[string]any{"event": "failed", "job": failed["job"], "attempt": 1.0, "state": "dead",
			"error": "550 no such user"}, failed)
	})
	t.Run("--from an ID goes on after it, live", func(t *testing.T) {
		r := background(t, s.Addr, "tail", "mail", "--from", last, "--count", "2")
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, err := q.Pause(ctx)
		require.NoError(t, err)
		select {
		case code := <-r.done:
			assert.Equal(t, exitOK, code, r.errs.String())
		case <-ctx.Done():
			t.Fatalf("tail did not print the new event: %q", r.out.String())
		}
		lines := strings.Split(strings.TrimSuffix(r.out.String(), "\n"), "\n")
		require.Len(t, lines, 2)
		assert.Contains(t, lines[0], "  limited   max=10 window=1s", "the event after the last one read")
		assert.Contains(t, lines[1], "  paused", "the new one")
	})
	t.Run("an event's name and state written by hand print quoted when they are not printable text", func(t *testing.T) {
		const odd = "\x1b[2J\x1b]0;title\a\x1b[31mFAKE\rOVER"
		events := keys.Set("odd", keys.Events)
		require.NoError(t, s.Do("EMQ.EVENTS", "2", keys.Set("odd", keys.Config), events, "100").Error())
		job := "JOB056270a5a1c07001"
		for _, entry := range [][]string{{"event", odd, "job", job, "attempt", "3"},
			{"event", "failed", "job", job, "attempt", "3", "state", odd, "error", "x"},
			{"event", "removed", "job", job, "state", odd}} {
			require.NoError(t, s.Do(append([]string{"XADD", events, "*"}, entry...)...).Error())
		}
		r := emq(t, s.Addr, "tail", "odd", "--from", "0", "--count", "3")
		require.Equal(t, exitOK, r.code, r.stderr)
		assert.NotContains(t, r.stdout, "\x1b", "no escape reaches the terminal")
		assert.NotContains(t, r.stdout, "\r")
		assert.Equal(t, 3, strings.Count(r.stdout, strconv.Quote(odd)), "%q", r.stdout)
	})
	t.Run("a queue whose events are off says how to turn them on", func(t *testing.T) {
		r := background(t, s.Addr, "tail", "quiet")
		require.Eventually(t, func() bool { return strings.Contains(r.errs.String(), "are off") }, 10*time.Second, 10*time.Millisecond)
		assert.Equal(t, exitOK, r.stop(t), "interrupted: exit 0")
		assert.Contains(t, r.errs.String(), "the events of quiet are off")
		assert.Contains(t, r.errs.String(), "emq events 'quiet' 10000")
		assert.Contains(t, r.errs.String(), "Queue.SetEvents")
		assert.Contains(t, r.errs.String(), "EMQ.EVENTS 2 'emq:{quiet}:config' 'emq:{quiet}:events' 10000")
		assert.Empty(t, r.out.String())
	})
	t.Run("on a replica without its primary's data, events off are said to be maybe on there", func(t *testing.T) {
		port, err := valkeytest.FreePort()
		require.NoError(t, err)
		replica := valkeytest.Start(t, valkeytest.Options{Config: []string{"replicaof", "127.0.0.1 " + strconv.Itoa(port)}})
		r := background(t, replica.Addr, "tail", "mail")
		require.Eventually(t, func() bool { return strings.Contains(r.errs.String(), "following the stream") }, 10*time.Second, 10*time.Millisecond)
		assert.Equal(t, exitOK, r.stop(t))
		assert.Regexp(t, `^emq tail: the events of mail are off on this node, a replica whose link to its primary is connect(ing)?: `+
			`they may be on there, and show here once the replica has its primary's data; following the stream all the same\n`, r.errs.String())
	})
	t.Run("the hint's names are shell-quoted: a shell reads each as one word, and emq runs the line pasted", func(t *testing.T) {
		for _, queue := range []string{"with space", "it's", "a,b", "esc\x1b[2J", "$HOME", `"quoted`, "-x", "--state"} {
			r := background(t, s.Addr, "tail", "--", queue)
			require.Eventually(t, func() bool { return strings.Contains(r.errs.String(), "10000") }, 10*time.Second, 10*time.Millisecond)
			assert.Equal(t, exitOK, r.stop(t))
			m := hintLine.FindStringSubmatch(r.errs.String())
			require.NotNil(t, m, "%q: %s", queue, r.errs.String())
			assert.NotContains(t, m[1], "\x1b", "no raw control character reaches the terminal")
			words, err := exec.Command("bash", "-c", "printf '%s\\n' "+m[1]).Output()
			require.NoError(t, err, m[1])
			assert.Equal(t, keys.Set(queue, keys.Config)+"\n"+keys.Set(queue, keys.Events)+"\n", string(words), "%q", queue)
			m = hintCLI.FindStringSubmatch(r.errs.String())
			require.NotNil(t, m, "%q: %s", queue, r.errs.String())
			words, err = exec.Command("bash", "-c", "printf '%s\\0' "+m[1]).Output()
			require.NoError(t, err, m[1])
			args := strings.Split(strings.TrimSuffix(string(words), "\x00"), "\x00")
			pasted := emq(t, s.Addr, append(append([]string{"events"}, args...), "10000")...)
			require.Equal(t, exitOK, pasted.code, "%q: %s", args, pasted.stderr)
			assert.Equal(t, "events of "+readable.Printable(queue)+" on, capped at about 10000 entries\n", pasted.stdout, "%q", args)
		}
	})
	t.Run("a server away is said once on stderr, and tail goes on when it is back", func(t *testing.T) {
		away := valkeytest.Start(t, valkeytest.Options{Dir: t.TempDir()})
		on := func() *client.Queue {
			q, err := client.New(away.Client()).Queue("back", nil, client.Policy{})
			require.NoError(t, err)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_, err = q.SetEvents(ctx, 100)
			require.NoError(t, err)
			return q
		}
		on()
		r := background(t, away.Addr, "tail", "back")
		require.Eventually(t, func() bool { return away.InfoField("clients", "blocked_clients") == "1" },
			10*time.Second, 10*time.Millisecond, "tail reads")
		away.Kill()
		require.Eventually(t, func() bool { return strings.Contains(r.errs.String(), "reading again until the server answers") },
			10*time.Second, 10*time.Millisecond, "tail says the server is away: %q", r.errs.String())
		time.Sleep(3 * time.Second) // reads again each second or sooner
		assert.LessOrEqual(t, strings.Count(r.errs.String(), "\n"), 3, "said once per kind of failure, not per read: %q", r.errs.String())

		away = valkeytest.Start(t, valkeytest.Options{Dir: away.Dir, Port: away.Port})
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, err := on().Pause(ctx)
		require.NoError(t, err)
		require.Eventually(t, func() bool { return strings.Contains(r.out.String(), "  paused") }, 10*time.Second, 10*time.Millisecond,
			"tail goes on once the server is back: %q", r.errs.String())
		assert.Equal(t, exitOK, r.stop(t))
	})
	t.Run("a bad --from or --count is bad usage", func(t *testing.T) {
		for _, args := range [][]string{{"tail", "mail", "--from", "last"}, {"tail", "mail", "--count", "-1"}, {"tail"}} {
			r := emq(t, s.Addr, args...)
			assert.Equal(t, exitUsage, r.code, "%q: %s", args, r.stderr)
		}
	})
}
