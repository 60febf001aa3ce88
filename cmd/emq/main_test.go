package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/echomq/emq/client"
	"github.com/echomq/emq/ids"
	"github.com/echomq/emq/inspect"
	"github.com/echomq/emq/internal/queuetest"
	"github.com/echomq/emq/internal/readable"
	"github.com/echomq/emq/internal/valkeytest"
	"github.com/echomq/emq/keys"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/valkey-io/valkey-go"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// result is what one run of the command printed and returned.
type result struct {
	stdout, stderr, progress string
	code                     int
}

// emq runs the command against addr with the fixture's clock.
func emq(t *testing.T, addr string, args ...string) result {
	t.Helper()
	return emqAt(t, addr, queuetest.Now, args...)
}

// emqAt runs the command against addr with its clock stopped at now.
func emqAt(t *testing.T, addr string, now time.Time, args ...string) result {
	t.Helper()
	return emqEnv(t, map[string]string{"EMQ_ADDR": addr}, now, args...)
}

// emqEnv runs the command in the environment vars, its clock stopped at
// now.
func emqEnv(t *testing.T, vars map[string]string, now time.Time, args ...string) result {
	t.Helper()
	var stdout, stderr, progress bytes.Buffer
	e := env{stdout: &stdout, stderr: &stderr, progress: &progress, now: func() time.Time { return now },
		getenv: func(k string) string { return vars[k] }}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	code := run(ctx, args, e)
	return result{stdout: stdout.String(), stderr: stderr.String(), progress: progress.String(), code: code}
}

// golden compares got with testdata/name.golden, or rewrites it under -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		require.NoError(t, os.MkdirAll("testdata", 0o755))
		require.NoError(t, os.WriteFile(path, []byte(got), 0o644))
		return
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "run go test ./cmd/emq -update to write it")
	assert.Equal(t, string(want), got, "%s (go test ./cmd/emq -run %s -update rewrites it)", path, t.Name())
}

// readCases are the tables people read; the same golden file holds for a
// server and for a cluster.
func readCases(f queuetest.Fixture) []struct {
	golden string
	args   []string
} {
	return []struct {
		golden string
		args   []string
	}{
		{"queues", []string{"queues"}},
		{"jobs_emails", []string{"jobs", "emails"}},
		{"jobs_emails_dead", []string{"jobs", "emails", "--state", "dead"}},
		{"jobs_emails_pending_page", []string{"jobs", "--limit", "2", "emails", "--state=pending", "--offset", "1"}},
		{"job_invoices_dead", []string{"job", "invoices", f.InvoicesDead.String()}},
		{"job_emails_active", []string{"job", "emails", f.EmailsActive.String()}},
		{"job_emails_done", []string{"job", f.EmailsDone.String()}},
	}
}

// TestCLIReads: the tables of queues, jobs and job on a server and on a
// 3-primary cluster match the golden files, and --json parses.
func TestCLIReads(t *testing.T) {
	s := valkeytest.Start(t, valkeytest.Options{})
	f := queuetest.Fill(t, s.Client())
	cl := valkeytest.StartCluster(t, 3, 0, valkeytest.Options{})
	queuetest.Fill(t, cl.Client())
	for _, vk := range []valkey.Client{s.Client(), cl.Client()} { // one refusal by code for stats to show
		err := vk.Do(context.Background(), vk.B().Arbitrary("EMQ.ENQUEUE", "2").Keys("emq:{q}:job:JOB0018f2a4c1e00001", "emq:{q}:pending").
			Args("MSG0018f2a4c1e00001", "p").Build()).Error()
		require.ErrorContains(t, err, "EMQKIND")
	}
	for _, target := range []struct{ name, addr string }{{"server", s.Addr}, {"cluster", cl.Primaries[1].Addr}} {
		t.Run(target.name, func(t *testing.T) {
			for _, c := range readCases(f) {
				t.Run(c.golden, func(t *testing.T) {
					r := emq(t, target.addr, c.args...)
					require.Equal(t, exitOK, r.code, r.stderr)
					golden(t, c.golden, r.stdout)
				})
			}
			t.Run("a page that leaves jobs out says so on stderr", func(t *testing.T) {
				r := emq(t, target.addr, "jobs", "emails", "--state", "pending", "--limit", "1")
				assert.Equal(t, "pending: 1 of 3 shown; --offset 1 for more\n", r.stderr)
			})
			t.Run("a page past the end says how many there are", func(t *testing.T) {
				r := emq(t, target.addr, "jobs", "emails", "--offset", "3")
				require.Equal(t, exitOK, r.code, r.stderr)
				assert.Equal(t, "pending: 3 in all, each before --offset 3\nactive: 1 in all, each before --offset 3\n"+
					"delayed: 1 in all, each before --offset 3\ndead: 2 in all, each before --offset 3\n", r.stderr)
				r = emq(t, target.addr, "jobs", "emails", "--offset", "1", "--state", "dead")
				assert.Empty(t, r.stderr, "a page that ends with the last says nothing")
			})
			t.Run("queues --json parses", func(t *testing.T) {
				r := emq(t, target.addr, "queues", "--json")
				require.Equal(t, exitOK, r.code, r.stderr)
				var qs []queueJSON
				require.NoError(t, json.Unmarshal([]byte(r.stdout), &qs))
				require.Len(t, qs, 3)
				assert.Equal(t, queueJSON{Queue: "emails", Pending: 3, Active: 1, Delayed: 1, Dead: 2,
					OldestPending: f.EmailsPending[1].String(), OldestAgeMs: (time.Hour - 6*time.Second).Milliseconds()}, qs[0])
				assert.Equal(t, queueJSON{Queue: "payments", Pending: 2, Paused: true, LimitMax: 10, LimitWindowMs: 1000,
					OldestPending: f.PaymentsPending[0].String(), OldestAgeMs: (time.Hour - 8*time.Second).Milliseconds()}, qs[2])
			})
			t.Run("queues --json counts the delayed jobs due and the leases passed by its clock", func(t *testing.T) {
				// emails' delayed job is due at Now + 30m; its lease passes after Now + 5m
				for _, tc := range []struct {
					after        time.Duration
					due, expired int64
				}{{0, 0, 0}, {10 * time.Minute, 0, 1}, {31 * time.Minute, 1, 1}} {
					r := emqAt(t, target.addr, queuetest.Now.Add(tc.after), "queues", "--json")
					require.Equal(t, exitOK, r.code, r.stderr)
					var qs []queueJSON
					require.NoError(t, json.Unmarshal([]byte(r.stdout), &qs))
					assert.Equal(t, tc.due, qs[0].DelayedDue, "+%v", tc.after)
					assert.Equal(t, tc.expired, qs[0].ActiveExpired, "+%v", tc.after)
				}
			})
			t.Run("jobs --json parses", func(t *testing.T) {
				r := emq(t, target.addr, "jobs", "emails", "--state", "dead", "--json")
				require.Equal(t, exitOK, r.code, r.stderr)
				var rows []jobRowJSON
				require.NoError(t, json.Unmarshal([]byte(r.stdout), &rows))
				require.Len(t, rows, 2)
				assert.Equal(t, jobRowJSON{ID: f.EmailsDead[0].String(), State: "dead", Score: queuetest.T0.Add(20 * time.Minute).UnixMilli(),
					AtMs: queuetest.T0.Add(20 * time.Minute).UnixMilli(), Attempts: 1, Error: f.DeadError, ErrorBytes: int64(len(f.DeadError)),
					PayloadBytes: int64(len("to: bob@example.com")), AgeMs: (time.Hour - 2*time.Second).Milliseconds()}, rows[0])
			})
			t.Run("job --json parses", func(t *testing.T) {
				r := emq(t, target.addr, "job", "invoices", f.InvoicesDead.String(), "--json")
				require.Equal(t, exitOK, r.code, r.stderr)
				var j jobJSON
				require.NoError(t, json.Unmarshal([]byte(r.stdout), &j))
				errText, payload := f.InvoicesDeadError, queuetest.InvoicePayload
				errBytes := int64(len(errText))
				assert.Equal(t, jobJSON{Queue: "invoices", ID: f.InvoicesDead.String(), State: "dead", Attempts: 1,
					Error: &errText, ErrorBytes: &errBytes, Payload: &payload, PayloadBytes: int64(len(payload)), MintedMs: queuetest.T0.Add(11 * time.Second).UnixMilli(),
					DiedMs: queuetest.T0.Add(30 * time.Minute).UnixMilli()}, j)
			})
			t.Run("stats --json sums INFO emq over the primaries", func(t *testing.T) {
				r := emq(t, target.addr, "stats", "--json")
				require.Equal(t, exitOK, r.code, r.stderr)
				var st statsJSON
				require.NoError(t, json.Unmarshal([]byte(r.stdout), &st))
				assert.Equal(t, int64(3), st.Total["emq_jobs_dead"])
				assert.Equal(t, int64(1), st.Total["emq_jobs_delayed"])
				if target.name == "cluster" {
					assert.Len(t, st.Nodes, 3)
				}
			})
			t.Run("stats reads as groups", func(t *testing.T) {
				r := emq(t, target.addr, "stats")
				require.Equal(t, exitOK, r.code, r.stderr)
				for _, heading := range []string{"counters", "verbs", "refusals by code", "levels now"} {
					assert.Contains(t, r.stdout, "\n"+heading+"\n")
				}
				assert.Regexp(t, `\n  enqueue +\d+ +\d+ +1\n`, r.stdout, "the verb's refused call")
				assert.Regexp(t, `\nrefusals by code\n  EMQKIND +1\n\n`, r.stdout, "only the codes that refused")
				for _, row := range []string{"  jobs dead  ", "  claim  ", "  blocked workers  "} {
					assert.Contains(t, r.stdout, row)
				}
			})
			t.Run("the read-only user of docs/OPERATIONS.md reads as the default user", func(t *testing.T) {
				nodes := []*valkeytest.Server{s}
				if target.name == "cluster" {
					nodes = cl.Nodes
				}
				rules := readOnlyUser(t)
				for _, n := range nodes {
					require.NoError(t, n.Do(append([]string{"ACL", "SETUSER", "ops", "on", "nopass"}, rules...)...).Error())
				}
				reads := [][]string{{"stats"}, {"repeats", "emails"}}
				for _, c := range readCases(f) {
					reads = append(reads, c.args)
				}
				for _, args := range reads {
					want := emq(t, target.addr, args...)
					r := emq(t, target.addr, append(args, "--user", "ops")...)
					require.Equal(t, exitOK, r.code, "%q: %s", args, r.stderr)
					if args[0] != "stats" { // its own INFO calls count
						assert.Equal(t, want.stdout, r.stdout, "%q", args)
					}
				}
				// tail from now on (the default "$") asks the server's TIME
				// first: the rules must grant it too
				vk := s.Client()
				if target.name == "cluster" {
					vk = cl.Client()
				}
				ctx := context.Background()
				m, err := ids.NewMinter(7)
				require.NoError(t, err)
				q, err := client.New(vk).Queue("opsread", m, client.Policy{})
				require.NoError(t, err)
				_, err = q.SetEvents(ctx, 100)
				require.NoError(t, err)
				tail := background(t, target.addr, "tail", "opsread", "--user", "ops", "--count", "1")
				require.Eventually(t, func() bool {
					_, err := q.Enqueue(ctx, []byte("x"))
					require.NoError(t, err)
					return strings.Contains(tail.out.String(), "added")
				}, 10*time.Second, 100*time.Millisecond)
				require.Equal(t, exitOK, <-tail.done, tail.errs.String())
				for _, n := range nodes {
					var denied []string
					for _, e := range n.ACLLog(t) {
						denied = append(denied, e["reason"]+" "+e["object"])
					}
					assert.Empty(t, denied, "%s: the ops user's reads were denied nothing (ACL LOG)", n.Addr)
				}
			})
		})
	}
}

// readOnlyUser is the rules docs/OPERATIONS.md gives a user who reads
// queues and never changes them: its ACL SETUSER line after the password.
func readOnlyUser(t *testing.T) []string {
	t.Helper()
	doc, err := os.ReadFile("../../docs/OPERATIONS.md")
	require.NoError(t, err)
	const line = "    ACL SETUSER ops on >secret "
	i := strings.Index(string(doc), line)
	require.GreaterOrEqual(t, i, 0, "docs/OPERATIONS.md has no %q", line)
	rules, _, _ := strings.Cut(string(doc[i+len(line):]), "\n")
	return strings.Fields(rules)
}

// TestCLIActions: revive by id and --all through EMQ.REVIVE, enqueue, and
// the exit codes a script tests.
func TestCLIActions(t *testing.T) {
	s := valkeytest.Start(t, valkeytest.Options{})
	f := queuetest.Fill(t, s.Client())
	dead := func(queue string) int64 {
		n, err := s.Do("ZCARD", "emq:{"+queue+"}:dead").AsInt64()
		require.NoError(t, err)
		return n
	}

	t.Run("a dead id whose row is gone is listed with what drops it, and delete drops it", func(t *testing.T) {
		id := "JOB0000000000000abc"
		died := queuetest.Now.Add(-2 * time.Hour).UnixMilli()
		require.NoError(t, s.Do("ZADD", "emq:{strays}:dead", strconv.FormatInt(died, 10), id).Error())
		r := emq(t, s.Addr, "jobs", "strays", "--state", "dead")
		require.Equal(t, exitOK, r.code, r.stderr)
		assert.Contains(t, r.stdout, "(no row: emq delete drops it)")
		assert.Regexp(t, `dead\s+`+id+`\s+-\s+-\s+\S+\s+2h00m ago\s`, r.stdout, "when it died, as its set says")
		r = emq(t, s.Addr, "delete", "strays", id)
		require.Equal(t, exitOK, r.code, r.stderr)
		assert.Zero(t, dead("strays"))
	})
	t.Run("a row's state written by hand prints quoted when it is not printable text", func(t *testing.T) {
		id := "JOB0000000000000abd"
		require.NoError(t, s.Do("HSET", "emq:{strays}:job:"+id, "state", "\x1b[2JFAKE\rOVER", "attempts", "1", "payload", "p").Error())
		r := emq(t, s.Addr, "job", "strays", id)
		require.Equal(t, exitOK, r.code, r.stderr)
		assert.NotContains(t, r.stdout, "\x1b")
		assert.Contains(t, r.stdout, `"\x1b[2JFAKE\rOVER"`)
		require.NoError(t, s.Do("DEL", "emq:{strays}:job:"+id).Error())
	})
	t.Run("a dead member that is no JOB id lists as one, with what removes it: a ZREM, no verb", func(t *testing.T) {
		require.NoError(t, s.Do("ZADD", "emq:{strays}:dead", "1", "not-a-job").Error())
		require.NoError(t, s.Do("HSET", "emq:{strays}:job:not-a-job", "state", "dead", "attempts", "3").Error())
		r := emq(t, s.Addr, "jobs", "strays", "--state", "dead")
		require.Equal(t, exitOK, r.code, r.stderr)
		assert.Regexp(t, `dead\s+not-a-job\s+-\s+-\s.*\(not a job id: no verb acts on it; ZREM it by hand\)`, r.stdout)
		r = emq(t, s.Addr, "jobs", "strays", "--state", "dead", "--json")
		require.Equal(t, exitOK, r.code, r.stderr)
		assert.Contains(t, r.stdout, `"id": "not-a-job",`)
		assert.Equal(t, 1, strings.Count(r.stdout, `"not_job_id": true`), "the one member that is no JOB id: %s", r.stdout)
		require.NoError(t, s.Do("ZREM", "emq:{strays}:dead", "not-a-job").Error())
	})
	t.Run("a row written by hand as another type lists as a dangling entry, the queue's other jobs with it", func(t *testing.T) {
		id, healthy := "JOB0000000000000abe", "JOB0000000000000abf"
		require.NoError(t, s.Do("ZADD", "emq:{strays}:dead", "1", id).Error())
		require.NoError(t, s.Do("SET", "emq:{strays}:job:"+id, "str").Error())
		require.NoError(t, s.Do("EMQ.ENQUEUE", "2", "emq:{strays}:job:"+healthy, "emq:{strays}:pending", healthy, "ok").Error())
		r := emq(t, s.Addr, "jobs", "strays")
		require.Equal(t, exitOK, r.code, r.stderr)
		assert.Regexp(t, `pending\s+`+healthy+`\s+0\s+0\s`, r.stdout)
		assert.Regexp(t, `dead\s+`+id+`\s+-\s+-\s.*\(its row is not a hash: DEL the row by hand, then emq delete drops it\)`, r.stdout)
		r = emq(t, s.Addr, "jobs", "strays", "--state", "dead", "--json")
		require.Equal(t, exitOK, r.code, r.stderr)
		assert.Equal(t, 1, strings.Count(r.stdout, `"row_not_hash": true`), r.stdout)
		r = emq(t, s.Addr, "delete", "strays", id)
		assert.Equal(t, exitRefused, r.code, "the verb's refusal")
		assert.Contains(t, r.stderr, "WRONGTYPE")
		require.NoError(t, s.Do("DEL", "emq:{strays}:job:"+id, "emq:{strays}:job:"+healthy).Error())
		require.NoError(t, s.Do("ZREM", "emq:{strays}:dead", id).Error())
		require.NoError(t, s.Do("ZREM", "emq:{strays}:pending", healthy).Error())
	})
	t.Run("revive by id puts the job back in pending", func(t *testing.T) {
		r := emq(t, s.Addr, "revive", "emails", f.EmailsDead[0].String())
		require.Equal(t, exitOK, r.code, r.stderr)
		assert.Equal(t, "revived "+f.EmailsDead[0].String()+"\n", r.stdout)
		j := emq(t, s.Addr, "job", "emails", f.EmailsDead[0].String(), "--json")
		assert.Contains(t, j.stdout, `"state": "pending"`)
		j = emq(t, s.Addr, "job", "emails", f.EmailsDead[0].String())
		assert.Regexp(t, `attempts +[0-9]+ \(0 counted against its budget\)`, j.stdout, "revived: no attempt counted yet")
	})
	t.Run("reviving a job that is not dead is refused: exit 4", func(t *testing.T) {
		r := emq(t, s.Addr, "revive", "emails", f.EmailsDead[0].String())
		assert.Equal(t, exitRefused, r.code)
		assert.Contains(t, r.stderr, "EMQSTATE")
		assert.Empty(t, r.stdout)
	})
	t.Run("reviving a job that does not exist: exit 3", func(t *testing.T) {
		r := emq(t, s.Addr, "revive", "emails", "JOB00000000000000ff", "--json")
		assert.Equal(t, exitNotFound, r.code)
		var out eachJSON
		require.NoError(t, json.Unmarshal([]byte(r.stdout), &out))
		assert.Empty(t, out.Done)
		require.Len(t, out.Failed, 1)
		assert.Contains(t, out.Failed[0].Error, "EMQNOJOB")
	})
	t.Run("revive --all revives every dead job", func(t *testing.T) {
		r := emq(t, s.Addr, "revive", "emails", "--all")
		require.Equal(t, exitOK, r.code, r.stderr)
		assert.Equal(t, "revived 1 of 1 dead jobs of emails\n", r.stdout)
		assert.Empty(t, r.progress, "no bar for 1,000 jobs or fewer")
		assert.Zero(t, dead("emails"))
	})
	t.Run("revive --all over 1,000 jobs draws a progress bar", func(t *testing.T) {
		queuetest.Dead(t, s.Client(), "bulk", 1500)
		r := emq(t, s.Addr, "revive", "bulk", "--all", "--json")
		require.Equal(t, exitOK, r.code, r.stderr)
		var out bulkJSON
		require.NoError(t, json.Unmarshal([]byte(r.stdout), &out))
		assert.Equal(t, bulkJSON{Queue: "bulk", State: "dead", Total: 1500, Done: 1500}, out)
		assert.Contains(t, r.progress, "\rrevived [##############################] 1500/1500\n")
		assert.Equal(t, 15, strings.Count(r.progress, "\r"), "one redraw per batch of 100")
		assert.Zero(t, dead("bulk"))
	})
	t.Run("enqueue prints the id of a pending job", func(t *testing.T) {
		r := emq(t, s.Addr, "enqueue", "fresh", "--", "-hello-")
		require.Equal(t, exitOK, r.code, r.stderr)
		id := strings.TrimSpace(r.stdout)
		j := emq(t, s.Addr, "job", "fresh", id, "--json")
		require.Equal(t, exitOK, j.code, j.stderr)
		assert.Contains(t, j.stdout, `"payload": "-hello-"`)
		assert.Contains(t, j.stdout, `"state": "pending"`)
		parsed, ok := ids.Parse(ids.Job, []byte(id))
		require.True(t, ok, id)
		assert.Equal(t, uint32(enqueueNode), parsed.Node(), "not node 1023, where a queue's schedules mint their ticks")
		r = emq(t, s.Addr, "enqueue", "fresh", "x", "--node", "7")
		require.Equal(t, exitOK, r.code, r.stderr)
		parsed, ok = ids.Parse(ids.Job, []byte(strings.TrimSpace(r.stdout)))
		require.True(t, ok, r.stdout)
		assert.Equal(t, uint32(7), parsed.Node())
	})
	t.Run("enqueue --delay --priority admits a delayed job at its priority", func(t *testing.T) {
		r := emq(t, s.Addr, "enqueue", "later", "x", "--delay", "1h", "--priority", "7")
		require.Equal(t, exitOK, r.code, r.stderr)
		j := emq(t, s.Addr, "job", "later", strings.TrimSpace(r.stdout), "--json")
		require.Equal(t, exitOK, j.code, j.stderr)
		assert.Contains(t, j.stdout, `"state": "delayed"`)
		assert.Contains(t, j.stdout, `"priority": 7`)
	})
	t.Run("the common flags may come before the command", func(t *testing.T) {
		port, err := valkeytest.FreePort()
		require.NoError(t, err)
		r := emq(t, "127.0.0.1:"+strconv.Itoa(port), "--addr", s.Addr, "--json", "queues")
		require.Equal(t, exitOK, r.code, r.stderr)
		assert.Contains(t, r.stdout, `"queue": "emails"`)
		r = emq(t, s.Addr, "--state", "dead", "jobs", "emails")
		assert.Equal(t, exitUsage, r.code, "a command's own flag goes after it")
		assert.Contains(t, r.stderr, `no command "--state"`)
	})
	t.Run("bad usage exits 2 and writes nothing", func(t *testing.T) {
		before := emq(t, s.Addr, "queues", "--json").stdout
		for _, args := range [][]string{
			{"nosuch"},
			{"jobs"},
			{"jobs", "emails", "--state", "finished"},
			{"jobs", "emails", "--limit", "0"},
			{"job", "emails", "not-an-id"},
			{"revive", "emails"},
			{"revive", "emails", f.EmailsDead[1].String(), "--all"},
			{"revive", "emails", "JOB1"},
			{"delete", "emails"},
			{"delete", "emails", "JOB1"},
			{"purge", "emails", f.EmailsDead[1].String(), "--state", "dead"},
			{"purge", "emails", "--state", "dead", "--older-than", "-1h"},
			{"pause"},
			{"resume", "emails", "payments"},
			{"pause", "bad{name}"},
			{"limit", "emails"},
			{"limit", "emails", "50"},
			{"limit", "emails", "0", "1s"},
			{"limit", "emails", "x", "1s"},
			{"limit", "emails", "5", "0s"},
			{"limit", "emails", "5", "-1s"},
			{"limit", "emails", "5", "1500us"},
			{"limit", "emails", "5", "soon"},
			{"limit", "emails", "off", "1s"},
			{"limit", "bad{name}", "5", "1s"},
			{"events", "emails"},
			{"events", "emails", "0"},
			{"events", "emails", "-1"},
			{"events", "emails", "x"},
			{"events", "emails", "10", "off"},
			{"enqueue", "emails"},
			{"enqueue", "bad{name}", "x"},
			{"enqueue", "emails", "x", "--priority", "-1"},
			{"enqueue", "emails", "x", "--priority", "2147483648"},
			{"enqueue", "emails", "x", "--delay", "-1s"},
			{"queues", "--bogus"},
			{"queues", "--timeout", "0s"},
			{"queues", "--timeout", "-1s"},
			{"dash", "--sample", "0s"},
			{"dash", "--sample", "-1s"},
			{"dash", "--sample", "1ns"},
			{"help", "nosuch"},
			{},
		} {
			r := emq(t, s.Addr, args...)
			assert.Equal(t, exitUsage, r.code, "%q: %s", args, r.stderr)
			assert.NotEmpty(t, r.stderr, "%q says why", args)
		}
		assert.Equal(t, before, emq(t, s.Addr, "queues", "--json").stdout)
	})
	t.Run("a negative number is an argument, refused by its command, not an unknown flag", func(t *testing.T) {
		for _, args := range [][]string{{"limit", "emails", "-5", "1s"}, {"events", "emails", "-1"}} {
			r := emq(t, s.Addr, args...)
			assert.Equal(t, exitUsage, r.code, "%q: %s", args, r.stderr)
			assert.NotContains(t, r.stderr, "flag provided but not defined", "%q", args)
			assert.Contains(t, r.stderr, args[2], "%q names it", args)
		}
	})
	t.Run("a bad job id is named in quotes, the message is not", func(t *testing.T) {
		r := emq(t, s.Addr, "job", "emails", "JOBxyz")
		assert.Equal(t, exitUsage, r.code)
		assert.Contains(t, r.stderr, `emq job: not a job id (JOB and 16 lowercase hex digits): "JOBxyz"`)
	})
	t.Run("a name no queue can have is bad usage for every command naming a queue", func(t *testing.T) {
		id := f.EmailsDead[0].String()
		for _, args := range [][]string{{"jobs", "a{b"}, {"job", "a{b", id}, {"repeats", "a}b"}, {"pause", "a{b"}, {"resume", "a{b"},
			{"limit", "a{b", "5", "1s"}, {"events", "a{b", "100"}, {"enqueue", "a{b", "x"}, {"revive", "a{b", "--all"},
			{"purge", "a{b", "--state", "dead"}, {"delete", "a{b", id}, {"unrepeat", "a{b", "x"}, {"tail", "a{b"}, {"jobs", ""}} {
			r := emq(t, s.Addr, args...)
			assert.Equal(t, exitUsage, r.code, "%q: %s", args, r.stderr)
			assert.Contains(t, r.stderr, "EMQLAYOUT queue name must be 1 or more bytes with no {, } or NUL", "%q", args)
		}
	})
	t.Run("jobs of a queue that holds nothing notes a mistyped name", func(t *testing.T) {
		r := emq(t, s.Addr, "jobs", "nosuchqueue")
		assert.Equal(t, exitOK, r.code)
		assert.Contains(t, r.stderr, "emq jobs: note: nosuchqueue holds no job and has no setting (a mistyped name?)")
		r = emq(t, s.Addr, "jobs", "emails")
		assert.NotContains(t, r.stderr, "mistyped")
	})
	t.Run("a bulk action on a queue that holds nothing notes a mistyped name", func(t *testing.T) {
		for _, tc := range []struct {
			args   []string
			stdout string
		}{
			{[]string{"revive", "nosuchqueue", "--all"}, "revived 0 of 0 dead jobs of nosuchqueue\n"},
			{[]string{"purge", "nosuchqueue", "--state", "pending"}, "removed 0 of 0 pending jobs of nosuchqueue\n"},
		} {
			r := emq(t, s.Addr, tc.args...)
			assert.Equal(t, exitOK, r.code, r.stderr)
			assert.Equal(t, tc.stdout, r.stdout)
			assert.Equal(t, "emq "+tc.args[0]+": note: nosuchqueue holds no job and has no setting (a mistyped name?)\n", r.stderr)
		}
		require.Equal(t, exitOK, emq(t, s.Addr, "enqueue", "inuse", "x").code)
		r := emq(t, s.Addr, "purge", "inuse", "--state", "dead") // a queue in use, with no job of that state
		assert.Equal(t, exitOK, r.code, r.stderr)
		assert.Equal(t, "removed 0 of 0 dead jobs of inuse\n", r.stdout)
		assert.Empty(t, r.stderr)
	})
	t.Run("a payload of one byte is one byte", func(t *testing.T) {
		r := emq(t, s.Addr, "enqueue", "single", "x")
		require.Equal(t, exitOK, r.code, r.stderr)
		r = emq(t, s.Addr, "job", "single", strings.TrimSpace(r.stdout))
		assert.Contains(t, r.stdout, `1 byte: "x"`)
	})
	t.Run("version prints the module's, which the server's EMQ.CAPS says too", func(t *testing.T) {
		caps, err := s.Do("EMQ.CAPS").ToArray()
		require.NoError(t, err)
		version, err := caps[1].ToString()
		require.NoError(t, err)
		for _, args := range [][]string{{"version"}, {"--version"}, {"--addr", s.Addr, "version"}} {
			r := emq(t, s.Addr, args...)
			assert.Equal(t, exitOK, r.code, "%q", args)
			assert.Equal(t, "emq "+version+"\n", r.stdout, "%q", args)
		}
	})
	t.Run("help of no command says so", func(t *testing.T) {
		r := emq(t, s.Addr, "help", "nosuch")
		assert.Contains(t, r.stderr, `emq help: no command "nosuch"`)
	})
	t.Run("an interrupt stops an action as an error does: exit 1", func(t *testing.T) {
		var stdout, stderr bytes.Buffer
		e := env{stdout: &stdout, stderr: &stderr, now: time.Now, getenv: func(string) string { return "" }}
		require.NoError(t, s.Do("ZADD", "emq:{stopped}:dead", "1", f.EmailsDead[0].String()).Error())
		ctx, cancel := context.WithCancel(context.Background())
		cancel() // the interrupt came before the first batch
		assert.Equal(t, exitFailed, run(ctx, []string{"purge", "stopped", "--state", "dead", "--addr", s.Addr}, e), stderr.String())
		assert.Contains(t, stderr.String(), "context canceled")
		assert.Equal(t, int64(1), dead("stopped"), "nothing removed")
	})
	t.Run("purge --state with a bogus state names the states purge takes", func(t *testing.T) {
		r := emq(t, s.Addr, "purge", "emails", "--state", "bogus")
		assert.Equal(t, exitUsage, r.code)
		assert.Contains(t, r.stderr, `--state "bogus": want pending, delayed or dead`)
		r = emq(t, s.Addr, "jobs", "emails", "--state", "bogus")
		assert.Contains(t, r.stderr, `--state "bogus": want pending, active, delayed or dead`, "jobs lists active jobs too")
	})
	t.Run("a job that does not exist exits 3", func(t *testing.T) {
		r := emq(t, s.Addr, "job", "emails", f.InvoicesDead.String())
		assert.Equal(t, exitNotFound, r.code)
		assert.Contains(t, r.stderr, "emails holds no job")
		r = emq(t, s.Addr, "job", "JOB00000000000000ff")
		assert.Equal(t, exitNotFound, r.code)
		assert.Contains(t, r.stderr, "no queue holds")
	})
	t.Run("a job without its queue is found in whichever holds it", func(t *testing.T) {
		r := emq(t, s.Addr, "job", f.InvoicesDead.String())
		require.Equal(t, exitOK, r.code, r.stderr)
		assert.Contains(t, r.stdout, "queue     invoices\n")
	})
	t.Run("a user granted one queue's keys finds its jobs; another's is a refusal naming the queues", func(t *testing.T) {
		require.NoError(t, s.Do("ACL", "SETUSER", "invoices", "on", "nopass", "+@all", "~"+keys.Set("invoices", "*")).Error())
		r := emq(t, s.Addr, "job", f.InvoicesDead.String(), "--user", "invoices")
		require.Equal(t, exitOK, r.code, r.stderr)
		assert.Contains(t, r.stdout, "queue     invoices\n")
		r = emq(t, s.Addr, "job", f.EmailsDone.String(), "--user", "invoices")
		assert.Equal(t, exitRefused, r.code, r.stderr)
		// the queues earlier cases made are named too; never the one it may read
		assert.Regexp(t, "no queue you may read holds a row of "+f.EmailsDone.String()+"; NOPERM for [^;]*emails, [^;]*payments, [^;]*which may", r.stderr)
		assert.NotContains(t, r.stderr, "invoices")
		assert.Contains(t, r.stderr, "emq job <queue> "+f.EmailsDone.String())
		for i := range 2 * readable.NamesShown {
			require.NoError(t, s.Do("EMQ.ENQUEUE", "2", keys.Job(fmt.Sprint("many", i), f.EmailsDone.String()),
				keys.Set(fmt.Sprint("many", i), "pending"), f.EmailsDone.String(), "p").Error())
		}
		r = emq(t, s.Addr, "job", f.EmailsDone.String(), "--user", "invoices")
		assert.Equal(t, exitRefused, r.code, r.stderr)
		assert.Regexp(t, "; NOPERM for ([^,;]+, ){10}and [0-9]+ more, which may", r.stderr, "ten named, the rest counted")
		for i := range 2 * readable.NamesShown {
			require.NoError(t, s.Do("DEL", keys.Job(fmt.Sprint("many", i), f.EmailsDone.String()), keys.Set(fmt.Sprint("many", i), "pending")).Error())
		}
	})
	t.Run("no server exits 1", func(t *testing.T) {
		port, err := valkeytest.FreePort()
		require.NoError(t, err)
		r := emq(t, "127.0.0.1:"+strconv.Itoa(port), "queues")
		assert.Equal(t, exitFailed, r.code)
		assert.Contains(t, r.stderr, "connect to")
	})
	t.Run("help lists every command and each has examples", func(t *testing.T) {
		r := emq(t, s.Addr, "help")
		require.Equal(t, exitOK, r.code)
		for _, c := range commands {
			assert.Contains(t, r.stdout, "\n  "+c.name+" ")
			h := emq(t, s.Addr, c.name, "--help")
			require.Equal(t, exitOK, h.code)
			assert.Contains(t, h.stdout, "Examples:\n  emq "+c.name)
			assert.NotContains(t, h.stdout, "EchoMQ", "emq, as everywhere else")
			assert.Contains(t, h.stdout, `(default "`+s.Addr+`")`, "the default --addr is $EMQ_ADDR's, as the run takes it")
		}
		assert.NotContains(t, r.stdout, "EchoMQ", "emq, as everywhere else")
	})
	t.Run("dash and metrics list only the flags they use", func(t *testing.T) {
		for _, name := range []string{"dash", "metrics"} {
			h := emq(t, s.Addr, name, "--help")
			require.Equal(t, exitOK, h.code)
			assert.NotContains(t, h.stdout, "-json", "%s prints no table", name)
			assert.Contains(t, h.stdout, "  -timeout duration\n    \tgive up dialing and greeting a node after this long", name)
			r := emq(t, s.Addr, name, "--json", "--listen", "127.0.0.1:0")
			assert.Equal(t, exitUsage, r.code, "%s refuses --json: %s", name, r.stderr)
		}
		h := emq(t, s.Addr, "queues", "--help")
		assert.Contains(t, h.stdout, "  -json\n")
		assert.Contains(t, h.stdout, "  -timeout duration\n    \tgive up after this long")
	})
}

// TestCLISteers: pause and resume through EMQ.PAUSE and EMQ.RESUME,
// delete and purge through EMQ.REMOVE, each step of the table run in
// order on one fixture, with what it prints and the exit code a script
// tests.
func TestCLISteers(t *testing.T) {
	s := valkeytest.Start(t, valkeytest.Options{})
	f := queuetest.Fill(t, s.Client())
	size := func(queue, st string) int64 {
		n, err := s.Do("ZCARD", "emq:{"+queue+"}:"+st).AsInt64()
		require.NoError(t, err)
		return n
	}
	paused := func(queue string) bool {
		v, err := s.Do("HGET", "emq:{"+queue+"}:config", "paused").ToString()
		return err == nil && v == "1"
	}
	config := func(queue string) map[string]string {
		m, err := s.Do("HGETALL", "emq:{"+queue+"}:config").AsStrMap()
		require.NoError(t, err)
		return m
	}
	pending, active, missing := f.EmailsPending[0].String(), f.EmailsActive.String(), "JOB00000000000000ff"
	for _, step := range []struct {
		name   string
		args   []string
		code   int
		stdout string
		stderr string // a part of it; "" for none at all
		after  func(t *testing.T)
	}{
		{name: "pause stops a running queue's claims", args: []string{"pause", "emails"}, stdout: "paused emails\n",
			after: func(t *testing.T) { assert.True(t, paused("emails")) }},
		{name: "pausing a paused queue says nothing changed", args: []string{"pause", "emails"},
			stdout: "emails was paused already: nothing changed\n"},
		{name: "pause --json says whether it changed the queue", args: []string{"pause", "emails", "--json"},
			stdout: "{\n  \"queue\": \"emails\",\n  \"paused\": true,\n  \"changed\": false\n}\n"},
		{name: "resume lets the claims take jobs again", args: []string{"resume", "emails"}, stdout: "resumed emails\n",
			after: func(t *testing.T) { assert.False(t, paused("emails")) }},
		{name: "resuming a running queue says nothing changed", args: []string{"resume", "emails"},
			stdout: "emails was not paused: nothing changed\n"},
		{name: "pausing a queue that holds nothing warns of a mistyped name", args: []string{"pause", "emials"},
			stdout: "paused emials\n", stderr: "emials holds no job and has no setting (a mistyped name?)"},
		{name: "resume undoes it", args: []string{"resume", "emials"}, stdout: "resumed emials\n",
			after: func(t *testing.T) { assert.False(t, paused("emials")) }},
		{name: "limit caps the queue's deliveries", args: []string{"limit", "emails", "50", "1s"}, stdout: "limited emails to 50 jobs per 1s\n",
			after: func(t *testing.T) {
				assert.Equal(t, map[string]string{"rate_max": "50", "rate_ms": "1000"}, config("emails"))
			}},
		{name: "limit --json says the limit set", args: []string{"limit", "emails", "1000", "1h", "--json"},
			stdout: "{\n  \"queue\": \"emails\",\n  \"max\": 1000,\n  \"window_ms\": 3600000\n}\n"},
		{name: "a limit above EMQ.LIMIT's is the server's refusal, exit 4", args: []string{"limit", "emails", "1000001", "1s"},
			code: exitRefused, stderr: "EMQSHAPE max must be an integer from 0 to 1000000",
			after: func(t *testing.T) {
				assert.Equal(t, map[string]string{"rate_max": "1000", "rate_ms": "3600000"}, config("emails"), "the limit as it was")
			}},
		{name: "a window above EMQ.LIMIT's too", args: []string{"limit", "emails", "5", "600h"},
			code: exitRefused, stderr: "EMQSHAPE window_ms must be an integer from 1 to 2147483647"},
		{name: "limit off removes the limit", args: []string{"limit", "emails", "off"}, stdout: "emails has no limit\n",
			after: func(t *testing.T) { assert.Empty(t, config("emails")) }},
		{name: "limiting a queue that holds nothing warns of a mistyped name", args: []string{"limit", "emials", "5", "1s"},
			stdout: "limited emials to 5 jobs per 1s\n", stderr: "emials holds no job and has no setting (a mistyped name?); it is limited all the same"},
		{name: "removing its limit notes nothing", args: []string{"limit", "emials", "off"}, stdout: "emials has no limit\n",
			after: func(t *testing.T) { assert.Empty(t, config("emials")) }},
		{name: "events turns the queue's events on", args: []string{"events", "emails", "100"},
			stdout: "events of emails on, capped at about 100 entries\n",
			after:  func(t *testing.T) { assert.Equal(t, map[string]string{"events": "100"}, config("emails")) }},
		{name: "events as they are change nothing", args: []string{"events", "emails", "100"}, stdout: "emails: nothing changed\n"},
		{name: "events --json says whether it changed the queue", args: []string{"events", "emails", "off", "--json"},
			stdout: "{\n  \"queue\": \"emails\",\n  \"cap\": 0,\n  \"changed\": true\n}\n",
			after:  func(t *testing.T) { assert.Empty(t, config("emails")) }},
		{name: "events off of a queue whose events are off change nothing", args: []string{"events", "emails", "off"},
			stdout: "emails: nothing changed\n"},
		{name: "turning on the events of a queue that holds nothing warns of a mistyped name", args: []string{"events", "emials", "10"},
			stdout: "events of emials on, capped at about 10 entries\n", stderr: "its events are on all the same"},
		{name: "events off turns them off", args: []string{"events", "emials", "off"}, stdout: "events of emials off\n",
			after: func(t *testing.T) { assert.Empty(t, config("emials")) }},
		{name: "delete removes each job named; a missing one is exit 3", args: []string{"delete", "emails", pending, missing},
			code: exitNotFound, stdout: "deleted " + pending + "\n", stderr: missing + ": EMQNOJOB queue emails holds no job " + missing,
			after: func(t *testing.T) { assert.Equal(t, int64(2), size("emails", "pending")) }},
		{name: "delete takes an active job from its worker", args: []string{"delete", "emails", active},
			stdout: "deleted " + active + "\n",
			after: func(t *testing.T) {
				assert.Zero(t, size("emails", "active"))
				assert.Equal(t, exitNotFound, emq(t, s.Addr, "job", "emails", active).code)
			}},
		{name: "purge refuses active jobs: workers hold them", args: []string{"purge", "emails", "--state", "active"},
			code: exitUsage, stderr: "active jobs are held by workers and are not purged"},
		{name: "purge needs a state", args: []string{"purge", "emails"}, code: exitUsage, stderr: "--state is required"},
		{name: "purge --older-than reads the time of death alone", args: []string{"purge", "emails", "--state", "pending", "--older-than", "1h"},
			code: exitUsage, stderr: "only with --state dead"},
		{name: "purge --older-than is not negative", args: []string{"purge", "emails", "--state", "dead", "--older-than", "-1h"},
			code: exitUsage, stderr: "--older-than is a duration of 0 or more (0, the default: any age)"},
		{name: "purge --older-than leaves the jobs that died since", args: []string{"purge", "emails", "--state", "dead", "--older-than", "45m"},
			stdout: "removed 1 of 1 dead jobs of emails\n",
			after: func(t *testing.T) {
				assert.Equal(t, int64(1), size("emails", "dead"))
				assert.Equal(t, exitOK, emq(t, s.Addr, "job", "emails", f.EmailsDead[0].String()).code, "died 40m ago: kept")
			}},
		{name: "purge --json removes the rest", args: []string{"purge", "emails", "--state", "dead", "--json"},
			stdout: "{\n  \"queue\": \"emails\",\n  \"state\": \"dead\",\n  \"total\": 1,\n  \"done\": 1,\n  \"failed\": 0\n}\n",
			after:  func(t *testing.T) { assert.Zero(t, size("emails", "dead")) }},
	} {
		t.Run(step.name, func(t *testing.T) {
			r := emq(t, s.Addr, step.args...)
			assert.Equal(t, step.code, r.code, r.stderr)
			assert.Equal(t, step.stdout, r.stdout)
			if step.stderr == "" {
				assert.Empty(t, r.stderr)
			} else {
				assert.Contains(t, r.stderr, step.stderr)
			}
			if step.after != nil {
				step.after(t)
			}
		})
	}
	t.Run("the JSON of pause, delete and purge parses", func(t *testing.T) {
		var p pausedJSON
		r := emq(t, s.Addr, "pause", "invoices", "--json")
		require.NoError(t, json.Unmarshal([]byte(r.stdout), &p))
		assert.Equal(t, pausedJSON{Queue: "invoices", Paused: true, Changed: true}, p)
		var d eachJSON
		r = emq(t, s.Addr, "delete", "invoices", f.InvoicesDead.String(), "--json")
		require.NoError(t, json.Unmarshal([]byte(r.stdout), &d))
		assert.Equal(t, eachJSON{Done: []string{f.InvoicesDead.String()}, Failed: []failedJSON{}}, d)
	})
	t.Run("purge over 1,000 jobs draws a progress bar", func(t *testing.T) {
		queuetest.Dead(t, s.Client(), "bulk", 1200)
		r := emq(t, s.Addr, "purge", "bulk", "--state", "dead", "--json")
		require.Equal(t, exitOK, r.code, r.stderr)
		var out bulkJSON
		require.NoError(t, json.Unmarshal([]byte(r.stdout), &out))
		assert.Equal(t, bulkJSON{Queue: "bulk", State: "dead", Total: 1200, Done: 1200}, out)
		assert.Contains(t, r.progress, "\rremoved [##############################] 1200/1200\n")
		assert.Zero(t, size("bulk", "dead"))
		rows, err := s.Do("KEYS", "emq:{bulk}:job:*").AsStrSlice()
		require.NoError(t, err)
		assert.Empty(t, rows, "every row deleted")
	})
}

// lockedBuffer is a buffer a serving run writes to while the test reads.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

var servingAt = regexp.MustCompile(`serving (http://[0-9.:\[\]]+/)`)

// running is a command run in the background: what it printed so far,
// and its stop.
type running struct {
	out, errs *lockedBuffer
	done      chan int
	cancel    context.CancelFunc
}

// background runs a command against addr until it ends or stop; the test
// ends it if still running.
func background(t *testing.T, addr string, args ...string) *running {
	t.Helper()
	r := &running{out: &lockedBuffer{}, errs: &lockedBuffer{}, done: make(chan int, 1)}
	var ctx context.Context
	ctx, r.cancel = context.WithCancel(context.Background())
	e := env{stdout: r.out, stderr: r.errs, now: time.Now, getenv: func(k string) string {
		if k == "EMQ_ADDR" {
			return addr
		}
		return ""
	}}
	go func() { r.done <- run(ctx, args, e) }()
	t.Cleanup(r.cancel)
	return r
}

// stop interrupts the command and returns its exit code.
func (r *running) stop(t *testing.T) int {
	t.Helper()
	r.cancel()
	select {
	case code := <-r.done:
		return code
	case <-time.After(10 * time.Second):
		t.Fatal("the command did not stop within 10s of its interrupt")
		return -1
	}
}

// serving starts a serving command against addr and returns the URL it
// serves, stopping it when the test ends.
func serving(t *testing.T, addr string, args ...string) string {
	t.Helper()
	r := background(t, addr, args...)
	t.Cleanup(func() { assert.Equal(t, exitOK, r.stop(t), "an interrupted server exits 0") })
	var url string
	require.Eventually(t, func() bool {
		m := servingAt.FindStringSubmatch(r.errs.String())
		if m != nil {
			url = m[1]
		}
		return m != nil
	}, 10*time.Second, 10*time.Millisecond, "the command says where it serves: %s", r.errs.String())
	return url
}

// fetch GETs url and returns the status and the body.
func fetch(t *testing.T, url string) (int, string) {
	t.Helper()
	return requestFor(t, http.MethodGet, url, "", nil)
}

// requestFor sends method to target naming host (when not empty) in its
// Host header, as a browser that fetched that name would, after setup when
// not nil, and returns the status and the body.
func requestFor(t *testing.T, method, target, host string, setup func(*http.Request)) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, target, nil)
	require.NoError(t, err)
	req.Host = host // empty: the URL's
	if setup != nil {
		setup(req)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(body)
}

// TestCLIServes: emq dash and emq metrics serve on the address given,
// until interrupted; actions off loopback need --auth.
func TestCLIServes(t *testing.T) {
	s := valkeytest.Start(t, valkeytest.Options{})
	queuetest.Fill(t, s.Client())

	t.Run("dash serves the dashboard, read-only by default, and /metrics", func(t *testing.T) {
		url := serving(t, s.Addr, "dash", "--listen", "127.0.0.1:0")
		code, body := fetch(t, url)
		require.Equal(t, http.StatusOK, code)
		assert.Contains(t, body, `data-queue="emails"`)
		assert.Contains(t, body, "read-only")
		code, body = fetch(t, url+"metrics")
		require.Equal(t, http.StatusOK, code)
		assert.Contains(t, body, `emq_queue_jobs{queue="emails",state="dead"} 2`)
	})
	t.Run("metrics serves /metrics alone", func(t *testing.T) {
		url := serving(t, s.Addr, "metrics", "--listen", "127.0.0.1:0")
		code, body := fetch(t, url+"metrics")
		require.Equal(t, http.StatusOK, code)
		assert.Contains(t, body, `emq_queue_paused{queue="payments"} 1`)
		code, _ = fetch(t, url)
		assert.Equal(t, http.StatusNotFound, code)
	})
	t.Run("started before their server, both answer 503 until it answers, then serve", func(t *testing.T) {
		port, err := valkeytest.FreePort()
		require.NoError(t, err)
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		pages := []string{serving(t, addr, "dash", "--listen", "127.0.0.1:0"), serving(t, addr, "metrics", "--listen", "127.0.0.1:0") + "metrics"}
		for _, url := range pages {
			code, body := fetch(t, url)
			assert.Equal(t, http.StatusServiceUnavailable, code, url)
			assert.Contains(t, body, "connection refused", url)
		}
		// with --auth, the waiting page too is for the credentials only
		authed := serving(t, addr, "dash", "--listen", "127.0.0.1:0", "--auth", "ops:s3cret")
		code, body := fetch(t, authed)
		assert.Equal(t, http.StatusUnauthorized, code)
		assert.NotContains(t, body, addr)
		withAuth := func() int {
			code, _ := requestFor(t, http.MethodGet, authed, "", func(req *http.Request) { req.SetBasicAuth("ops", "s3cret") })
			return code
		}
		assert.Equal(t, http.StatusServiceUnavailable, withAuth())
		late := valkeytest.Start(t, valkeytest.Options{Port: port})
		f := queuetest.Fill(t, late.Client())
		for _, url := range pages {
			require.Eventually(t, func() bool {
				code, _ := fetch(t, url)
				return code == http.StatusOK
			}, 10*time.Second, 50*time.Millisecond, "%s serves once its server answers", url)
		}
		// What each serves then is what Fill made, read when asked: a
		// queue's page and the metrics. (The dashboard's list of queues may
		// be the one its throughput sampler cached when the server first
		// answered, before Fill: a queue made since shows within a minute,
		// docs/OPERATIONS.md.)
		code, body = fetch(t, pages[0]+"queues/emails?state=dead")
		require.Equal(t, http.StatusOK, code)
		assert.Contains(t, body, f.EmailsDead[0].String())
		code, body = fetch(t, pages[1])
		require.Equal(t, http.StatusOK, code)
		assert.Contains(t, body, `emq_queue_jobs{queue="emails",state="dead"} 2`)
		// and once it serves, its pages too
		require.Eventually(t, func() bool { return withAuth() == http.StatusOK }, 10*time.Second, 50*time.Millisecond)
		code, _ = fetch(t, authed)
		assert.Equal(t, http.StatusUnauthorized, code, "the dashboard without the credentials")
	})
	t.Run("a port that accepts and hangs up, as a proxy before its server, is waited for too", func(t *testing.T) {
		addr := fakeHost(t, func(c net.Conn) {
			// the greeting read first: a close with it unread would be a
			// reset, not the end of the stream
			_, _ = c.Read(make([]byte, 512))
			c.Close()
		})
		url := serving(t, addr, "metrics", "--listen", "127.0.0.1:0")
		code, body := fetch(t, url+"metrics")
		assert.Equal(t, http.StatusServiceUnavailable, code)
		assert.Contains(t, body, "EOF")
	})
	t.Run("on loopback, a request for a name that is not loopback is refused (DNS rebinding)", func(t *testing.T) {
		dash := serving(t, s.Addr, "dash", "--listen", "127.0.0.1:0", "--write")
		metrics := serving(t, s.Addr, "metrics", "--listen", "127.0.0.1:0") + "metrics"
		port := func(at string) string {
			u, err := url.Parse(at)
			require.NoError(t, err)
			return u.Port()
		}
		for _, c := range []struct {
			method, url, host string
			want              int
		}{
			{http.MethodGet, dash, "attacker.example:" + port(dash), http.StatusForbidden},
			{http.MethodGet, dash, "attacker.example", http.StatusForbidden},
			{http.MethodPost, dash + "queues/payments/resume", "attacker.example:" + port(dash), http.StatusForbidden},
			{http.MethodGet, metrics, "attacker.example:" + port(metrics), http.StatusForbidden},
			{http.MethodGet, dash, "localhost:" + port(dash), http.StatusOK},
			{http.MethodGet, dash, "LOCALHOST", http.StatusOK},
			{http.MethodGet, dash, "localhost.:" + port(dash), http.StatusOK}, // fully qualified
			{http.MethodGet, dash, "attacker.example.", http.StatusForbidden},
			{http.MethodGet, dash, "[::1]:" + port(dash), http.StatusOK},
			{http.MethodGet, dash, "127.0.0.2", http.StatusOK},
			{http.MethodGet, metrics, "127.0.0.1:" + port(metrics), http.StatusOK},
		} {
			code, body := requestFor(t, c.method, c.url, c.host, nil)
			assert.Equal(t, c.want, code, "%s %s, Host %s: %s", c.method, c.url, c.host, body)
			if c.want == http.StatusForbidden {
				assert.Contains(t, body, "is not a loopback name")
			}
		}
		paused, err := s.Do("HGET", "emq:{payments}:config", "paused").ToString()
		require.NoError(t, err)
		assert.Equal(t, "1", paused, "the refused action did nothing")

		// behind a reverse proxy that passes its Host on, --allow-host names it
		proxied := serving(t, s.Addr, "metrics", "--listen", "127.0.0.1:0", "--allow-host", "dash.example, ops.example") + "metrics"
		for host, want := range map[string]int{"dash.example:443": http.StatusOK, "OPS.example": http.StatusOK, "attacker.example": http.StatusForbidden} {
			code, _ := requestFor(t, http.MethodGet, proxied, host, nil)
			assert.Equal(t, want, code, "Host %s", host)
		}
	})
	t.Run("the refusals in front of the dashboard carry its security headers", func(t *testing.T) {
		dash := serving(t, s.Addr, "dash", "--listen", "127.0.0.1:0", "--auth", "ops:s3cret")
		for host, want := range map[string]int{"attacker.example": http.StatusForbidden, "": http.StatusUnauthorized} {
			req, err := http.NewRequest(http.MethodGet, dash, nil)
			require.NoError(t, err)
			req.Host = host
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			resp.Body.Close()
			assert.Equal(t, want, resp.StatusCode, "Host %q", host)
			assert.Contains(t, resp.Header.Get("Content-Security-Policy"), "frame-ancestors 'none'", "Host %q", host)
			assert.Equal(t, "DENY", resp.Header.Get("X-Frame-Options"), "Host %q", host)
		}
	})
	t.Run("a client that stalls is cut off: a connection left idle, a body never finished", func(t *testing.T) {
		// the idle bound is its own, shorter than the read's, which an
		// unset idle bound would fall back to
		was := connBounds
		t.Cleanup(func() { connBounds = was })
		connBounds.idle, connBounds.read = 200*time.Millisecond, 2*time.Second
		dash, err := url.Parse(serving(t, s.Addr, "dash", "--listen", "127.0.0.1:0", "--write"))
		require.NoError(t, err)
		for _, c := range []struct {
			what, request string
			within        time.Duration
		}{
			{"idle after its answer", "GET / HTTP/1.1\r\nHost: " + dash.Host + "\r\n\r\n", time.Second},
			{"a body never finished", "POST /queues/payments/resume HTTP/1.1\r\nHost: " + dash.Host +
				"\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 100\r\n\r\ncsrf=", 6 * time.Second},
		} {
			conn, err := net.Dial("tcp", dash.Host)
			require.NoError(t, err)
			_, err = io.WriteString(conn, c.request)
			require.NoError(t, err)
			require.NoError(t, conn.SetReadDeadline(time.Now().Add(c.within)))
			_, err = io.ReadAll(conn) // to the server's close, or the deadline's error
			assert.NoError(t, err, "%s: the server closes the connection", c.what)
			conn.Close()
		}
	})
	t.Run("off loopback, --auth decides and any name is served", func(t *testing.T) {
		served, err := url.Parse(serving(t, s.Addr, "dash", "--listen", "0.0.0.0:0", "--auth", "ops:s3cret"))
		require.NoError(t, err)
		code, _ := requestFor(t, http.MethodGet, "http://127.0.0.1:"+served.Port()+"/", "dash.example",
			func(req *http.Request) { req.SetBasicAuth("ops", "s3cret") })
		assert.Equal(t, http.StatusOK, code)
	})
	t.Run("actions off loopback without --auth are refused", func(t *testing.T) {
		r := emq(t, s.Addr, "dash", "--listen", "0.0.0.0:0", "--write")
		assert.Equal(t, exitUsage, r.code)
		assert.Contains(t, r.stderr, "needs --auth")
	})
	t.Run("a malformed --auth or --listen is bad usage", func(t *testing.T) {
		for _, args := range [][]string{{"dash", "--auth", "nopassword", "--listen", "127.0.0.1:0"}, {"dash", "--listen", "nowhere"}} {
			r := emq(t, s.Addr, args...)
			assert.Equal(t, exitUsage, r.code, "%q: %s", args, r.stderr)
		}
	})
	t.Run("actions served through a proxy (--allow-host) need --auth, as off loopback", func(t *testing.T) {
		r := emq(t, s.Addr, "dash", "--write", "--allow-host", "dash.example.com", "--listen", "127.0.0.1:0")
		assert.Equal(t, exitUsage, r.code, r.stderr)
		assert.Contains(t, r.stderr, "--allow-host names a proxy that serves it to others: serving actions through it needs --auth")
	})
}

// TestCLIUnreadableQueue: one queue with a key of another type under its
// layout is a row of ? and a note on stderr (in JSON no counts, only the
// error); every other queue is listed and counted, and the run exits 1, its
// listing incomplete; a command naming that queue fails.
func TestCLIUnreadableQueue(t *testing.T) {
	s := valkeytest.Start(t, valkeytest.Options{})
	queuetest.Fill(t, s.Client())
	require.NoError(t, s.Do("SET", "emq:{wt}:pending", "notazset").Error())
	r := emq(t, s.Addr, "queues")
	require.Equal(t, exitFailed, r.code, r.stderr)
	assert.Contains(t, r.stdout, "\nemails    3        1       1        2     no      -      0          59m54s\n")
	assert.Contains(t, r.stdout, "\nwt        ?        ?       ?        ?     ?       ?      ?          ?\n")
	assert.Contains(t, r.stderr, "emq queues: cannot read wt (its row shows ?): queue wt: ZCARD pending: WRONGTYPE")
	assert.Contains(t, r.stderr, "emq queues: 1 of 4 queues unreadable (their rows show ?)\n")

	r = emq(t, s.Addr, "queues", "--json")
	require.Equal(t, exitFailed, r.code, r.stderr)
	var qs []map[string]any
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &qs))
	require.Len(t, qs, 4)
	assert.Equal(t, 2.0, qs[0]["dead"])
	assert.Equal(t, map[string]any{"queue": "wt", "error": qs[3]["error"]}, qs[3], "no counts that read as 0")
	assert.Contains(t, qs[3]["error"], "WRONGTYPE")

	r = emq(t, s.Addr, "jobs", "wt")
	assert.Equal(t, exitFailed, r.code, "asked for by name, the queue fails the command")
	assert.Contains(t, r.stderr, "WRONGTYPE")

	t.Run("a setting of it is the verb's refusal, exit 4, nothing written", func(t *testing.T) {
		require.NoError(t, s.Do("SET", "emq:{wc}:config", "notahash").Error())
		// EMQ.EVENTS takes the config and the events stream, not pending
		for _, args := range [][]string{{"pause", "wt"}, {"limit", "wt", "5", "1s"}, {"pause", "wc"}, {"limit", "wc", "5", "1s"}, {"events", "wc", "100"}} {
			r := emq(t, s.Addr, args...)
			assert.Equal(t, exitRefused, r.code, "%q: %s", args, r.stderr)
			assert.Equal(t, "emq "+args[0]+": WRONGTYPE Operation against a key holding the wrong kind of value\n", r.stderr, "%q", args)
		}
		kind, err := s.Do("TYPE", "emq:{wt}:config").ToString()
		require.NoError(t, err)
		assert.Equal(t, "none", kind)
		got, err := s.Do("GET", "emq:{wc}:config").ToString()
		require.NoError(t, err)
		assert.Equal(t, "notahash", got)
	})
}

// TestCLIPrimaryDown: on a cluster with a primary that does not answer,
// queues and stats print what the others hold, name the primary on stderr
// and exit 1 — never a complete-looking table and exit 0.
func TestCLIPrimaryDown(t *testing.T) {
	down, seed := emailsPrimary(t, valkeytest.Options{})
	down.Stop()
	for _, c := range []struct{ args, stdout []string }{
		{[]string{"queues"}, []string{"QUEUE "}},
		{[]string{"stats"}, []string{"INFO emq summed over 2 primaries"}},
	} {
		t.Run(c.args[0], func(t *testing.T) {
			r := emq(t, seed.Addr, c.args...)
			assert.Equal(t, exitFailed, r.code)
			assert.Contains(t, r.stderr, "primary "+down.Addr+" did not answer")
			for _, out := range c.stdout {
				assert.Contains(t, r.stdout, out)
			}
			assert.NotContains(t, r.stdout, "emails")
		})
	}
}

// emailsPrimary starts a 3-primary cluster of opts holding the fixture,
// and returns the primary serving the emails queue and another.
func emailsPrimary(t *testing.T, opts valkeytest.Options) (down, seed *valkeytest.Server) {
	t.Helper()
	cl := valkeytest.StartCluster(t, 3, 0, opts)
	queuetest.Fill(t, cl.Client())
	down = cl.Owner(t, cl.Slot(t, "emq:{emails}:pending"))
	for _, p := range cl.Primaries {
		if p != down {
			seed = p
		}
	}
	return down, seed
}

// TestCLIMigratingSlot: a job read or deleted while its queue's slot is
// half moved meets TRYAGAIN — the server's or the verb's — exit 1, with a
// hint to run it again once the slot has moved.
func TestCLIMigratingSlot(t *testing.T) {
	cl := valkeytest.StartCluster(t, 3, 0, valkeytest.Options{})
	f := queuetest.Fill(t, cl.Client())
	slot := cl.Slot(t, "emq:{emails}:pending")
	from := cl.Owner(t, slot)
	var to *valkeytest.Server
	for _, p := range cl.Primaries {
		if p != from {
			to = p
		}
	}
	s := strconv.Itoa(slot)
	require.NoError(t, to.Do("CLUSTER", "SETSLOT", s, "IMPORTING", cl.ID(t, from)).Error())
	require.NoError(t, from.Do("CLUSTER", "SETSLOT", s, "MIGRATING", cl.ID(t, to)).Error())
	row := keys.Job("emails", f.EmailsDead[0].String())
	require.NoError(t, from.Do("MIGRATE", "127.0.0.1", strconv.Itoa(to.Port), "", "0", "5000", "KEYS", row).Error())
	for _, args := range [][]string{
		{"job", "emails", f.EmailsDead[0].String()},
		{"delete", "emails", f.EmailsDead[0].String()}, // the verb's own TRYAGAIN, alike
	} {
		r := emq(t, from.Addr, args...)
		assert.Equal(t, exitFailed, r.code, r.stderr)
		assert.Contains(t, r.stderr, "TRYAGAIN")
		assert.Contains(t, r.stderr, "(the queue's slot is migrating, some of its keys moved: run it again once the slot has moved)")
	}
}

// TestCLIDashFindsARestartedPrimary: a primary the cluster marked failed,
// which the dashboard's client then dropped from its slot map, is read
// again once it is back — a long-running dash never reads a cluster as it
// was.
func TestCLIDashFindsARestartedPrimary(t *testing.T) {
	// partial coverage: the other primaries serve while one is failed
	down, seed := emailsPrimary(t, valkeytest.Options{Config: []string{"appendonly", "yes", "cluster-require-full-coverage", "no"}})
	dash := serving(t, seed.Addr, "dash", "--listen", "127.0.0.1:0")
	page := func() string { _, body := fetch(t, dash); return body }
	require.Contains(t, page(), `href="/queues/emails"`)
	down.Kill()
	// generous: on a loaded machine the client may take longer to learn
	// the node is gone (10 s was once too short, in make compat) — and
	// once the cluster has marked it failed (cluster-node-timeout, 5 s)
	// the page says so instead: a page read that late never said "did not
	// answer" (make compat on Redis 8.0, at load)
	named := func(body string) bool {
		return strings.Contains(body, "primary "+down.Addr+" did not answer") || strings.Contains(body, "primary "+down.Addr+" is down")
	}
	require.Eventually(t, func() bool { return named(page()) }, 30*time.Second, 100*time.Millisecond, "the page names the primary down")
	// the cluster marks it failed after cluster-node-timeout (5 s); a
	// reading of the slot map then (valkey-go's own on a failed command,
	// or emq's every topologyRefresh) drops it — on Valkey; Redis 7.0's
	// map keeps it
	require.Eventually(t, func() bool {
		nodes, err := seed.Do("CLUSTER", "NODES").ToString()
		return err == nil && regexp.MustCompile(`:`+strconv.Itoa(down.Port)+`@\S+ master,fail `).MatchString(nodes)
	}, time.Minute, 100*time.Millisecond, "the cluster marks the primary failed")
	time.Sleep(topologyRefresh + time.Second)
	back, err := valkeytest.Launch(down.Opts)
	require.NoError(t, err)
	t.Cleanup(back.Stop)
	// the cluster takes it back after about two node timeouts, and the
	// client reads the slot map within topologyRefresh of that
	require.Eventually(t, func() bool {
		body := page()
		return strings.Contains(body, `href="/queues/emails"`) && !named(body)
	}, time.Minute, 500*time.Millisecond, "the primary back is read again")
}

// TestCLIWithoutModule: on a server without the module, where the client
// ran the verbs' scripts, the queues read the same; stats has no counters.
func TestCLIWithoutModule(t *testing.T) {
	s := valkeytest.Start(t, valkeytest.Options{NoModule: true})
	queuetest.Fill(t, s.Client())
	r := emq(t, s.Addr, "queues")
	require.Equal(t, exitOK, r.code, r.stderr)
	golden(t, "queues", r.stdout)
	r = emq(t, s.Addr, "stats")
	require.Equal(t, exitOK, r.code, r.stderr)
	assert.Contains(t, r.stdout, "no counters: the module is not loaded")
}

// terminalSafe fails unless out is UTF-8 whose only control character is
// the newline ending each line.
func terminalSafe(t *testing.T, out string) {
	t.Helper()
	assert.True(t, utf8.ValidString(out), "not UTF-8: %q", out)
	for _, r := range out {
		if r != '\n' && !strconv.IsPrint(r) {
			assert.Failf(t, "a control character reaches the terminal", "%U in %q", r, out)
			return
		}
	}
}

// TestCLIEscapesTheData: queue names, job ids and errors — text any
// producer or worker controls — reach the terminal quoted as
// strconv.Quote writes them when they hold a control character or bytes
// that are not UTF-8, so none moves the cursor, clears the screen or
// splits a row; printable UTF-8 is shown as it is; --json keeps the
// exact text.
func TestCLIEscapesTheData(t *testing.T) {
	s := valkeytest.Start(t, valkeytest.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const red, clear, stray = "esc\x1b[31mred", "err\x1b[2Jclear", "JOB\x1b[2J"
	m, err := ids.NewMinter(8)
	require.NoError(t, err)
	q, err := client.New(s.Client()).Queue(red, m, client.Policy{Lease: time.Hour, MaxAttempts: 1})
	require.NoError(t, err)
	id, err := q.Enqueue(ctx, []byte("x"))
	require.NoError(t, err)
	jobs, err := q.Claim(ctx, 1)
	require.NoError(t, err)
	require.Len(t, jobs, 1)
	_, err = jobs[0].Fail(ctx, errors.New(clear))
	require.NoError(t, err)
	require.NoError(t, s.Do("ZADD", "emq:{"+red+"}:dead", "1", stray).Error(), "a member that is no job id")
	for _, name := range []string{"nl\nq", "bad\xffname", "tab\tq", "café ☕"} {
		r := emq(t, s.Addr, "enqueue", name, "x")
		require.Equal(t, exitOK, r.code, r.stderr)
	}

	for _, c := range []struct {
		rule   string
		args   []string
		stdout []string
	}{
		{"queues quotes the names that need it, one row each", []string{"queues"},
			[]string{"\n\"esc\\x1b[31mred\"  0 ", "\n\"nl\\nq\"  ", "\n\"bad\\xffname\"  ", "\n\"tab\\tq\"  ", "\ncafé ☕  "}},
		{"jobs quotes an error and a member that need it", []string{"jobs", red, "--state", "dead"},
			[]string{"  \"err\\x1b[2Jclear\"\n", "  \"JOB\\x1b[2J\"  "}},
		{"job quotes its queue and error", []string{"job", red, id.String()},
			[]string{"queue     \"esc\\x1b[31mred\"\n", "error     \"err\\x1b[2Jclear\"\n"}},
		{"job found in its queue quotes the queue", []string{"job", id.String()}, []string{"queue     \"esc\\x1b[31mred\"\n"}},
		{"pause quotes the queue it names", []string{"pause", red}, []string{"paused \"esc\\x1b[31mred\"\n"}},
		{"resume quotes the queue it names", []string{"resume", red}, []string{"resumed \"esc\\x1b[31mred\"\n"}},
	} {
		t.Run(c.rule, func(t *testing.T) {
			r := emq(t, s.Addr, c.args...)
			require.Equal(t, exitOK, r.code, r.stderr)
			terminalSafe(t, r.stdout)
			terminalSafe(t, r.stderr)
			for _, want := range c.stdout {
				assert.Contains(t, r.stdout, want)
			}
		})
	}
	t.Run("an error naming the data keeps it quoted too", func(t *testing.T) {
		r := emq(t, s.Addr, "job", red, "JOB0000000000000abc")
		require.NotEqual(t, exitOK, r.code)
		terminalSafe(t, r.stderr)
		assert.Contains(t, r.stderr, `esc\x1b[31mred`)
		r = emq(t, s.Addr, "delete", red, "JOB0000000000000abc", "JOB0000000000000abd")
		require.NotEqual(t, exitOK, r.code)
		terminalSafe(t, r.stderr)
	})
	t.Run("a table has one line per queue", func(t *testing.T) {
		r := emq(t, s.Addr, "queues")
		assert.Equal(t, 1+5, strings.Count(r.stdout, "\n"), r.stdout)
	})
	t.Run("--json keeps the exact text", func(t *testing.T) {
		var qs []queueJSON
		require.NoError(t, json.Unmarshal([]byte(emq(t, s.Addr, "queues", "--json").stdout), &qs))
		var names []string
		for _, q := range qs {
			names = append(names, q.Queue)
		}
		assert.Contains(t, names, red)
		assert.Contains(t, names, "nl\nq")
		var rows []jobRowJSON
		require.NoError(t, json.Unmarshal([]byte(emq(t, s.Addr, "jobs", red, "--state", "dead", "--json").stdout), &rows))
		require.Len(t, rows, 2)
		assert.ElementsMatch(t, []string{id.String(), stray}, []string{rows[0].ID, rows[1].ID})
		assert.Contains(t, []string{rows[0].Error, rows[1].Error}, clear)
	})
}

// TestBulkErrorSaysWhatEndedIt: a bulk action that failed nothing but
// was stopped says "stopped:", not a "then:" after nothing.
func TestBulkErrorSaysWhatEndedIt(t *testing.T) {
	s := &session{o: &options{timeout: time.Second}}
	for _, tc := range []struct {
		rule string
		p    inspect.Progress
		stop error
		want string
	}{
		{"stopped, nothing failed", inspect.Progress{Total: 10, Done: 5}, context.DeadlineExceeded,
			"stopped: context deadline exceeded (--timeout 1s bounds the whole action: raise it for a big queue)"},
		{"failures, then stopped", inspect.Progress{Total: 10, Failed: 1, Err: errors.New("EMQNOJOB x")}, context.Canceled,
			"1 failed; the first: EMQNOJOB x; then: context canceled"},
		{"failures only", inspect.Progress{Total: 10, Failed: 2, Err: errors.New("EMQNOJOB x")}, nil,
			"2 failed; the first: EMQNOJOB x"},
	} {
		t.Run(tc.rule, func(t *testing.T) {
			assert.EqualError(t, s.bulkError(tc.p, tc.stop), tc.want)
		})
	}
}

// TestCLIBulkStopped: a bulk action that --timeout stops part way says
// what it did — the count on stdout and, on stderr, what failed and
// "then:" what stopped it; with --json the object with "error" — and
// exits 1. The server holds writes back (CLIENT PAUSE WRITE) while reads
// go on, so each run counts the jobs and reads its first batch, whose 100
// actions are cut off by the timeout and count as failed.
func TestCLIBulkStopped(t *testing.T) {
	s := valkeytest.Start(t, valkeytest.Options{})
	queuetest.Dead(t, s.Client(), "bulk", 300)
	require.NoError(t, s.Do("CLIENT", "PAUSE", "600000", "WRITE").Error())
	t.Cleanup(func() { assert.NoError(t, s.Do("CLIENT", "UNPAUSE").Error()) })
	const cut = "100 failed; the first: context deadline exceeded; then: context deadline exceeded" +
		" (--timeout 2s bounds the whole action: raise it for a big queue)"
	t.Run("revive --all says how far it got", func(t *testing.T) {
		r := emq(t, s.Addr, "revive", "bulk", "--all", "--timeout", "2s")
		assert.Equal(t, exitFailed, r.code, r.stderr)
		assert.Equal(t, "revived 0 of 300 dead jobs of bulk\n", r.stdout)
		assert.Equal(t, "emq revive: "+cut+"\n", r.stderr)
	})
	for _, args := range [][]string{{"revive", "bulk", "--all"}, {"purge", "bulk", "--state", "dead"}} {
		t.Run(args[0]+" --json has the error", func(t *testing.T) {
			r := emq(t, s.Addr, append(args, "--timeout", "2s", "--json")...)
			assert.Equal(t, exitFailed, r.code, r.stderr)
			var out bulkJSON
			require.NoError(t, json.Unmarshal([]byte(r.stdout), &out), "stdout: %q", r.stdout)
			assert.Equal(t, bulkJSON{Queue: "bulk", State: "dead", Total: 300, Failed: 100, Error: cut}, out)
		})
	}
}

// jsonOf runs emq with args and --json against addr, requires it to
// succeed, and decodes what it printed.
func jsonOf[T any](t *testing.T, addr string, args ...string) T {
	t.Helper()
	r := emq(t, addr, append(args, "--json")...)
	require.Equal(t, exitOK, r.code, r.stderr)
	var out T
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &out), r.stdout)
	return out
}

// TestCLILargeValues: emq job reads a payload, a result or an error up to
// inspect.ValueLimit bytes, and emq jobs an error; a longer one is named
// by its size and never read, and --json says so with its size.
func TestCLILargeValues(t *testing.T) {
	s := valkeytest.Start(t, valkeytest.Options{})
	big := queuetest.Large(t, s.Client(), "big", inspect.ValueLimit+1)
	small := queuetest.Large(t, s.Client(), "small", inspect.ValueLimit)
	t.Run("values above the limit are named by their size", func(t *testing.T) {
		r := emq(t, s.Addr, "job", "big", big.String())
		require.Equal(t, exitOK, r.code, r.stderr)
		assert.Equal(t, 2, strings.Count(r.stdout, inspect.Unread(inspect.ValueLimit+1)), "the payload and the result:\n%s", r.stdout)
		assert.Contains(t, r.stdout, "(65537 bytes, not shown: above 64 KiB)")
		assert.NotContains(t, r.stdout, "PPP")
		assert.NotContains(t, r.stdout, "RRR")
	})
	t.Run("values at the limit are shown", func(t *testing.T) {
		r := emq(t, s.Addr, "job", "small", small.String())
		require.Equal(t, exitOK, r.code, r.stderr)
		assert.Contains(t, r.stdout, "PPP")
		assert.Contains(t, r.stdout, "RRR")
		assert.NotContains(t, r.stdout, "not shown")
	})
	t.Run("--json says a value was not read, and its size", func(t *testing.T) {
		r := emq(t, s.Addr, "job", "big", big.String(), "--json")
		require.Equal(t, exitOK, r.code, r.stderr)
		var j jobJSON
		require.NoError(t, json.Unmarshal([]byte(r.stdout), &j))
		size := int64(inspect.ValueLimit + 1)
		assert.True(t, j.PayloadUnread && j.ResultUnread)
		assert.Nil(t, j.Payload)
		assert.Nil(t, j.Result)
		assert.Equal(t, size, j.PayloadBytes)
		assert.Equal(t, &size, j.ResultBytes)
	})
	bigErr := queuetest.LargeError(t, s.Client(), "bigerr", inspect.ValueLimit+1)
	smallErr := queuetest.LargeError(t, s.Client(), "smallerr", inspect.ValueLimit)
	t.Run("an error above the limit is named by its size", func(t *testing.T) {
		unread := inspect.Unread(inspect.ValueLimit + 1)
		r := emq(t, s.Addr, "job", "bigerr", bigErr.String())
		require.Equal(t, exitOK, r.code, r.stderr)
		assert.Contains(t, r.stdout, unread)
		assert.NotContains(t, r.stdout, "EEE")
		r = emq(t, s.Addr, "jobs", "bigerr")
		require.Equal(t, exitOK, r.code, r.stderr)
		assert.Contains(t, r.stdout, unread, "in the listing")
		assert.NotContains(t, r.stdout, "EEE")

		j := jsonOf[jobJSON](t, s.Addr, "job", "bigerr", bigErr.String())
		size := int64(inspect.ValueLimit + 1)
		assert.True(t, j.ErrorUnread)
		assert.Nil(t, j.Error)
		assert.Equal(t, &size, j.ErrorBytes)
		rows := jsonOf[[]jobRowJSON](t, s.Addr, "jobs", "bigerr")
		require.Len(t, rows, 1)
		assert.True(t, rows[0].ErrorUnread)
		assert.Empty(t, rows[0].Error)
		assert.Equal(t, size, rows[0].ErrorBytes)
	})
	t.Run("an error at the limit is read", func(t *testing.T) {
		j := jsonOf[jobJSON](t, s.Addr, "job", "smallerr", smallErr.String())
		assert.False(t, j.ErrorUnread)
		require.NotNil(t, j.Error)
		assert.Len(t, *j.Error, inspect.ValueLimit)
		rows := jsonOf[[]jobRowJSON](t, s.Addr, "jobs", "smallerr")
		require.Len(t, rows, 1)
		assert.False(t, rows[0].ErrorUnread)
		assert.Len(t, rows[0].Error, inspect.ValueLimit)
	})
	t.Run("--json gives a value at the limit whole", func(t *testing.T) {
		r := emq(t, s.Addr, "job", "small", small.String(), "--json")
		require.Equal(t, exitOK, r.code, r.stderr)
		var j jobJSON
		require.NoError(t, json.Unmarshal([]byte(r.stdout), &j))
		size := int64(inspect.ValueLimit)
		assert.False(t, j.PayloadUnread || j.ResultUnread)
		require.NotNil(t, j.Payload)
		require.NotNil(t, j.Result)
		assert.Len(t, *j.Payload, inspect.ValueLimit)
		assert.Len(t, *j.Result, inspect.ValueLimit)
		assert.Equal(t, size, j.PayloadBytes)
		assert.Equal(t, &size, j.ResultBytes)
	})
}
