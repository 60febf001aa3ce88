package client

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/echomq/emq/emq"
	emqerrors "github.com/echomq/emq/errors"
	"github.com/echomq/emq/ids"
	"github.com/echomq/emq/keys"
	"github.com/valkey-io/valkey-go"
)

// The states a job row holds besides those Fail reports.
const (
	StateActive State = "active" // claimed, under a lease
	StateDone   State = "done"   // acknowledged, its row kept for the policy's Keep
)

// JobInfo is what a queue holds of one job: its row and the times its
// sets and its expiry record.
type JobInfo struct {
	ID    ids.ID
	State State // StatePending, StateActive, StateDelayed, StateDead or StateDone
	// Attempts counts the claims ever made of the job: the last lease
	// token handed out.
	Attempts int64
	// Revived is the attempts its budget does not count — Attempts at the
	// job's last Revive, plus one for each release since (a worker giving
	// it back unstarted); 0 if none: its budget of attempts counts
	// Attempts − Revived.
	Revived  int64
	Priority int // lower is claimed first; 0 unless it was enqueued with one
	Payload  []byte
	// Error is the last failure's text; HasError tells an empty one from
	// none.
	Error    string
	HasError bool
	Result   []byte // an ack's result (Job.AckResult), nil when it was acked without one (Job.Ack)
	Repeat   string // the repeat schedule that made the job, "" for none

	// PayloadSize, ResultSize and ErrorSize are the payload's, the
	// result's and the error's lengths in bytes (HSTRLEN), read whether or
	// not the value is.
	PayloadSize, ResultSize, ErrorSize int64
	// PayloadUnread, ResultUnread and ErrorUnread say that
	// [Queue.JobUpTo] left the value unread, it being longer than the
	// limit: Payload or Result is then nil, and Error "" (with HasError),
	// whatever the row holds.
	PayloadUnread, ResultUnread, ErrorUnread bool

	// The times, each zero unless the job is in the set or has the expiry
	// it is read from (server clock, millisecond precision).
	Due      time.Time // in delayed: when it becomes claimable
	Deadline time.Time // in active: when its lease passes
	Died     time.Time // in dead: when it died
	Expires  time.Time // a kept row: when it is deleted
}

// Job reads job id of the queue: its row (HMGET of the fields JobInfo
// holds, HSTRLEN of its payload, result and error), its scores in the active,
// delayed and dead sets (ZSCORE) and its row's expiry (PEXPIRETIME), in
// one MULTI/EXEC so they agree. No verb is involved: every node answers
// alike. A job whose row is gone — acked without Keep, removed, expired —
// is refused with EMQNOJOB (errors.Is(err, emqerrors.NoJob)); an id of
// another namespace with EMQKIND, as Admit refuses it.
func (q *Queue) Job(ctx context.Context, id ids.ID) (*JobInfo, error) {
	if id.NS != ids.Job {
		return nil, emq.ErrJobKind
	}
	return q.job(ctx, id, unread{})
}

// JobUpTo reads job id as [Queue.Job] does, except that a payload, a
// result or an error longer than limit bytes is left unread
// (PayloadUnread, ResultUnread, ErrorUnread) — a large value is not
// carried across, nor held on the server's thread as one reply, to show a
// part of it. A failure's text may be as long as its worker made it: an
// upstream answer, a stack. It takes one more round trip, the HSTRLEN of
// the three before the read; a value that grows past limit between the
// two is read all the same.
func (q *Queue) JobUpTo(ctx context.Context, id ids.ID, limit int64) (*JobInfo, error) {
	if id.NS != ids.Job {
		return nil, emq.ErrJobKind
	}
	key := keys.Job(q.name, id.String())
	b := q.c.vk.B()
	cmds := make(valkey.Commands, len(sizedFields))
	for i, f := range sizedFields {
		cmds[i] = b.Hstrlen().Key(key).Field(f).Build()
	}
	var skip unread
	for i, r := range q.c.vk.DoMulti(ctx, cmds...) {
		n, err := r.AsInt64()
		if err != nil {
			return nil, refusal(err)
		}
		skip[i] = n > limit
	}
	return q.job(ctx, id, skip)
}

// sizedFields are the fields of a job's row whose length JobInfo holds,
// in unread's order; they come last in rowFields, so a read can leave
// them out.
var sizedFields = []string{"payload", "result", "error"}

// rowFields are the fields of a job's row that JobInfo holds.
var rowFields = append([]string{"state", "attempts", "revived", "priority", "repeat"}, sizedFields...)

// unread says which of sizedFields a read leaves out.
type unread [3]bool

// job reads job id, a JOB id, but for the fields skip leaves out.
func (q *Queue) job(ctx context.Context, id ids.ID, skip unread) (*JobInfo, error) {
	key, text := keys.Job(q.name, id.String()), id.String()
	fields := slices.Clip(rowFields[:len(rowFields)-len(sizedFields)]) // appends copy, never write rowFields
	for i, f := range sizedFields {
		if !skip[i] {
			fields = append(fields, f)
		}
	}
	b := q.c.vk.B()
	cmds := valkey.Commands{b.Multi().Build(), b.Hmget().Key(key).Field(fields...).Build()}
	for _, f := range sizedFields {
		cmds = append(cmds, b.Hstrlen().Key(key).Field(f).Build())
	}
	cmds = append(cmds,
		b.Zscore().Key(q.active).Member(text).Build(),
		b.Zscore().Key(q.delayed).Member(text).Build(),
		b.Zscore().Key(q.dead).Member(text).Build(),
		b.Pexpiretime().Key(key).Build(),
		b.Exec().Build())
	replies := q.c.vk.DoMulti(ctx, cmds...)
	for _, r := range replies[:len(replies)-1] { // MULTI's OK and the QUEUEDs
		if err := r.Error(); err != nil {
			return nil, refusal(err)
		}
	}
	got, err := replies[len(replies)-1].ToArray()
	if err != nil {
		return nil, refusal(err)
	}
	if want := len(cmds) - 2; len(got) != want {
		return nil, fmt.Errorf("client: EXEC replied %d results for %d commands", len(got), want)
	}
	values, err := got[0].ToArray()
	if err != nil {
		return nil, refusal(err)
	}
	row := make(map[string]string, len(fields))
	for i, v := range values {
		if s, err := v.ToString(); err == nil { // nil: no such field
			row[fields[i]] = s
		}
	}
	if len(row) == 0 {
		return nil, emqerrors.New(emqerrors.NoJob, "the job key names no job")
	}
	info := &JobInfo{ID: id, State: State(row["state"]), Repeat: row["repeat"],
		PayloadUnread: skip[0], ResultUnread: skip[1], ErrorUnread: skip[2]}
	if !skip[0] {
		info.Payload = []byte(row["payload"])
	}
	for i, size := range []*int64{&info.PayloadSize, &info.ResultSize, &info.ErrorSize} {
		if *size, err = got[1+i].AsInt64(); err != nil {
			return nil, refusal(err)
		}
	}
	info.Attempts = max(rowInt(row["attempts"]), 0)
	info.Revived = rowInt(row["revived"])
	if p := rowInt(row["priority"]); p >= 0 && p <= maxPriority {
		info.Priority = int(p)
	}
	info.Error, info.HasError = row["error"]
	info.HasError = info.HasError || info.ErrorUnread
	if result, ok := row["result"]; ok {
		info.Result = []byte(result)
	}
	times := got[1+len(sizedFields):]
	for i, at := range []*time.Time{&info.Deadline, &info.Due, &info.Died} {
		if *at, err = scoreTime(&times[i]); err != nil {
			return nil, refusal(err)
		}
	}
	if ms, err := times[3].AsInt64(); err != nil {
		return nil, refusal(err)
	} else if ms > 0 {
		info.Expires = time.UnixMilli(ms)
	}
	return info, nil
}

// maxPriority is the highest priority a job may have.
const maxPriority = 1<<31 - 1

// rowInt reads a row's integer field as the verbs do; 0 when absent or not
// an integer.
func rowInt(text string) int64 {
	n, _ := emq.ParseInt([]byte(text))
	return n
}

// scoreTime reads a ZSCORE reply as a time in Unix ms; nil (no such
// member) is the zero time.
func scoreTime(m *valkey.ValkeyMessage) (time.Time, error) {
	if m.IsNil() {
		return time.Time{}, nil
	}
	score, err := m.AsFloat64()
	if err != nil {
		return time.Time{}, err
	}
	return time.UnixMilli(int64(score)), nil
}
