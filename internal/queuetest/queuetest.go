// Package queuetest fills a real server or cluster with queues whose every
// id, score and field is fixed, for the tests of the operator tools
// (package inspect, the dashboard, cmd/emq): their tables and pages can
// then be compared with golden files. Jobs get to their states through
// the verbs; only the times the server stamped (leases, due times, times
// of death) are then set to fixed values.
package queuetest

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/echomq/emq/client"
	"github.com/echomq/emq/ids"
	"github.com/echomq/emq/inspect"
	"github.com/echomq/emq/keys"
	"github.com/valkey-io/valkey-go"
)

// T0 is when the fixture's first job was minted; Now is the clock the
// tools under test must be given. Expires is when the done job's kept row
// expires: a fixed time the server's real clock will not reach in a test
// run, as the fixture's times are in the past.
var (
	T0      = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	Now     = T0.Add(time.Hour)
	Expires = time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC)
)

// EmailsPriority is the priority of the fixture's first pending email.
const EmailsPriority = 2

// InvoicePayload is the payload of the fixture's dead invoice.
const InvoicePayload = "invoice 2025-12 for ACME Corp, 3 lines, rendered as PDF and mailed to billing@acme.example"

// Fixture names what Fill made.
type Fixture struct {
	// Emails holds 3 pending jobs, 1 active, 1 delayed, 2 dead ones and
	// the row of 1 done. The first pending job was admitted at priority
	// EmailsPriority, the others at 0: it is the oldest but the last in
	// pending's order, and the head of pending is the second.
	EmailsPending     []ids.ID
	EmailsActive      ids.ID
	EmailsDelayed     ids.ID
	EmailsDead        []ids.ID // the one that died last first
	EmailsDone        ids.ID   // acked with a result, its row kept until Expires
	PaymentsPending   []ids.ID // payments is paused and limited to 10 jobs a second
	InvoicesDead      ids.ID
	AuditStream       string // a topic's stream: not a queue
	DeadError         string
	InvoicesDeadError string
}

// id is the fixture's k-th job id: minted k seconds after T0.
func id(k int) ids.ID {
	j, _ := ids.New(ids.Job, uint64(T0.Add(time.Duration(k)*time.Second).UnixMilli()-ids.EpochMs), 7, 0)
	return j
}

// Fill makes the fixture's queues on the server or cluster vk serves.
// Every call takes its ids from the same list: fill an empty server.
func Fill(t testing.TB, vk valkey.Client) Fixture {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := client.New(vk)
	m := minter(t, 7)
	f := Fixture{
		EmailsDead: []ids.ID{id(2), id(1)}, EmailsDelayed: id(3), EmailsActive: id(4),
		EmailsPending: []ids.ID{id(5), id(6), id(7)}, PaymentsPending: []ids.ID{id(8), id(9)},
		InvoicesDead: id(11), EmailsDone: id(12), AuditStream: keys.Stream("audit", "events"),
		DeadError: "550 mailbox unavailable", InvoicesDeadError: "render: template missing",
	}
	once := handle(t, c, "emails", m, client.Policy{MaxAttempts: 1})
	thrice := handle(t, c, "emails", m, client.Policy{MaxAttempts: 3})

	enqueue(t, ctx, c, "emails", id(1), "to: ann@example.com")
	enqueue(t, ctx, c, "emails", id(2), "to: bob@example.com")
	for _, j := range claim(t, ctx, once, 2) {
		fail(t, ctx, j, f.DeadError, 0, client.StateDead)
	}
	enqueue(t, ctx, c, "emails", id(3), "to: cid@example.com")
	fail(t, ctx, claim(t, ctx, thrice, 1)[0], "421 try again later", time.Hour, client.StateDelayed)
	enqueue(t, ctx, c, "emails", id(4), "to: dan@example.com")
	claim(t, ctx, thrice, 1)
	enqueue(t, ctx, c, "emails", f.EmailsDone, "to: eve@example.com")
	kept := handle(t, c, "emails", m, client.Policy{Keep: 24 * time.Hour})
	if err := claim(t, ctx, kept, 1)[0].AckResult(ctx, []byte("250 OK queued as 7F3A2")); err != nil {
		t.Fatalf("queuetest: ack %s: %v", f.EmailsDone, err)
	}
	for i, j := range f.EmailsPending {
		payload := "to: user" + string(rune('1'+i)) + "@example.com"
		var opts []client.EnqueueOption
		if i == 0 {
			opts = append(opts, client.Priority(EmailsPriority))
		}
		if ok, err := thrice.Admit(ctx, j, []byte(payload), opts...); err != nil || !ok {
			t.Fatalf("queuetest: admit %s: %v (admitted %t)", j, err, ok)
		}
	}

	for _, j := range f.PaymentsPending {
		enqueue(t, ctx, c, "payments", j, `{"order":42}`)
	}
	payments := handle(t, c, "payments", m, client.Policy{MaxAttempts: 1})
	if paused, err := payments.Pause(ctx); err != nil || !paused {
		t.Fatalf("queuetest: pause payments: %v (paused %t)", err, paused)
	}
	if err := payments.Limit(ctx, 10, time.Second); err != nil {
		t.Fatalf("queuetest: limit payments: %v", err)
	}

	enqueue(t, ctx, c, "invoices", f.InvoicesDead, InvoicePayload)
	fail(t, ctx, claim(t, ctx, handle(t, c, "invoices", m, client.Policy{MaxAttempts: 1}), 1)[0], f.InvoicesDeadError, 0, client.StateDead)

	if _, err := c.Append(ctx, "audit", "events", []client.Entry{
		{ID: m.Mint(ids.Evt), Fields: []client.Field{{Name: "kind", Value: "created"}}}}); err != nil {
		t.Fatal(err)
	}

	// the server's clock stamped these: fixed times instead
	score(t, ctx, vk, "emails", inspect.Dead, id(1), T0.Add(10*time.Minute))
	score(t, ctx, vk, "emails", inspect.Dead, id(2), T0.Add(20*time.Minute))
	score(t, ctx, vk, "emails", inspect.Delayed, id(3), Now.Add(30*time.Minute))
	score(t, ctx, vk, "emails", inspect.Active, id(4), Now.Add(5*time.Minute))
	score(t, ctx, vk, "invoices", inspect.Dead, id(11), T0.Add(30*time.Minute))
	do(t, ctx, vk, vk.B().Pexpireat().Key(keys.Job("emails", f.EmailsDone.String())).
		MillisecondsTimestamp(Expires.UnixMilli()).Build())
	return f
}

// handle is queue name's handle under p, its lease an hour: the fixture's
// active job stays active through a test.
func handle(t testing.TB, c *client.Client, name string, m *ids.Minter, p client.Policy) *client.Queue {
	t.Helper()
	p.Lease = time.Hour
	q, err := c.Queue(name, m, p)
	if err != nil {
		t.Fatal(err)
	}
	return q
}

// minter is the fixture's minter of node: each maker mints on a node of
// its own, so no two mint the same id.
func minter(t testing.TB, node uint32) *ids.Minter {
	t.Helper()
	m, err := ids.NewMinter(node)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func enqueue(t testing.TB, ctx context.Context, c *client.Client, queue string, j ids.ID, payload string) {
	t.Helper()
	if ok, err := c.Enqueue(ctx, queue, j, []byte(payload)); err != nil || !ok {
		t.Fatalf("queuetest: enqueue %s to %s: %v (admitted %t)", j, queue, err, ok)
	}
}

func claim(t testing.TB, ctx context.Context, q *client.Queue, n int) []*client.Job {
	t.Helper()
	jobs, err := q.Claim(ctx, n)
	if err != nil || len(jobs) != n {
		t.Fatalf("queuetest: claim %d of %s: %v (got %d)", n, q.Name(), err, len(jobs))
	}
	return jobs
}

func fail(t testing.TB, ctx context.Context, j *client.Job, cause string, backoff time.Duration, want client.State) {
	t.Helper()
	if got, err := j.FailAfter(ctx, errors.New(cause), backoff); err != nil || got != want {
		t.Fatalf("queuetest: fail %s: %v (went %s, want %s)", j.ID, err, got, want)
	}
}

func do(t testing.TB, ctx context.Context, vk valkey.Client, cmd valkey.Completed) {
	t.Helper()
	if err := vk.Do(ctx, cmd).Error(); err != nil {
		t.Fatalf("queuetest: %v", err)
	}
}

// score sets job j's score in queue's set st to time at, in Unix ms.
func score(t testing.TB, ctx context.Context, vk valkey.Client, queue string, st inspect.State, j ids.ID, at time.Time) {
	t.Helper()
	do(t, ctx, vk, vk.B().Zadd().Key(keys.Set(queue, string(st))).Xx().ScoreMember().
		ScoreMember(float64(at.UnixMilli()), j.String()).Build())
}

// Dead makes n dead jobs in queue through the verbs: admitted in one
// pipeline, then claimed and failed under a policy of one attempt.
func Dead(t testing.TB, vk valkey.Client, queue string, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	m := minter(t, 8)
	q := handle(t, client.New(vk), queue, m, client.Policy{MaxAttempts: 1})
	payloads := make([][]byte, n)
	for i := range payloads {
		payloads[i] = []byte("doomed")
	}
	if _, err := q.EnqueueMany(ctx, payloads); err != nil {
		t.Fatal(err)
	}
	for left := n; left > 0; {
		jobs := claim(t, ctx, q, min(left, 1000))
		for _, j := range jobs {
			fail(t, ctx, j, "boom", 0, client.StateDead)
		}
		left -= len(jobs)
	}
}

// LargeError makes one dead job in queue, a new queue, whose error is
// size bytes ("E…"): enqueued, claimed and failed with its one attempt.
// It returns the job's id.
func LargeError(t testing.TB, vk valkey.Client, queue string, size int) ids.ID {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	q := handle(t, client.New(vk), queue, minter(t, 9), client.Policy{MaxAttempts: 1})
	id, err := q.Enqueue(ctx, []byte("payload"))
	if err != nil {
		t.Fatal(err)
	}
	fail(t, ctx, claim(t, ctx, q, 1)[0], strings.Repeat("E", size), 0, client.StateDead)
	return id
}

// Large makes one job in queue, a new queue, whose payload and result
// are size bytes each ("P…" and "R…"): enqueued, claimed and acked with
// the result, its row kept an hour. It returns the job's id.
func Large(t testing.TB, vk valkey.Client, queue string, size int) ids.ID {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	m := minter(t, 9)
	q := handle(t, client.New(vk), queue, m, client.Policy{Keep: time.Hour})
	id, err := q.Enqueue(ctx, bytes.Repeat([]byte("P"), size))
	if err != nil {
		t.Fatal(err)
	}
	if err := claim(t, ctx, q, 1)[0].AckResult(ctx, bytes.Repeat([]byte("R"), size)); err != nil {
		t.Fatalf("queuetest: ack %s: %v", id, err)
	}
	return id
}
