package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"strings"

	"github.com/echomq/emq/client"
	emqerrors "github.com/echomq/emq/errors"
	"github.com/echomq/emq/ids"
	"github.com/echomq/emq/inspect"
	"github.com/echomq/emq/internal/readable"
)

var reviveCmd = &command{
	name: "revive", args: "<queue> <id>… | <queue> --all", summary: "bring dead jobs back to pending (EMQ.REVIVE)",
	detail: `Each job goes through EMQ.REVIVE: back to pending with its attempt budget
renewed, its last error kept. --all revives every job dead when it starts,
longest dead first, 100 at a time; a progress bar shows on a terminal when
there are more than 1,000. --timeout bounds the whole run: raise it for a
big queue; a run it stops says how far it got.`,
	examples: []string{"emq revive emails JOB0018f2a4c1e00001 JOB0018f2a4c1e00002", "emq revive emails --all"},
	minArgs:  1, maxArgs: -1,
	flags: func(fs *flag.FlagSet, o *options) {
		fs.BoolVar(&o.all, "all", false, "revive every dead job of the queue")
	},
	run: runRevive,
}

func runRevive(ctx context.Context, s *session, args []string) error {
	queue, idArgs := args[0], args[1:]
	if s.o.all == (len(idArgs) > 0) {
		return usageError("give job ids or --all, not both or neither")
	}
	q, err := s.queue(queue)
	if err != nil {
		return err
	}
	if s.o.all {
		return s.bulk(ctx, "revive", "revived", inspect.Selection{Queue: queue, State: inspect.Dead}, q.Revive)
	}
	return s.eachJob(ctx, "revived", idArgs, q.Revive)
}

var deleteCmd = &command{
	name: "delete", args: "<queue> <id>…", summary: "delete jobs whatever their state (EMQ.REMOVE)",
	detail: `Each job goes through EMQ.REMOVE: it leaves every set and its row is
deleted. A worker holding an active job meets EMQNOJOB at its next extend,
ack or fail. A job that does not exist is exit 3.`,
	examples: []string{"emq delete emails JOB0018f2a4c1e00001", "emq jobs emails --state dead --json | jq -r '.[].id' | xargs emq delete emails"},
	minArgs:  2, maxArgs: -1,
	run: func(ctx context.Context, s *session, args []string) error {
		q, err := s.queue(args[0])
		if err != nil {
			return err
		}
		return s.eachJob(ctx, "deleted", args[1:], remover(q))
	},
}

var purgeCmd = &command{
	name: "purge", args: "<queue> --state <state>", summary: "delete every job of a state (EMQ.REMOVE), optionally only the long dead",
	detail: `Every job in the state when it starts goes through EMQ.REMOVE, 100 at a
time, the longest dead (or soonest due, or next to be claimed) first; a progress bar shows on a
terminal when there are more than 1,000. --older-than d keeps the jobs that
died less than d ago (dead only). Active jobs are refused: workers hold
them (emq delete removes one by id). A job that changes state between the
read of its batch and its removal is removed all the same. --timeout
bounds the whole run: raise it for a big queue; a run it stops says how
far it got.`,
	examples: []string{"emq purge emails --state dead", "emq purge emails --state dead --older-than 168h"},
	minArgs:  1, maxArgs: 1,
	flags: func(fs *flag.FlagSet, o *options) {
		fs.StringVar(&o.state, "state", "", purgeState+" (required)")
		fs.DurationVar(&o.olderThan, "older-than", 0, "with --state dead: only the jobs that died at least this long ago")
	},
	run: runPurge,
}

func runPurge(ctx context.Context, s *session, args []string) error {
	st, err := parseState(s.o.state, purgeState)
	switch {
	case err != nil:
		return err
	case st == "":
		return usageError("--state is required: " + purgeState)
	case st == inspect.Active:
		return usageError("active jobs are held by workers and are not purged; " +
			"emq delete <queue> <id> removes one (its worker meets EMQNOJOB), or wait for its lease to pass")
	case s.o.olderThan < 0 || (s.o.olderThan > 0 && st != inspect.Dead):
		return usageError("--older-than is a duration of 0 or more (0, the default: any age) and reads the time of death: only with --state dead")
	}
	q, err := s.queue(args[0])
	if err != nil {
		return err
	}
	sel := inspect.Selection{Queue: args[0], State: st}
	if s.o.olderThan > 0 {
		sel.Before = s.e.now().Add(-s.o.olderThan)
	}
	return s.bulk(ctx, "purge", "removed", sel, remover(q))
}

// remover is q.Remove as an action on one job: a job that is not there
// fails with EMQNOJOB.
func remover(q *client.Queue) func(context.Context, ids.ID) error {
	return func(ctx context.Context, id ids.ID) error {
		found, err := q.Remove(ctx, id)
		if err == nil && !found {
			err = emqerrors.New(emqerrors.NoJob, "queue %s holds no job %s", q.Name(), id)
		}
		return err
	}
}

var pauseCmd = &command{
	name: "pause", args: "<queue>", summary: "stop a queue's claims (EMQ.PAUSE); workers keep the jobs they hold",
	detail: `A paused queue's claims still promote due jobs and requeue expired leases
but take nothing, until emq resume. Jobs already claimed run on. Pausing a
paused queue changes nothing and says so.`,
	examples: []string{"emq pause emails", "emq pause emails --json"},
	minArgs:  1, maxArgs: 1,
	run: func(ctx context.Context, s *session, args []string) error { return s.setPaused(ctx, args[0], true) },
}

var resumeCmd = &command{
	name: "resume", args: "<queue>", summary: "let a paused queue's claims take jobs again (EMQ.RESUME)",
	detail: `Resuming wakes the queue's waiting workers. Resuming a queue that is not
paused changes nothing and says so.`,
	examples: []string{"emq resume emails"},
	minArgs:  1, maxArgs: 1,
	run: func(ctx context.Context, s *session, args []string) error { return s.setPaused(ctx, args[0], false) },
}

// pausedJSON is what pause or resume did.
type pausedJSON struct {
	Queue   string `json:"queue"`
	Paused  bool   `json:"paused"`
	Changed bool   `json:"changed"`
}

// setPaused pauses or resumes queue and says whether that changed it.
func (s *session) setPaused(ctx context.Context, queue string, pause bool) error {
	set, did, already := (*client.Queue).Resume, "resumed", "was not paused"
	if pause {
		set, did, already = (*client.Queue).Pause, "paused", "was paused already"
	}
	changed, err := s.setting(ctx, "pause", queue, "it is paused", pause,
		func(q *client.Queue) (bool, error) { return set(q, ctx) })
	if err != nil {
		return err
	}
	if s.o.json {
		return writeJSON(s.e.stdout, pausedJSON{Queue: queue, Paused: pause, Changed: changed})
	}
	if changed {
		_, err = fmt.Fprintf(s.e.stdout, "%s %s\n", did, readable.Printable(queue))
	} else {
		_, err = fmt.Fprintf(s.e.stdout, "%s %s: nothing changed\n", readable.Printable(queue), already)
	}
	return err
}

// setting makes a setting of queue with set, which reports whether it
// changed the queue. When makes, a queue that held no job and had no
// setting before is noted on stderr as noteNew notes it, once set is done:
// a refused setting (a replica's READONLY) made no queue and notes nothing.
func (s *session) setting(ctx context.Context, cmd, queue, done string, makes bool, set func(*client.Queue) (bool, error)) (bool, error) {
	q, err := s.queue(queue)
	if err != nil {
		return false, err
	}
	note, err := s.noteNew(ctx, cmd, queue, done, makes)
	switch {
	case inspect.Refused(err):
		// a key of the queue unreadable (another type, NOPERM) leaves the
		// note undecided: the verb meets it, and its refusal is the answer
		note = func() {}
	case err != nil:
		return false, err
	}
	changed, err := set(q)
	if err == nil {
		note()
	}
	return changed, err
}

// noteNew returns what notes on stderr, once the command cmd is done, that
// queue held no job and had no setting before it: a mistyped name? done
// says what a command that makes a setting made of the new queue all the
// same ("it is paused"); check false, or a queue in use, notes nothing.
func (s *session) noteNew(ctx context.Context, cmd, queue, done string, check bool) (func(), error) {
	nothing := func() {}
	if !check {
		return nothing, nil
	}
	in, err := s.inspector()
	if err != nil {
		return nothing, err
	}
	sum, err := in.Summary(ctx, queue)
	if err != nil || !sum.Blank() {
		return nothing, err
	}
	if done != "" {
		done = "; " + done + " all the same"
	}
	return func() {
		fmt.Fprintf(s.e.stderr, "emq %s: note: %s holds no job and has no setting (a mistyped name?)%s\n", cmd, readable.Printable(queue), done)
	}, nil
}

var enqueueCmd = &command{
	name: "enqueue", args: "<queue> <payload>",
	summary: "add a job, for trying things (EMQ.ENQUEUE, or EMQ.SCHEDULE with --delay or --priority); prints its id",
	detail: `The payload is the argument as given, or standard input when it is "-".
The id is minted with the snowflake node --node: keep it apart from your
producers' nodes. --delay keeps the job in the delayed set until then
(this machine's clock); --priority admits it ahead of higher numbers.`,
	examples: []string{`emq enqueue emails '{"to":"ann@example.com"}'`, "emq enqueue emails - < job.json",
		`emq enqueue emails '{"to":"bob@example.com"}' --delay 10m --priority 1`},
	minArgs: 2, maxArgs: 2,
	flags: func(fs *flag.FlagSet, o *options) {
		fs.UintVar(&o.node, "node", enqueueNode, "snowflake node of the minted id (0 … 1023)")
		fs.DurationVar(&o.delay, "delay", 0, "claimable this long from now, not at once")
		fs.Int64Var(&o.priority, "priority", 0, "claimed before jobs of a higher number (0 … 2147483647)")
	},
	run: runEnqueue,
}

// enqueueNode is emq enqueue's snowflake node unless --node says: apart
// from the schedules' ticks, minted down from node 1023 (a queue's first
// 4096 schedules on 1023 itself), and from the small numbers producers
// usually take.
const enqueueNode = 1000

func runEnqueue(ctx context.Context, s *session, args []string) error {
	if s.o.delay < 0 {
		return usageError("--delay %v: want 0 or more", s.o.delay)
	}
	if s.o.priority < 0 || s.o.priority > math.MaxInt32 {
		return usageError("--priority %d: want 0 … %d", s.o.priority, math.MaxInt32)
	}
	payload := []byte(args[1])
	if args[1] == "-" {
		var err error
		if payload, err = io.ReadAll(os.Stdin); err != nil {
			return err
		}
	}
	q, err := s.queue(args[0])
	if err != nil {
		return err
	}
	var opts []client.EnqueueOption
	if s.o.delay > 0 {
		opts = append(opts, client.After(s.o.delay))
	}
	if s.o.priority > 0 {
		opts = append(opts, client.Priority(int(s.o.priority)))
	}
	id, err := q.Enqueue(ctx, payload, opts...)
	if err != nil {
		return err
	}
	if s.o.json {
		return writeJSON(s.e.stdout, map[string]string{"queue": args[0], "id": id.String()})
	}
	_, err = fmt.Fprintln(s.e.stdout, id)
	return err
}

// failedJSON is one job, or one schedule, an action failed on: ID is the
// job's id or the schedule's name.
type failedJSON struct {
	ID    string `json:"id"`
	Error string `json:"error"`
}

// eachJSON is what an action on named jobs, or schedules, did.
type eachJSON struct {
	Done   []string     `json:"done"`
	Failed []failedJSON `json:"failed"`
}

// eachJob acts on each job id named, one call per job, once every id has
// been read.
func (s *session) eachJob(ctx context.Context, done string, idArgs []string, act func(context.Context, ids.ID) error) error {
	jobs := make([]ids.ID, len(idArgs))
	names := make([]string, len(idArgs))
	for i, a := range idArgs {
		id, err := parseJobID(a)
		if err != nil {
			return err
		}
		jobs[i], names[i] = id, id.String()
	}
	return s.each(ctx, done, names, func(ctx context.Context, i int) error { return act(ctx, jobs[i]) })
}

// each acts on each of the things named — jobs, schedules — calling act
// with its index, and reports every one. The error's code is 3 when every
// failure was a missing one, 1 when the others were a migrating slot's
// TRYAGAIN (run it again), else 4; it wraps the first failure of the
// code's kind.
func (s *session) each(ctx context.Context, done string, names []string, act func(context.Context, int) error) error {
	out := eachJSON{Done: []string{}, Failed: []failedJSON{}}
	code := exitNotFound
	var first error
	for i, name := range names {
		if err := act(ctx, i); err != nil {
			switch { // the code of the worst failure: missing, migrating, refused
			case exitCode(err) == exitNotFound:
			case migrating(err):
				if code == exitNotFound {
					code, first = exitFailed, err
				}
			case code != exitRefused:
				code, first = exitRefused, err
			}
			out.Failed = append(out.Failed, failedJSON{ID: name, Error: err.Error()})
			continue
		}
		out.Done = append(out.Done, name)
	}
	if s.o.json {
		if err := writeJSON(s.e.stdout, out); err != nil {
			return err
		}
	} else {
		for _, name := range out.Done {
			fmt.Fprintf(s.e.stdout, "%s %s\n", done, readable.Printable(name))
		}
	}
	if len(out.Failed) == 0 {
		return nil
	}
	lines := make([]string, len(out.Failed))
	for i, f := range out.Failed {
		lines[i] = readable.Printable(f.ID) + ": " + f.Error
	}
	return &exitError{code: code, err: &failures{text: strings.Join(lines, "\n  "), first: first}}
}

// failures is the failures of an each, one line each, wrapping the one
// its exit code names (a hint reads it).
type failures struct {
	text  string
	first error
}

func (f *failures) Error() string { return f.text }
func (f *failures) Unwrap() error { return f.first }

// bulkJSON is what a bulk action did.
type bulkJSON struct {
	Queue  string `json:"queue"`
	State  string `json:"state"`
	Total  int    `json:"total"`
	Done   int    `json:"done"`
	Failed int    `json:"failed"`
	Error  string `json:"error,omitempty"`
}

// progressOver is the size of a bulk action that gets a progress bar.
const progressOver = 1000

// bulk acts on every job of sel through inspect's ForEach, drawing a
// progress bar for more than progressOver jobs, and reports the count —
// also when an error (--timeout's, say) stops it part way, as the jobs
// before it stay changed. A selection of no job of a queue that holds
// nothing notes a mistyped name, as command cmd's.
func (s *session) bulk(ctx context.Context, cmd, done string, sel inspect.Selection, act func(context.Context, ids.ID) error) error {
	in, err := s.inspector()
	if err != nil {
		return err
	}
	var bar *progressBar
	p, stop := in.ForEach(ctx, sel, act, func(p inspect.Progress) {
		if bar == nil && p.Total > progressOver && s.e.progress != nil {
			bar = &progressBar{w: s.e.progress, label: done}
		}
		bar.draw(p)
	})
	bar.end()
	if stop != nil && p.Total == 0 {
		return stop // stopped before the count: nothing done
	}
	err = s.bulkError(p, stop)
	note, nerr := s.noteNew(ctx, cmd, sel.Queue, "", err == nil && p.Total == 0)
	if nerr != nil {
		return nerr
	}
	if s.o.json {
		out := bulkJSON{Queue: sel.Queue, State: string(sel.State), Total: p.Total, Done: p.Done, Failed: p.Failed}
		if err != nil {
			out.Error = err.Error()
		}
		if err := writeJSON(s.e.stdout, out); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(s.e.stdout, "%s %d of %d %s jobs of %s\n", done, p.Done, p.Total, sel.State, readable.Printable(sel.Queue))
	}
	note()
	return err
}

// bulkError is how a bulk action ended short: the jobs whose action
// failed (exit 4), then the error that stopped it before the end, if any
// (its own exit code). The jobs in flight when it stopped count as failed.
func (s *session) bulkError(p inspect.Progress, stop error) error {
	var err error
	if p.Failed > 0 {
		err = &exitError{code: exitRefused, err: fmt.Errorf("%d failed; the first: %w", p.Failed, p.Err)}
	}
	if stop == nil {
		return err
	}
	if errors.Is(stop, context.DeadlineExceeded) {
		stop = fmt.Errorf("%w (--timeout %v bounds the whole action: raise it for a big queue)", stop, s.o.timeout)
	}
	code := exitCode(stop)
	if err != nil {
		return &exitError{code: code, err: fmt.Errorf("%w; then: %w", err, stop)}
	}
	return &exitError{code: code, err: fmt.Errorf("stopped: %w", stop)}
}

// progressBar draws a bulk action's progress on one terminal line.
type progressBar struct {
	w     io.Writer
	label string
}

// barWidth is the bar's length in cells.
const barWidth = 30

func (b *progressBar) draw(p inspect.Progress) {
	if b == nil {
		return
	}
	n := p.Done + p.Failed
	filled := barWidth * n / max(p.Total, 1)
	fmt.Fprintf(b.w, "\r%s [%s%s] %d/%d", b.label, strings.Repeat("#", filled), strings.Repeat(".", barWidth-filled), n, p.Total)
	if p.Failed > 0 {
		fmt.Fprintf(b.w, " (%d failed)", p.Failed)
	}
}

func (b *progressBar) end() {
	if b != nil {
		fmt.Fprintln(b.w)
	}
}
