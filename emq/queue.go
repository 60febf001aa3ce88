package emq

import (
	"bytes"
	"math"

	"github.com/echomq/emq/errors"
	"github.com/echomq/emq/ids"
	"github.com/echomq/emq/keys"
)

// The pieces the job lifecycle verbs share: the queue's keys, the job row
// and its lease, and the sweep that requeues stalled jobs.

// The bounds of the lifecycle verbs' integer arguments (docs/commands.md).
var (
	leaseBound       = newBound("lease_ms", 1, math.MaxInt32)
	countBound       = newBound("count", 1, 1000)
	maxAttemptsBound = newBound("max_attempts", 1, math.MaxInt32)
	attemptBound     = newBound("attempt", 1, math.MaxInt32)
	backoffBound     = newBound("backoff_ms", 0, 1<<40)
	keepBound        = newBound("keep_ms", 0, 1<<40)
	timeoutBound     = newBound("timeout_ms", 0, 1<<40)
	limitBound       = newBound("limit", 1, 100_000)
)

// The refusals of the lifecycle verbs whose text never changes.
var (
	errKeysQueues = static(errors.Layout, "keys name different queues")
	errNoJob      = static(errors.NoJob, "the job key names no job")
	errLease      = static(errors.Lease, "the job is not active under this attempt")
	errNotDead    = static(errors.State, "the job is not dead")
	errNoPerm     = static(errors.NoPerm, "No permissions to access a key")
	setLayout     = map[string]error{
		keys.PendingSet: static(errors.Layout, "pending key must be emq:{<queue>}:pending"),
		keys.ActiveSet:  static(errors.Layout, "active key must be emq:{<queue>}:active"),
		keys.DelayedSet: static(errors.Layout, "delayed key must be emq:{<queue>}:delayed"),
		keys.DeadSet:    static(errors.Layout, "dead key must be emq:{<queue>}:dead"),
	}
)

// queueKeys checks a call's keys — the job key first when job is true,
// then one set key per name in sets — in the order docs/commands.md gives:
// every layout, then the job id's namespace, then that all name one queue.
// It returns the queue and the job id (nil without a job key).
func queueKeys(a [][]byte, job bool, sets ...string) (queue, id []byte, err error) {
	k := 2
	if job {
		var ok bool
		if queue, id, ok = keys.SplitJob(a[k]); !ok {
			return nil, nil, errJobLayout
		}
		k++
	}
	same := true
	for i, set := range sets {
		q, ok := keys.SplitSet(a[k+i], set)
		if !ok {
			return nil, nil, setLayout[set]
		}
		if queue == nil {
			queue = q
		}
		same = same && bytes.Equal(q, queue)
	}
	if job {
		if _, ok := ids.Parse(ids.Job, id); !ok {
			return nil, nil, ErrJobKind
		}
	}
	if !same {
		return nil, nil, errKeysQueues
	}
	return queue, id, nil
}

// checkLeased decides what EXTEND's and ACK's arguments decide alone:
// numkeys 2, the attempt, the verb's own number (second), then the job key
// and the active key.
func checkLeased(a [][]byte, second bound) (attempt, n int64, id []byte, err error) {
	if err := numkeys(a, 2); err != nil {
		return 0, 0, nil, err
	}
	if attempt, err = attemptBound.parse(a[4]); err != nil {
		return 0, 0, nil, err
	}
	if n, err = second.parse(a[5]); err != nil {
		return 0, 0, nil, err
	}
	_, id, err = queueKeys(a, true, keys.ActiveSet)
	return attempt, n, id, err
}

// leased runs what EXTEND and ACK share — the argument check, then the
// reads: the active key's type, the job active under the attempt — and
// returns the verb's own number and a ref to the job's id.
func leased(c Call, second bound) (n int64, id Ref, err error) {
	attempt, n, jobID, err := checkLeased(c.Args, second)
	if err != nil {
		return 0, 0, err
	}
	s := c.Server
	s.Open(2, false)
	if err := zsets(s, 1, 2); err != nil {
		return 0, 0, err
	}
	if _, err := leasedJob(s, c.Plan, attempt); err != nil {
		return 0, 0, err
	}
	return n, c.Plan.Bytes(jobID), nil
}

// zsets refuses WRONGTYPE unless keys from … to-1 are sorted sets or absent.
func zsets(s Server, from, to int) error {
	for k := from; k < to; k++ {
		if t := s.Type(k); t != Empty && t != ZSet {
			return errors.ErrWrongType
		}
	}
	return nil
}

// jobFields are the job row's fields a verb reads, in jobRow's order.
var jobFields = []Ref{refState, refAttempts, refPayload, refError}

// jobRow is what a verb reads of a job row.
type jobRow struct {
	state    []byte
	attempts int64 // 0 when absent or not an integer
	payload  Value
	hasError bool
}

// readJob reads the job row at key k, a hash.
func readJob(s Server, p *Plan, k int) jobRow {
	v := s.HashGet(p, k, jobFields)
	r := jobRow{state: v[0].Bytes, payload: v[2], hasError: v[3].Found}
	if n, ok := ParseInt(v[1].Bytes); ok && n > 0 {
		r.attempts = n
	}
	return r
}

// revivedFields is the field a verb reads to know a job's attempt budget.
var revivedFields = []Ref{refRevived}

// exhausted reports whether the job of row, at key k, has used its budget
// of max attempts: attempts − revived, revived being the attempts it had
// when REVIVE last brought it back (0 if never). Attempts never go back, so
// no attempt handed out is ever valid again; revived is read only when
// attempts alone reach max.
func exhausted(s Server, p *Plan, k int, row jobRow, max int64) bool {
	if row.attempts < max {
		return false
	}
	revived, ok := ParseInt(s.HashGet(p, k, revivedFields)[0].Bytes)
	if !ok || revived < 0 || revived > row.attempts {
		revived = 0
	}
	return row.attempts-revived >= max
}

// activeUnder reports whether the row is active under attempt: the lease
// token is the attempt a claim handed out.
func (r jobRow) activeUnder(attempt int64) bool {
	return string(r.state) == "active" && r.attempts == attempt
}

// leasedJob reads the call's job key (key 0) and refuses unless it is a job
// active under attempt: the checks EXTEND, ACK and FAIL share once the
// other keys' types are known.
func leasedJob(s Server, p *Plan, attempt int64) (jobRow, error) {
	switch s.Type(0) {
	case Empty:
		return jobRow{}, errNoJob
	case Hash:
	default:
		return jobRow{}, errors.ErrWrongType
	}
	row := readJob(s, p, 0)
	if !row.activeUnder(attempt) {
		return row, errLease
	}
	return row, nil
}

// openJob opens the job row of id in queue: a key the verb derives, so the
// caller's ACL key permissions are checked on it first.
func openJob(s Server, p *Plan, queue, id []byte) (int, error) {
	off := len(p.Scratch)
	p.Scratch = keys.AppendJob(p.Scratch, queue, id)
	k, ok := s.OpenDerived(p, p.span(off))
	if !ok {
		return 0, errNoPerm
	}
	return k, nil
}

// stall is an active job whose lease has passed, found by a sweep.
type stall struct {
	member Member
	job    int // its row's key
}

// findStalls reads at most limit active jobs (set key active) whose lease
// deadline is before now, oldest first, and opens their rows.
func findStalls(s Server, p *Plan, queue []byte, active int, now int64, limit int, out []stall) ([]stall, error) {
	for _, m := range s.ZRange(active, float64(now), true, limit) {
		k, err := openJob(s, p, queue, m.Bytes)
		if err != nil {
			return nil, err
		}
		out = append(out, stall{m, k})
	}
	return out, nil
}

// requeue plans a stalled job's return to pending (set key pending), or
// its dropping from active when its row is gone; it reports whether the
// job was requeued.
func requeue(s Server, p *Plan, st stall, pending, active int) bool {
	p.zrem(active, st.member.Ref)
	if s.Type(st.job) != Hash {
		p.Count(DanglingDropped, 1)
		return false
	}
	p.hset(st.job, refState, refPending, refError, refLeaseExpired)
	p.zadd(pending, st.member.Ref, 0)
	p.Count(StallsRequeued, 1)
	return true
}
