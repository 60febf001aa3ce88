package client

import (
	"context"
	"fmt"
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
	// Revived is Attempts at the job's last Revive, 0 if never: its budget
	// of attempts counts Attempts − Revived.
	Revived  int64
	Priority int // lower is claimed first; 0 unless it was enqueued with one
	Payload  []byte
	// Error is the last failure's text; HasError tells an empty one from
	// none.
	Error    string
	HasError bool
	Result   []byte // an ack's result, nil when it was acked without one
	Repeat   string // the repeat schedule that made the job, "" for none

	// The times, each zero unless the job is in the set or has the expiry
	// it is read from (server clock, millisecond precision).
	Due      time.Time // in delayed: when it becomes claimable
	Deadline time.Time // in active: when its lease passes
	Died     time.Time // in dead: when it died
	Expires  time.Time // a kept row: when it is deleted
}

// Job reads job id of the queue: its row (HGETALL), its scores in the
// active, delayed and dead sets (ZSCORE) and its row's expiry
// (PEXPIRETIME), in one MULTI/EXEC so they agree. No verb is involved:
// every node answers alike. A job whose row is gone — acked without Keep,
// removed, expired — is refused with EMQNOJOB (errors.Is(err,
// emqerrors.NoJob)).
func (q *Queue) Job(ctx context.Context, id ids.ID) (*JobInfo, error) {
	key, text := keys.Job(q.name, id.String()), id.String()
	b := q.c.vk.B()
	replies := q.c.vk.DoMulti(ctx,
		b.Multi().Build(),
		b.Hgetall().Key(key).Build(),
		b.Zscore().Key(q.active).Member(text).Build(),
		b.Zscore().Key(q.delayed).Member(text).Build(),
		b.Zscore().Key(q.dead).Member(text).Build(),
		b.Pexpiretime().Key(key).Build(),
		b.Exec().Build())
	for _, r := range replies[:len(replies)-1] { // MULTI's OK and the QUEUEDs
		if err := r.Error(); err != nil {
			return nil, refusal(err)
		}
	}
	got, err := replies[len(replies)-1].ToArray()
	if err != nil {
		return nil, refusal(err)
	}
	if len(got) != 5 {
		return nil, fmt.Errorf("client: EXEC replied %d results for 5 commands", len(got))
	}
	row, err := got[0].AsStrMap()
	if err != nil {
		return nil, refusal(err)
	}
	if len(row) == 0 {
		return nil, emqerrors.New(emqerrors.NoJob, "the job key names no job")
	}
	info := &JobInfo{ID: id, State: State(row["state"]), Payload: []byte(row["payload"]), Repeat: row["repeat"]}
	info.Attempts = max(rowInt(row["attempts"]), 0)
	info.Revived = rowInt(row["revived"])
	if p := rowInt(row["priority"]); p >= 0 && p <= maxPriority {
		info.Priority = int(p)
	}
	info.Error, info.HasError = row["error"]
	if result, ok := row["result"]; ok {
		info.Result = []byte(result)
	}
	for i, at := range []*time.Time{&info.Deadline, &info.Due, &info.Died} {
		if *at, err = scoreTime(&got[1+i]); err != nil {
			return nil, refusal(err)
		}
	}
	if ms, err := got[4].AsInt64(); err != nil {
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
