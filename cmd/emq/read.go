package main

import (
	"context"
	"flag"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/echomq/emq/internal/readable"

	"github.com/echomq/emq/inspect"
)

var queuesCmd = &command{
	name: "queues", summary: "every queue found: jobs per state, paused, rate limit, oldest pending job",
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
	OldestPending string `json:"oldest_pending,omitempty"`
	OldestAgeMs   int64  `json:"oldest_pending_age_ms"`
}

func runQueues(ctx context.Context, s *session, _ []string) error {
	in, err := s.inspector()
	if err != nil {
		return err
	}
	sums, err := in.Overview(ctx)
	if err != nil {
		return err
	}
	if s.o.json {
		out := make([]queueJSON, len(sums))
		for i, q := range sums {
			out[i] = queueJSON{Queue: q.Queue, Pending: q.Counts[inspect.Pending], Active: q.Counts[inspect.Active],
				Delayed: q.Counts[inspect.Delayed], Dead: q.Counts[inspect.Dead], Paused: q.Paused,
				LimitMax: q.Limit.Max, LimitWindowMs: q.Limit.Window.Milliseconds(),
				OldestPending: q.Head, OldestAgeMs: q.HeadAge.Milliseconds()}
		}
		return writeJSON(s.e.stdout, out)
	}
	t := newTable(s.e.stdout, "QUEUE", "PENDING", "ACTIVE", "DELAYED", "DEAD", "PAUSED", "LIMIT", "OLDEST PENDING")
	for _, q := range sums {
		oldest := "-"
		if q.Head != "" {
			oldest = readable.Duration(q.HeadAge)
		}
		t.row(q.Queue, count(q.Counts[inspect.Pending]), count(q.Counts[inspect.Active]), count(q.Counts[inspect.Delayed]),
			count(q.Counts[inspect.Dead]), yesNo(q.Paused), q.Limit.String(), oldest)
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
	ID           string `json:"id"`
	State        string `json:"state"`
	Score        int64  `json:"score"`
	AtMs         int64  `json:"at_ms,omitempty"`
	Attempts     int64  `json:"attempts"`
	Priority     int64  `json:"priority"`
	Error        string `json:"error,omitempty"`
	PayloadBytes int64  `json:"payload_bytes"`
	AgeMs        int64  `json:"age_ms"`
	Dangling     bool   `json:"dangling,omitempty"`
}

func runJobs(ctx context.Context, s *session, args []string) error {
	st, err := parseState(s.o.state)
	if err != nil {
		return err
	}
	if s.o.limit < 1 || s.o.limit > inspect.MaxPage || s.o.offset < 0 {
		return usageError("--limit is 1 … %d and --offset ≥ 0", inspect.MaxPage)
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
		if shown := s.o.offset + len(page); int64(shown) < total {
			fmt.Fprintf(s.e.stderr, "%s: %d of %d shown; --offset %d for more\n", st, len(page), total, shown)
		}
	}
	now := in.Now()
	if s.o.json {
		out := make([]jobRowJSON, len(rows))
		for i, r := range rows {
			out[i] = jobRowJSON{ID: r.ID, State: string(r.State), Score: r.Score, Attempts: r.Attempts, Priority: r.Priority,
				Error: r.Error, PayloadBytes: r.PayloadSize, AgeMs: r.Age.Milliseconds(), Dangling: !r.Row}
			if at := r.At(); !at.IsZero() {
				out[i].AtMs = at.UnixMilli()
			}
		}
		return writeJSON(s.e.stdout, out)
	}
	t := newTable(s.e.stdout, "STATE", "ID", "ATTEMPTS", "PRIORITY", "AGE", "WHEN", "PAYLOAD", "ERROR")
	for _, r := range rows {
		if !r.Row {
			t.row(string(r.State), r.ID, "-", "-", readable.Duration(r.Age), "-", "-", "(no row: dropped at the next claim)")
			continue
		}
		when := "-"
		if at := r.At(); !at.IsZero() {
			when = readable.Relative(at, now)
		}
		t.row(string(r.State), r.ID, count(r.Attempts), count(r.Priority), readable.Duration(r.Age), when,
			count(r.PayloadSize)+"B", dash(readable.Clip(r.Error, 60)))
	}
	return t.flush()
}

var jobCmd = &command{
	name: "job", args: "[<queue>] <id>", summary: "one job: state, attempts, error, result, payload, times",
	detail: `Without a queue, the job is searched for in every queue found (one EXISTS
of its row per queue).`,
	examples: []string{"emq job emails JOB0018f2a4c1e00001", "emq job JOB0018f2a4c1e00001   # in whichever queue holds it",
		"emq job emails JOB0018f2a4c1e00001 --json | jq -r .payload"},
	minArgs: 1, maxArgs: 2,
	run: runJob,
}

// find is the one queue holding a row of job id.
func find(ctx context.Context, in *inspect.Inspector, id string) (string, error) {
	found, err := in.Find(ctx, id)
	switch {
	case err != nil:
		return "", err
	case len(found) == 0:
		return "", fmt.Errorf("%w: no queue holds a row of %s", inspect.ErrNoJob, id)
	case len(found) > 1:
		return "", usageError("%s has a row in several queues (%s): name one", id, strings.Join(found, ", "))
	}
	return found[0], nil
}

// jobJSON is a job for scripts; a payload or result that is not UTF-8
// comes as base64 instead.
type jobJSON struct {
	Queue         string            `json:"queue"`
	ID            string            `json:"id"`
	State         string            `json:"state"`
	Set           string            `json:"set,omitempty"`
	Score         int64             `json:"score,omitempty"`
	AtMs          int64             `json:"at_ms,omitempty"`
	Attempts      int64             `json:"attempts"`
	Revived       int64             `json:"revived"`
	Priority      int64             `json:"priority"`
	Error         string            `json:"error,omitempty"`
	Payload       *string           `json:"payload,omitempty"`
	PayloadBase64 []byte            `json:"payload_base64,omitempty"`
	Result        *string           `json:"result,omitempty"`
	ResultBase64  []byte            `json:"result_base64,omitempty"`
	Repeat        string            `json:"repeat,omitempty"`
	MintedMs      int64             `json:"minted_ms,omitempty"`
	Fields        map[string]string `json:"-"`
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

func runJob(ctx context.Context, s *session, args []string) error {
	id := args[len(args)-1]
	if _, err := parseJobID(id); err != nil {
		return err
	}
	in, err := s.inspector()
	if err != nil {
		return err
	}
	queue := ""
	if len(args) == 2 {
		queue = args[0]
	} else if queue, err = find(ctx, in, id); err != nil {
		return err
	}
	j, err := in.Job(ctx, queue, id)
	if err != nil {
		return err
	}
	if s.o.json {
		out := jobJSON{Queue: j.Queue, ID: j.ID, State: j.State, Set: string(j.Set), Score: j.Score,
			Attempts: j.Attempts, Revived: j.Revived, Priority: j.Priority, Error: j.Error, Repeat: j.Repeat}
		if at := j.At(); !at.IsZero() {
			out.AtMs = at.UnixMilli()
		}
		if !j.Minted.IsZero() {
			out.MintedMs = j.Minted.UnixMilli()
		}
		if j.Row {
			text(j.Payload, &out.Payload, &out.PayloadBase64)
		}
		if j.HasResult {
			text(j.Result, &out.Result, &out.ResultBase64)
		}
		return writeJSON(s.e.stdout, out)
	}
	now := in.Now()
	t := newTable(s.e.stdout, "queue", j.Queue)
	t.row("id", j.ID)
	state := dash(j.State)
	switch {
	case !j.Row:
		state = "(no row: a dangling entry, dropped at the next claim)"
	case j.Set == "" && j.State == "done":
		state = "done (kept after its ack)"
	case string(j.Set) != j.State:
		state += fmt.Sprintf(" (but listed in %s)", dash(string(j.Set)))
	}
	t.row("state", state)
	if at := j.At(); !at.IsZero() {
		t.row(j.Set.When(), readable.Time(at)+" ("+readable.Relative(at, now)+")")
	}
	if !j.Minted.IsZero() {
		t.row("minted", readable.Time(j.Minted)+" ("+readable.Relative(j.Minted, now)+")")
	}
	attempts := count(j.Attempts)
	if j.Revived > 0 {
		attempts += fmt.Sprintf(" (%d since its revival)", j.Attempts-j.Revived)
	}
	t.row("attempts", attempts)
	t.row("priority", count(j.Priority))
	t.row("error", dash(j.Error))
	if j.Repeat != "" {
		t.row("schedule", j.Repeat)
	}
	t.row("payload", preview(j.Payload, 200))
	result := "-"
	if j.HasResult {
		result = preview(j.Result, 200)
	}
	t.row("result", result)
	return t.flush()
}
