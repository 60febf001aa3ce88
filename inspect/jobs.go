package inspect

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/echomq/emq/ids"
	"github.com/echomq/emq/internal/readable"
	"github.com/echomq/emq/keys"
	"github.com/valkey-io/valkey-go"
)

// MaxPage is the most jobs one [Inspector.Jobs] call lists.
const MaxPage = 1000

// ValueLimit is the longest payload, result or error, in bytes, that an
// operator's view of one job (emq job, the dashboard's job page) reads
// (client.Queue.JobUpTo), and the longest error a listing reads
// ([Inspector.Jobs]): a longer one is not carried across — nor held on
// the server's thread as one reply — to show its first characters. It is
// named by its size ([Unread]); valkey-cli HGET reads it whole.
const ValueLimit = 64 << 10

// Unread is what a view of a job shows for a payload, result or error of
// size bytes left unread, above [ValueLimit].
func Unread(size int64) string {
	return fmt.Sprintf("(%d bytes, not shown: above %d KiB)", size, ValueLimit>>10)
}

// JobRow is one job of a listing: its set entry and the row's short fields.
type JobRow struct {
	ID string
	// State is the set the job was listed from; Score is its score there:
	// the priority (pending), or the lease deadline, due time or time of
	// death in Unix ms (active, delayed, dead).
	State State
	Score int64
	// Row is false for a dangling entry: a set member whose row is gone,
	// or is a key of another type than a hash (NotHash), or that is no JOB
	// id (IsJob: written by hand; no verb acts on it); a claim drops it
	// from pending, active and delayed. The fields below are then zero.
	Row bool
	// NotHash is true for a row written by hand as a key of another type:
	// no verb reads it, and EMQ.REMOVE refuses it (WRONGTYPE) until it is
	// deleted.
	NotHash  bool
	Attempts int64
	Priority int64
	// Error is the last failure's text, "" when ErrorUnread: it is longer
	// than [ValueLimit] (ErrorSize bytes), and not read.
	Error       string
	ErrorSize   int64
	ErrorUnread bool
	// PayloadSize is the payload's length in bytes.
	PayloadSize int64
	// Age is how long ago the id was minted (0 for a member that is not a
	// JOB id).
	Age time.Duration
}

// ErrorText is the job's error as a listing shows it: clipped to n runes
// on one line, or, when it was left unread, its size ([Unread]).
func (r JobRow) ErrorText(n int) string {
	if r.ErrorUnread {
		return Unread(r.ErrorSize)
	}
	return readable.Clip(r.Error, n)
}

// IsJob reports whether the member is a JOB id, which the verbs act on.
// One that is not, written by hand, has no job row, and no verb removes
// it from the dead set, which no claim sweeps: ZREM it.
func (r JobRow) IsJob() bool {
	return ids.Valid(ids.Job, []byte(r.ID))
}

// At is the job's time in its set — lease deadline, due time or time of
// death — or the zero time for a pending job, whose score is a priority.
func (r JobRow) At() time.Time { return scoreTime(r.State, r.Score) }

// scoreTime reads a set's score as the time it holds.
func scoreTime(st State, score int64) time.Time {
	if st == Pending || st == "" {
		return time.Time{}
	}
	return time.UnixMilli(score)
}

// Jobs lists up to limit (1 … MaxPage) jobs of queue's state from rank
// offset, and the number of jobs in that state: pending in claim order,
// active by lease deadline, delayed by due time, dead newest first. Two
// round trips: the page of the set (ZRANGE by rank, O(log N + limit)),
// then one HMGET and two HSTRLEN per job, pipelined; and a third when
// jobs have errors: an HGET of each up to [ValueLimit] bytes.
func (in *Inspector) Jobs(ctx context.Context, queue string, state State, offset, limit int) ([]JobRow, int64, error) {
	if offset < 0 || limit < 1 || limit > MaxPage {
		return nil, 0, fmt.Errorf("inspect: a page is offset ≥ 0 and limit 1 … %d, not %d and %d", MaxPage, offset, limit)
	}
	key := keys.Set(queue, string(state))
	start, stop := strconv.Itoa(offset), strconv.Itoa(offset+limit-1)
	page := in.vk.B().Zrange().Key(key).Min(start).Max(stop).Withscores().Build()
	if state == Dead {
		page = in.vk.B().Zrange().Key(key).Min(start).Max(stop).Rev().Withscores().Build()
	}
	r := in.vk.DoMulti(ctx, page, in.vk.B().Zcard().Key(key).Build())
	members, err := r[0].AsZScores()
	if err != nil {
		return nil, 0, fmt.Errorf("queue %s: ZRANGE %s: %w", queue, state, err)
	}
	total, err := r[1].AsInt64()
	if err != nil {
		return nil, 0, fmt.Errorf("queue %s: ZCARD %s: %w", queue, state, err)
	}
	if len(members) == 0 {
		return nil, total, nil
	}
	const per = 3 // the commands a job's fields take
	cmds := make(valkey.Commands, 0, per*len(members))
	for _, m := range members {
		row := keys.Job(queue, m.Member)
		cmds = append(cmds, in.vk.B().Hmget().Key(row).Field("attempts", "priority").Build(),
			in.vk.B().Hstrlen().Key(row).Field("payload").Build(),
			in.vk.B().Hstrlen().Key(row).Field("error").Build())
	}
	replies := in.vk.DoMulti(ctx, cmds...)
	failed := func(job string, err error) error { return fmt.Errorf("queue %s: job %s: %w", queue, job, err) }
	now := in.opts.Now()
	out := make([]JobRow, len(members))
	var errs valkey.Commands // the errors to read, within ValueLimit
	var erred []int          // whose
	for i, m := range members {
		j, err := listed(JobRow{ID: m.Member, State: state, Score: int64(m.Score), Age: ageOf(m.Member, now)}, replies[per*i:per*i+per])
		if err != nil {
			return nil, 0, failed(m.Member, err)
		}
		if j.ErrorSize > 0 && !j.ErrorUnread {
			errs = append(errs, in.vk.B().Hget().Key(keys.Job(queue, m.Member)).Field("error").Build())
			erred = append(erred, i)
		}
		out[i] = j
	}
	// a round trip per errorsRead bytes of errors at most (a single error
	// may be larger): a page of a thousand errors of 60 KiB, read in one
	// pipeline, is 60 MB the server writes in a few turns of its loop,
	// holding other clients up for tens of milliseconds
	for from := 0; from < len(errs); {
		to, size := from, int64(0)
		for to < len(errs) && (to == from || size+out[erred[to]].ErrorSize <= errorsRead) {
			size += out[erred[to]].ErrorSize
			to++
		}
		for k, r := range in.vk.DoMulti(ctx, errs[from:to]...) {
			j := &out[erred[from+k]]
			text, err := r.ToString()
			if err != nil && !valkey.IsValkeyNil(err) && !wrongType(err) { // gone since: none
				return nil, 0, failed(j.ID, err)
			}
			j.Error = text
		}
		from = to
	}
	return out, total, nil
}

// listed completes j, a job of a listing, from its row's reads: an HMGET
// of attempts and priority, then the HSTRLEN of payload and of error. A
// row that is another type than a hash in any of them — a hand turned it
// into one between the pipeline's reads — is NotHash, as when it is one
// before them.
func listed(j JobRow, r []valkey.ValkeyResult) (JobRow, error) {
	fields, err := r[0].ToArray()
	var sizes [2]int64 // of payload and error
	for k := range sizes {
		if err == nil {
			sizes[k], err = r[1+k].AsInt64()
		}
	}
	switch {
	case wrongType(err):
		j.NotHash = true
		return j, nil
	case err != nil:
		return j, err
	case fields[0].IsNil() || !j.IsJob():
		// a row always has attempts: its absence is a dangling entry, as
		// is a member that is no JOB id, whatever a hand wrote under it
		return j, nil
	}
	j.Row = true
	j.Attempts, _ = fields[0].AsInt64()
	j.Priority, _ = fields[1].AsInt64()
	j.PayloadSize, j.ErrorSize = sizes[0], sizes[1]
	j.ErrorUnread = j.ErrorSize > ValueLimit
	return j, nil
}

// errorsRead bounds the bytes of errors one round trip of [Inspector.Jobs]
// reads.
const errorsRead = 1 << 20

// Find returns the queues that hold a row of job id — of those discovered,
// one EXISTS per queue, pipelined — and those whose row the server refused
// to read (NOPERM: a user granted other queues' keys), which may hold it
// too. When no queue discovered holds it, nor may, it looks for the row
// itself, one SCAN after another on every primary: a queue whose only
// keys are job rows (its done jobs kept, the rest drained) is no queue
// discovery finds. That scan waits for any other of the inspector's, a
// search's or discovery's, as long as ctx allows: searches at once (a
// dashboard's, from a page that asks it again and again) are one scan of
// the keyspace at a time, not one each.
func (in *Inspector) Find(ctx context.Context, id string) (found, unreadable []string, err error) {
	names, err := in.Queues(ctx)
	if err != nil {
		return nil, nil, err
	}
	if found, unreadable, err = in.exists(ctx, names, id); err != nil || len(found) > 0 || len(unreadable) > 0 {
		return found, unreadable, err
	}
	if !ids.Valid(ids.Job, []byte(id)) {
		return nil, unreadable, nil // no glob in a SCAN's pattern
	}
	select {
	case in.scan <- struct{}{}:
		defer func() { <-in.scan }()
	case <-ctx.Done():
		return nil, unreadable, fmt.Errorf("search for job %s: waiting for the scan under way: %w", id, ctx.Err())
	}
	primaries, err := in.askPrimaries(ctx)
	if err != nil { // a primary down may hold it, as for discovery
		return nil, unreadable, err
	}
	err = in.scanKeys(ctx, primaries, keys.Job("*", id), func(key string) {
		if q, _, ok := keys.SplitJob([]byte(key)); ok {
			found = append(found, string(q))
		}
	})
	slices.Sort(found)
	return found, unreadable, err
}

// exists returns which of names hold a row of job id, and which the
// server refused to read.
func (in *Inspector) exists(ctx context.Context, names []string, id string) (found, unreadable []string, err error) {
	if len(names) == 0 {
		return nil, nil, nil
	}
	cmds := make(valkey.Commands, len(names))
	for i, q := range names {
		cmds[i] = in.vk.B().Exists().Key(keys.Job(q, id)).Build()
	}
	for i, r := range in.vk.DoMulti(ctx, cmds...) {
		n, err := r.AsInt64()
		if verr, ok := valkey.IsValkeyErr(err); ok && strings.HasPrefix(verr.Error(), "NOPERM ") {
			unreadable = append(unreadable, names[i])
			continue
		}
		if err != nil {
			return nil, nil, fmt.Errorf("queue %s: EXISTS job %s: %w", names[i], id, err)
		}
		if n > 0 {
			found = append(found, names[i])
		}
	}
	return found, unreadable, nil
}
