package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/echomq/emq/client"
	emqerrors "github.com/echomq/emq/errors"
	"github.com/echomq/emq/inspect"
	"github.com/echomq/emq/internal/readable"
)

var queuesCmd = &command{
	name: "queues", summary: "every queue found: jobs per state, paused, rate limit, schedules, oldest pending job",
	detail: `Finds queues with SCAN over their key layouts on every primary (bounded
COUNT per call) and counts each state with ZCARD. OLDEST PENDING is the age
of the job at the head of pending, the next to be claimed: the oldest
pending job while the queue uses one priority.`,
	examples: []string{"emq queues", "emq queues --addr 10.0.0.5:7000   # any node of a cluster", "emq queues --json | jq '.[] | select(.dead > 0) | .queue'"},
	maxArgs:  0,
	run:      runQueues,
}

// queueJSON is a queue's line for scripts.
type queueJSON struct {
	Queue         string `json:"queue"`
	Pending       int64  `json:"pending"`
	Active        int64  `json:"active"`
	Delayed       int64  `json:"delayed"`
	Dead          int64  `json:"dead"`
	Paused        bool   `json:"paused"`
	LimitMax      int64  `json:"limit_max"`
	LimitWindowMs int64  `json:"limit_window_ms"`
	Events        int64  `json:"events"`
	Schedules     int64  `json:"schedules"`
	DelayedDue    int64  `json:"delayed_due"`    // of delayed, those due no claim has moved on yet
	ActiveExpired int64  `json:"active_expired"` // of active, those whose lease passed, not yet requeued
	OldestPending string `json:"oldest_pending,omitempty"`
	OldestAgeMs   int64  `json:"oldest_pending_age_ms"`
}

// unreadableJSON is a queue of emq queues --json the server refused to
// read: no counts, which would read as 0, only why.
type unreadableJSON struct {
	Queue string `json:"queue"`
	Error string `json:"error"`
}

func runQueues(ctx context.Context, s *session, _ []string) error {
	in, err := s.inspector()
	if err != nil {
		return err
	}
	sums, lost := in.Overview(ctx)
	if lost != nil && !inspect.Partial(lost) {
		return lost
	}
	if err := printQueues(s, sums); err != nil {
		return err
	}
	if lost != nil {
		return lost // the queues of a primary that did not answer are missing: exit 1
	}
	unread := 0
	for _, q := range sums {
		if q.Err != nil {
			unread++
		}
	}
	if unread > 0 { // the listing is incomplete, as with a primary missing
		return fmt.Errorf("%d of %d queues unreadable (their rows show ?)", unread, len(sums))
	}
	return nil
}

// printQueues writes the summaries as a table, or as JSON.
func printQueues(s *session, sums []inspect.Summary) error {
	if s.o.json {
		out := make([]any, len(sums))
		for i, q := range sums {
			if q.Err != nil {
				out[i] = unreadableJSON{Queue: q.Queue, Error: q.Err.Error()}
				continue
			}
			out[i] = queueJSON{Queue: q.Queue, Pending: q.Counts[inspect.Pending], Active: q.Counts[inspect.Active],
				Delayed: q.Counts[inspect.Delayed], Dead: q.Counts[inspect.Dead], Paused: q.Paused,
				LimitMax: q.Limit.Max, LimitWindowMs: q.Limit.Window.Milliseconds(), Events: q.Events, Schedules: q.Repeats,
				DelayedDue: q.Due, ActiveExpired: q.Expired, OldestPending: q.Head, OldestAgeMs: q.HeadAge.Milliseconds()}
		}
		return writeJSON(s.e.stdout, out)
	}
	t := newTable(s.e.stdout, "QUEUE", "PENDING", "ACTIVE", "DELAYED", "DEAD", "PAUSED", "LIMIT", "SCHEDULES", "OLDEST PENDING")
	for _, q := range sums {
		if q.Err != nil {
			t.row(readable.Printable(q.Queue), "?", "?", "?", "?", "?", "?", "?", "?")
			fmt.Fprintf(s.e.stderr, "emq queues: cannot read %s (its row shows ?): %s\n", readable.Printable(q.Queue), readable.Printable(q.Err.Error()))
			continue
		}
		oldest := "-"
		if q.Head != "" {
			oldest = readable.Duration(q.HeadAge)
		}
		t.row(readable.Printable(q.Queue), count(q.Counts[inspect.Pending]), count(q.Counts[inspect.Active]), count(q.Counts[inspect.Delayed]),
			count(q.Counts[inspect.Dead]), yesNo(q.Paused), q.Limit.String(), count(q.Repeats), oldest)
	}
	if len(sums) == 0 {
		fmt.Fprintln(s.e.stderr, "no queues found")
	}
	return t.flush()
}

func count(n int64) string { return strconv.FormatInt(n, 10) }

var jobsCmd = &command{
	name: "jobs", args: "<queue>", summary: "the jobs of a queue, a page per state",
	detail: `Lists pending jobs in claim order, active ones by lease deadline, delayed
ones by due time and dead ones newest first. WHEN is the lease's end, the
due time or the time of death. Without --state every state is listed, up to
--limit jobs each.`,
	examples: []string{"emq jobs emails --state dead", "emq jobs emails --state pending --limit 100 --offset 100",
		"emq jobs emails --state dead --json | jq -r '.[].id'"},
	minArgs: 1, maxArgs: 1,
	flags: func(fs *flag.FlagSet, o *options) {
		stateFlag(fs, o, "default: every state")
		fs.IntVar(&o.limit, "limit", 20, fmt.Sprintf("at most this many jobs per state (1 … %d)", inspect.MaxPage))
		fs.IntVar(&o.offset, "offset", 0, "skip this many jobs of each state")
	},
	run: runJobs,
}

// jobRowJSON is a job's line for scripts.
type jobRowJSON struct {
	ID       string `json:"id"`
	State    string `json:"state"`
	Score    int64  `json:"score"`
	AtMs     int64  `json:"at_ms,omitempty"`
	Attempts int64  `json:"attempts"`
	Priority int64  `json:"priority"`
	Error    string `json:"error,omitempty"`
	// ErrorUnread is an error above inspect.ValueLimit: error is not
	// given, error_bytes is.
	ErrorUnread  bool  `json:"error_unread,omitempty"`
	ErrorBytes   int64 `json:"error_bytes,omitempty"`
	PayloadBytes int64 `json:"payload_bytes"`
	AgeMs        int64 `json:"age_ms"`
	Dangling     bool  `json:"dangling,omitempty"`
	// NotJobID marks a dangling member that is no JOB id: no verb removes
	// it (ZREM).
	NotJobID bool `json:"not_job_id,omitempty"`
	// RowNotHash marks a dangling member whose row is a key of another
	// type, written by hand: DEL it.
	RowNotHash bool `json:"row_not_hash,omitempty"`
}

func runJobs(ctx context.Context, s *session, args []string) error {
	st, err := parseState(s.o.state, anyState)
	if err != nil {
		return err
	}
	if s.o.limit < 1 || s.o.limit > inspect.MaxPage || s.o.offset < 0 {
		return usageError("--limit is 1 … %d and --offset ≥ 0", inspect.MaxPage)
	}
	if _, err := s.queue(args[0]); err != nil { // a name no queue can have is refused as by the others
		return err
	}
	in, err := s.inspector()
	if err != nil {
		return err
	}
	states := inspect.States
	if st != "" {
		states = []inspect.State{st}
	}
	var rows []inspect.JobRow
	for _, st := range states {
		page, total, err := in.Jobs(ctx, args[0], st, s.o.offset, s.o.limit)
		if err != nil {
			return err
		}
		rows = append(rows, page...)
		switch shown := s.o.offset + len(page); {
		case len(page) == 0 && total > 0:
			fmt.Fprintf(s.e.stderr, "%s: %d in all, each before --offset %d\n", st, total, s.o.offset)
		case int64(shown) < total:
			fmt.Fprintf(s.e.stderr, "%s: %d of %d shown; --offset %d for more\n", st, len(page), total, shown)
		}
	}
	note, err := s.noteNew(ctx, "jobs", args[0], "", len(rows) == 0)
	if err != nil {
		return err
	}
	note()
	now := in.Now()
	if s.o.json {
		out := make([]jobRowJSON, len(rows))
		for i, r := range rows {
			out[i] = jobRowJSON{ID: r.ID, State: string(r.State), Score: r.Score, Attempts: r.Attempts, Priority: r.Priority,
				Error: r.Error, ErrorUnread: r.ErrorUnread, ErrorBytes: r.ErrorSize, PayloadBytes: r.PayloadSize, AgeMs: r.Age.Milliseconds(), Dangling: !r.Row,
				NotJobID: !r.IsJob(), RowNotHash: r.NotHash}
			if at := r.At(); !at.IsZero() {
				out[i].AtMs = at.UnixMilli()
			}
		}
		return writeJSON(s.e.stdout, out)
	}
	t := newTable(s.e.stdout, "STATE", "ID", "ATTEMPTS", "PRIORITY", "AGE", "WHEN", "PAYLOAD", "ERROR")
	for _, r := range rows {
		when := "-" // the set's time, a dangling entry's too
		if at := r.At(); !at.IsZero() {
			when = readable.Relative(at, now)
		}
		if !r.Row {
			t.row(string(r.State), readable.Printable(r.ID), "-", "-", readable.Duration(r.Age), when, "-", danglingNote(r))
			continue
		}
		t.row(string(r.State), readable.Printable(r.ID), count(r.Attempts), count(r.Priority), readable.Duration(r.Age), when,
			count(r.PayloadSize)+"B", dash(readable.Printable(r.ErrorText(60))))
	}
	return t.flush()
}

var jobCmd = &command{
	name: "job", args: "[<queue>] <id>", summary: "one job: state, attempts, error, result, payload, times",
	detail: `Reads the job as Queue.Job does: its row, the time its set records and a
kept row's expiry, in one MULTI/EXEC. Without a queue, the job is searched
for in every queue found (one EXISTS of its row per queue).`,
	examples: []string{"emq job emails JOB0018f2a4c1e00001", "emq job JOB0018f2a4c1e00001   # in whichever queue holds it",
		"emq job emails JOB0018f2a4c1e00001 --json | jq -r .payload"},
	minArgs: 1, maxArgs: 2,
	run: runJob,
}

// find is the one queue holding a row of job id.
func find(ctx context.Context, in *inspect.Inspector, id string) (string, error) {
	found, unreadable, err := in.Find(ctx, id)
	switch {
	case err != nil:
		return "", err
	case len(found) == 0 && len(unreadable) > 0:
		return "", &exitError{code: exitRefused, err: fmt.Errorf("no queue you may read holds a row of %s; NOPERM for %s, which may: name the queue (emq job <queue> %s)",
			id, readable.Names(unreadable), id)}
	case len(found) == 0:
		return "", &exitError{code: exitNotFound, err: fmt.Errorf("no queue holds a row of %s", id)}
	case len(found) > 1:
		return "", usageError("%s has a row in several queues (%s): name one", id, readable.Names(found))
	}
	return found[0], nil
}

// jobJSON is a job for scripts; a payload or result that is not UTF-8
// comes as base64 instead. The times are Unix ms, each absent unless the
// job has it.
type jobJSON struct {
	Queue      string  `json:"queue"`
	ID         string  `json:"id"`
	State      string  `json:"state"`
	Attempts   int64   `json:"attempts"`
	Revived    int64   `json:"revived"`
	Priority   int     `json:"priority"`
	Error      *string `json:"error,omitempty"`
	ErrorBytes *int64  `json:"error_bytes,omitempty"` // absent when there is no error
	// ErrorUnread is an error above inspect.ValueLimit: error is not
	// given.
	ErrorUnread   bool    `json:"error_unread,omitempty"`
	Payload       *string `json:"payload,omitempty"`
	PayloadBase64 []byte  `json:"payload_base64,omitempty"`
	PayloadBytes  int64   `json:"payload_bytes"`
	// PayloadUnread is a payload above inspect.ValueLimit: neither
	// payload nor payload_base64 is given.
	PayloadUnread bool    `json:"payload_unread,omitempty"`
	Result        *string `json:"result,omitempty"`
	ResultBase64  []byte  `json:"result_base64,omitempty"`
	ResultBytes   *int64  `json:"result_bytes,omitempty"` // absent when there is no result
	// ResultUnread is a result above inspect.ValueLimit, likewise.
	ResultUnread bool   `json:"result_unread,omitempty"`
	Repeat       string `json:"repeat,omitempty"`
	MintedMs     int64  `json:"minted_ms"`
	LeaseEndsMs  int64  `json:"lease_ends_ms,omitempty"`
	DueMs        int64  `json:"due_ms,omitempty"`
	DiedMs       int64  `json:"died_ms,omitempty"`
	ExpiresMs    int64  `json:"expires_ms,omitempty"`
}

// text sets one of a text field and its base64 twin.
func text(b []byte, s **string, b64 *[]byte) {
	if utf8.Valid(b) {
		t := string(b)
		*s = &t
		return
	}
	*b64 = b
}

// unixMs is t in Unix ms, 0 for the zero time.
func unixMs(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

// moment is one of a job's times, named.
type moment struct {
	name string
	at   time.Time
}

// moments are the times job has, in the order a table shows them.
func moments(j *client.JobInfo) []moment {
	var out []moment
	for _, m := range []moment{{"lease ends", j.Deadline}, {"due", j.Due}, {"died", j.Died}, {"expires", j.Expires}} {
		if !m.at.IsZero() {
			out = append(out, m)
		}
	}
	return out
}

func runJob(ctx context.Context, s *session, args []string) error {
	arg := args[len(args)-1]
	id, err := parseJobID(arg)
	if err != nil {
		return err
	}
	in, err := s.inspector()
	if err != nil {
		return err
	}
	queue := ""
	if len(args) == 2 {
		queue = args[0]
	} else if queue, err = find(ctx, in, arg); err != nil {
		return err
	}
	q, err := s.queue(queue)
	if err != nil {
		return err
	}
	j, err := q.JobUpTo(ctx, id, inspect.ValueLimit)
	if errors.Is(err, emqerrors.NoJob) {
		return fmt.Errorf("queue %s holds no job %s (an acknowledged job's row is gone unless kept): %w", queue, id, err)
	}
	if err != nil {
		return err
	}
	minted := time.UnixMilli(int64(id.UnixMs()))
	if s.o.json {
		return writeJSON(s.e.stdout, jobOut(queue, j, minted))
	}
	now := in.Now()
	t := newTable(s.e.stdout, "queue", readable.Printable(queue))
	t.row("id", id.String())
	state := readable.Printable(string(j.State))
	if j.State == client.StateDone {
		state += " (kept after its ack)"
	}
	t.row("state", state)
	for _, m := range moments(j) {
		t.row(m.name, readable.Time(m.at)+" ("+readable.Relative(m.at, now)+")")
	}
	t.row("minted", readable.Time(minted)+" ("+readable.Relative(minted, now)+")")
	attempts := count(j.Attempts)
	if j.Revived > 0 {
		attempts += fmt.Sprintf(" (%d counted against its budget)", j.Attempts-j.Revived)
	}
	t.row("attempts", attempts)
	t.row("priority", strconv.Itoa(j.Priority))
	errText := dash(readable.Printable(j.Error))
	if j.ErrorUnread {
		errText = inspect.Unread(j.ErrorSize)
	}
	t.row("error", errText)
	if j.Repeat != "" {
		t.row("schedule", readable.Printable(j.Repeat))
	}
	payload := preview(j.Payload, 200)
	if j.PayloadUnread {
		payload = inspect.Unread(j.PayloadSize)
	}
	t.row("payload", payload)
	result := "-"
	if j.ResultUnread {
		result = inspect.Unread(j.ResultSize)
	} else if j.Result != nil {
		result = preview(j.Result, 200)
	}
	t.row("result", result)
	return t.flush()
}

// jobOut is job j of queue for scripts.
func jobOut(queue string, j *client.JobInfo, minted time.Time) jobJSON {
	out := jobJSON{Queue: queue, ID: j.ID.String(), State: string(j.State), Attempts: j.Attempts, Revived: j.Revived,
		Priority: j.Priority, Repeat: j.Repeat, MintedMs: minted.UnixMilli(),
		PayloadBytes: j.PayloadSize, PayloadUnread: j.PayloadUnread, ResultUnread: j.ResultUnread, ErrorUnread: j.ErrorUnread,
		LeaseEndsMs: unixMs(j.Deadline), DueMs: unixMs(j.Due), DiedMs: unixMs(j.Died), ExpiresMs: unixMs(j.Expires)}
	if j.HasError {
		out.ErrorBytes = &j.ErrorSize
	}
	if j.HasError && !j.ErrorUnread {
		out.Error = &j.Error
	}
	if !j.PayloadUnread {
		text(j.Payload, &out.Payload, &out.PayloadBase64)
	}
	if j.Result != nil {
		text(j.Result, &out.Result, &out.ResultBase64)
	}
	if j.Result != nil || j.ResultUnread {
		out.ResultBytes = &j.ResultSize
	}
	return out
}

// danglingNote says what takes a dangling entry — a set member whose row
// is gone, or that is no JOB id — out of its set: a claim's sweep when it
// reaches the member, except in the dead set, which no claim sweeps;
// there EMQ.REMOVE (emq delete, emq purge) drops a JOB id, and nothing but
// a ZREM one that is not.
func danglingNote(r inspect.JobRow) string {
	why, dead := "no row", "emq delete drops it"
	switch {
	case !r.IsJob():
		why, dead = "not a job id", "no verb acts on it; ZREM it by hand"
	case r.NotHash:
		why, dead = "its row is not a hash", "DEL the row by hand, then emq delete drops it"
	}
	if r.State == inspect.Dead {
		return "(" + why + ": " + dead + ")"
	}
	return "(" + why + ": a claim reaching it drops it)"
}
