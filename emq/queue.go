package emq

import (
	"bytes"
	"math"

	"github.com/echomq/emq/errors"
	"github.com/echomq/emq/ids"
	"github.com/echomq/emq/keys"
)

// The pieces the job lifecycle verbs share: the queue's keys, the job row
// and its lease, and moving a job into pending.

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
	priorityBound    = newBound("priority", 0, math.MaxInt32)
)

// The refusals of the lifecycle verbs whose text never changes.
var (
	errKeysQueues = static(errors.Layout, "keys name different queues")
	errNoJob      = static(errors.NoJob, "the job key names no job")
	errLease      = static(errors.Lease, "the job is not active under this attempt")
	errNotDead    = static(errors.State, "the job is not dead")
	errNoPerm     = static(errors.NoPerm, "No permissions to access a key")
	errMoving     = static(errors.TryAgain, "a key of the queue is not on this node while its slot is migrated")
	setLayout     = map[string]error{
		keys.PendingSet: static(errors.Layout, "pending key must be emq:{<queue>}:pending"),
		keys.ActiveSet:  static(errors.Layout, "active key must be emq:{<queue>}:active"),
		keys.DelayedSet: static(errors.Layout, "delayed key must be emq:{<queue>}:delayed"),
		keys.DeadSet:    static(errors.Layout, "dead key must be emq:{<queue>}:dead"),
		keys.Config:     static(errors.Layout, "config key must be emq:{<queue>}:config"),
		keys.Events:     static(errors.Layout, "events key must be emq:{<queue>}:events"),
		keys.Repeats:    static(errors.Layout, "repeats key must be emq:{<queue>}:repeats"),
	}
)

// queueKeys checks a call's keys — the job key first when job is true,
// then one key per name in sets (a set, or another one-segment key) — in
// the order docs/commands.md gives: every layout, then the job id's
// namespace, then that all name one queue. It returns the queue and the
// job id (nil without a job key).
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
		q, ok := keys.SplitSetOf(a[k+i], set, queue)
		if !ok {
			return nil, nil, setLayout[set]
		}
		if queue == nil {
			queue = q
		}
		same = same && bytes.Equal(q, queue)
	}
	if job {
		if !ids.Valid(ids.Job, id) {
			return nil, nil, ErrJobKind
		}
	}
	if !same {
		return nil, nil, errKeysQueues
	}
	return queue, id, nil
}

// queueKey writes the key of queue's one-segment key name (keys.Config …)
// into p's scratch and returns a ref to it.
func queueKey(p *Plan, queue []byte, name string) Ref {
	off := len(p.Scratch)
	p.Scratch = keys.AppendSet(p.Scratch, queue, name)
	return p.span(off)
}

// openQueue opens the call's first n keys — a job row first when job is
// true, then sorted sets — refusing WRONGTYPE unless the row is a hash or
// absent and the sets sorted sets or absent, then reads the queue's
// settings (which may refuse too: WRONGTYPE, NOPERM), all before any
// stored state is judged.
func openQueue(s Server, p *Plan, queue []byte, n int, job bool) (settings, error) {
	found := s.Open(n, false, queue)
	from := 0
	if job {
		if t := s.Type(0); t != Empty && t != Hash {
			return settings{}, errors.ErrWrongType
		}
		from = 1
	}
	if err := zsets(s, from, n); err != nil {
		return settings{}, err
	}
	return readSettings(s, p, queue, found)
}

// leasedKeys checks EXTEND's and ACK's keys, the job key and the active
// key, and returns the queue and the job's id.
func leasedKeys(a [][]byte) (queue, id []byte, err error) {
	return queueKeys(a, true, keys.ActiveSet)
}

// leased runs what EXTEND and ACK share after their argument check — the
// reads: the active key's type, the queue's settings, the job active under
// the attempt — and returns the settings and a ref to the job's id.
func leased(c Call, queue, jobID []byte, attempt int64) (settings, Ref, error) {
	s, p := c.Server, c.Plan
	st, err := openQueue(s, p, queue, 2, true)
	if err != nil {
		return st, 0, err
	}
	if _, err := leasedJob(s, p, 0, attempt); err != nil {
		return st, 0, err
	}
	return st, p.Bytes(jobID), nil
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

// What verbs read of a job row: its state and attempts (to check a lease,
// or a state), or its attempts and payload (to claim it). Each field read
// costs the server a string, so a verb reads no more than it needs; a
// claim reads the error only when the job dies.
var (
	stateFields = []Ref{refState, refAttempts}
	claimFields = []Ref{refAttempts, refPayload}
	errorFields = []Ref{refError}
)

// jobRow is what a verb reads of a job row.
type jobRow struct {
	state    []byte
	attempts int64 // as attemptsOf reads them
	// counted: the row's attempts are a count (readJob), the lease token
	// of the job's last claim; a row written by hand whose attempts are
	// no count holds no token, and is active under no attempt
	counted bool
	payload Value
}

// readJob reads the state and attempts of the job row at key k, a hash.
func readJob(s Server, p *Plan, k int) jobRow {
	v := s.HashGet(p, k, stateFields)
	attempts, counted := attemptsOf(v[1])
	return jobRow{state: v[0].Bytes, attempts: attempts, counted: counted}
}

// claimedRow is the row a claim takes, of which v are the claimFields.
func claimedRow(v []Value) jobRow {
	attempts, _ := attemptsOf(v[0])
	return jobRow{attempts: attempts, payload: v[1]}
}

// attemptsOf is a row's attempts, and whether they are a count (the
// lease token of the job's last claim): 0 when absent (a row written by
// hand); the last attempt there is (2^31−1), which leaves none, when not
// a count — not an integer, or negative — so that no claim hands out
// again a token it may have handed out before.
func attemptsOf(v Value) (attempts int64, counted bool) {
	if !v.Found {
		return 0, false
	}
	if n, ok := ParseInt(v.Bytes); ok && n >= 0 {
		return n, true
	}
	return math.MaxInt32, false
}

// revivedFields is the field a verb reads to know a job's attempt budget.
var revivedFields = []Ref{refRevived}

// exhausted reports whether the job of row, at key k, has used its budget
// of max attempts: attempts − revived, revived being the attempts the
// budget does not count — those it had when REVIVE last brought it back,
// and one more for each release since (0 if none). Attempts never go back, so
// no attempt handed out is ever valid again; revived is read only when
// attempts alone reach max. A job whose attempts reached the last attempt
// there is (2^31−1) has none left, whatever it was revived with.
func exhausted(s Server, p *Plan, k int, row jobRow, max int64) bool {
	switch {
	case row.attempts < max:
		return false
	case row.attempts >= math.MaxInt32:
		return true
	}
	return row.attempts-revivedOf(s.HashGet(p, k, revivedFields)[0], row.attempts) >= max
}

// revivedOf is a row's revived, v, for a row of attempts: 0 when absent
// or not a count of them.
func revivedOf(v Value, attempts int64) int64 {
	revived, ok := ParseInt(v.Bytes)
	if !ok || revived < 0 || revived > attempts {
		return 0
	}
	return revived
}

// priorityFields is the field a verb reads to score a job in pending.
var priorityFields = []Ref{refPriority}

// priorityOf is the pending score of the job at key k: its row's priority,
// 0 when absent or not a priority.
func priorityOf(s Server, p *Plan, k int) float64 {
	return priorityScore(s.HashGet(p, k, priorityFields)[0])
}

// priorityScore is the pending score of a row whose priority field is v:
// 0 when absent or not a priority.
func priorityScore(v Value) float64 {
	n, ok := ParseInt(v.Bytes)
	if !ok || n < 0 || n > math.MaxInt32 {
		return 0
	}
	return float64(n)
}

// activeUnder reports whether the row is active under attempt: the lease
// token is the attempt a claim handed out.
func (r jobRow) activeUnder(attempt int64) bool {
	return string(r.state) == "active" && r.counted && r.attempts == attempt
}

// leasedJob reads the job row at key k and refuses unless it is a job
// active under attempt: the checks EXTEND, ACK, FAIL and SETTLE share once
// the other keys' types are known.
func leasedJob(s Server, p *Plan, k int, attempt int64) (jobRow, error) {
	switch s.Type(k) {
	case Empty:
		return jobRow{}, errNoJob
	case Hash:
	default:
		return jobRow{}, errors.ErrWrongType
	}
	row := readJob(s, p, k)
	if !row.activeUnder(attempt) {
		return row, errLease
	}
	return row, nil
}

// openJob opens the job row of id in queue — a key the verb derives, so
// the caller's ACL key permissions are checked on it first, for reading
// and writing — reading fields of it in the same step
// (Server.OpenDerived).
func openJob(s Server, p *Plan, queue, id []byte, fields []Ref) (int, []Value, error) {
	return openJobFor(s, p, queue, id, AccessReadWrite, fields)
}

// openJobFor is openJob checking the caller's permissions for access.
func openJobFor(s Server, p *Plan, queue, id []byte, access Access, fields []Ref) (int, []Value, error) {
	off := len(p.Scratch)
	p.Scratch = keys.AppendJob(p.Scratch, queue, id)
	k, v, ok := s.OpenDerived(p, p.span(off), access, fields)
	if !ok {
		return 0, nil, errNoPerm
	}
	return k, v, nil
}

// jobPrefix writes the prefix of queue's job rows, emq:{<queue>}:job:,
// into p's scratch and returns a ref to it (Server.ZRangeRows).
func jobPrefix(p *Plan, queue []byte) Ref {
	off := len(p.Scratch)
	p.Scratch = keys.AppendJob(p.Scratch, queue, nil)
	return p.span(off)
}

// openNamed opens, as openJob does, the row of a job one of the queue's
// sets or a settlement names: one that is empty while the slot migrates
// may be on the other node, errMoving (elsewhere).
func openNamed(s Server, p *Plan, queue, id []byte, fields []Ref) (int, []Value, error) {
	k, v, err := openJob(s, p, queue, id, fields)
	if err == nil {
		err = elsewhere(s, k)
	}
	return k, v, err
}

// openOnce opens, as openJobFor does, the row of job id — unless set
// holds it, opened earlier in the call, for no key is opened twice in a
// call: a second handle may outlive what the first writes (a delete frees
// the row's object; on Valkey 8.1 and later an expiry set moves it). It
// returns the row's key, which set then holds, and whether set held it.
func openOnce(s Server, p *Plan, set *idSet, queue, id []byte, access Access) (k int, again bool, err error) {
	at, k, again := set.find(id)
	if again {
		return k, true, nil
	}
	if k, _, err = openJobFor(s, p, queue, id, access, nil); err == nil {
		set.insertAt(at, id, k) // looked up once
	}
	return k, false, err
}

// elsewhere returns errMoving when key k, found empty, may hold its value
// on another node: the queue's slot is being migrated to or imported from
// another (Server.Moving), and a key of it the migration has moved is
// empty here. Outside a migration an empty key is empty; within one, a
// verb that would act on its absence — drop the id of a row that is gone,
// begin a rate window, start an events stream — refuses instead, as the
// server answers TRYAGAIN to a command whose keys the migration split.
func elsewhere(s Server, k int) error {
	if s.Type(k) == Empty && s.Moving(k) {
		return errMoving
	}
	return nil
}
