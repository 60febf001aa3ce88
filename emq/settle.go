package emq

import (
	"bytes"

	"github.com/echomq/emq/errors"
	"github.com/echomq/emq/ids"
	"github.com/echomq/emq/keys"
)

// Settle settles the jobs a worker finished and claims the next ones of
// the same queue, in one turn — a worker's one round trip per batch of
// jobs:
//
//	EMQ.SETTLE 4 emq:{q}:pending emq:{q}:active emq:{q}:delayed emq:{q}:dead <lease_ms> <count> <max_attempts> <n> <settlement>…
//	<settlement> = ACK <JOB id> <attempt> <keep_ms>
//	             | DONE <JOB id> <attempt> <keep_ms> <result>
//	             | FAIL <JOB id> <attempt> <backoff_ms> <error>
//	             | RELEASE <JOB id> <attempt>
//
// Each settlement is EMQ.ACK (DONE: with a result) or EMQ.FAIL of a job of
// the queue, with every rule of the verb, or a release: a job its worker
// gives back unstarted goes to pending at its priority, the attempt not
// spent (planRelease). One the stored data refuses —
// its row missing (EMQNOJOB), not active under its attempt (EMQLEASE), of
// the wrong type, outside the caller's ACL — is not applied and replies
// its error in its place, and the rest of the call goes on. Then, as
// EMQ.CLAIM, it claims up to count (0 … 1000) jobs; a job a settlement
// failed back to pending may be among them, a released one not. It
// replies [[<one reply per settlement: 1, or the failed job's new state,
// or an error>], <the claim's reply>].
var Settle = &Verb{Name: "EMQ.SETTLE", Arity: -10, Keys: 4, Cap: "settle",
	Check: func(a [][]byte, _ int64) error { _, err := checkSettle(a, nil); return err },
	Run:   settle}

// settlement is one job a SETTLE call settles.
type settlement struct {
	kind    byte // 'A' ack, 'D' done (an ack with a result), 'F' fail, 'R' release
	id      int  // the argument holding its JOB id
	attempt int64
	ms      int64 // keep_ms, or backoff_ms; 0 for a release
	text    int   // the argument of the result or the error; 0 for none
}

// The arguments of EMQ.SETTLE, and its bounds and refusals.
const settleN, settleFirst = 9, 10

var (
	settleCountBound = newBound("count", 0, 1000)
	settleNBound     = newBound("n", 0, 1000)
)

func settle(c Call) error {
	// shape and fence
	p := c.Plan
	a, err := checkSettle(c.Args, p)
	if err != nil {
		return err
	}

	// reads: the turn's keys, then each settlement's job row
	t, err := openTurn(c, a.queue)
	if err != nil {
		return err
	}
	s := c.Server
	p.reply(ReplyArray, 0, 2)
	p.reply(ReplyArray, 0, int64(len(p.settlements)))
	for _, st := range p.settlements {
		err := t.settleOne(c.Args, st, a.maxAttempts)
		if err == errMoving { // the whole call waits out the migration
			return err
		}
		if err != nil {
			p.reply(ReplyError, refusalText(p, err), 0)
			p.Count(SettlesRefused, 1)
			continue
		}
		p.Count(Settled, 1)
	}

	// plan: the claim
	if err := t.run(a); err != nil {
		return err
	}

	// apply
	return s.Apply(p)
}

// settleOne plans one settlement and its reply, or returns the refusal of
// it the stored data decides.
func (t *turn) settleOne(args [][]byte, st settlement, max int64) error {
	s, p := t.s, t.p
	id := args[st.id]
	if t.done.has(id) {
		return errLease // settled earlier in the call: not active any more
	}
	// an earlier settlement of the id, refused, opened and checked the row
	// already: an empty one while the slot migrates refuses the whole call
	k, again, err := openOnce(s, p, &t.opened, t.queue, id, AccessReadWrite)
	if err == nil && !again {
		err = elsewhere(s, k) // as openNamed
	}
	if err != nil {
		return err
	}
	row, err := leasedJob(s, p, k, st.attempt)
	if err != nil {
		return err
	}
	ref := Arg(st.id)
	t.done.add(id, k)
	switch st.kind {
	case 'F':
		to := failSets{pending: claimPending, active: claimActive, delayed: claimDelayed, dead: claimDead}
		errText := Value{Bytes: args[st.text], Ref: Arg(st.text), Found: true}
		state, priority := planFail(s, p, t.st.events, k, to, ref, row, st.attempt, st.ms, max, t.now, errText)
		p.reply(ReplyBulk, state, 0)
		if state == refPending { // the claim may take it back at once
			m := Member{Bytes: id, Ref: ref, Score: priority}
			t.cands = append(t.cands, candidate{member: m, job: k, from: claimPending})
		}
	case 'R': // left for another call: the claim does not see it in pending
		planRelease(s, p, t.st.events, k, ref, row)
		p.replyInt(1)
	default:
		result, size := NoRef, 0
		if st.kind == 'D' {
			result, size = Arg(st.text), len(args[st.text])
		}
		t.left = append(t.left, setMove{key: claimActive, member: ref}) // planned with the claim's moves
		planAck(p, t.st.events, k, ref, st.attempt, st.ms, t.now, result, size)
		p.replyInt(1)
	}
	return nil
}

// releaseFields are what a release reads of the row: the priority it goes
// back to pending at, and the attempts its budget does not count.
var releaseFields = []Ref{refPriority, refRevived}

// planRelease plans the release of the job at key job (row, read), active
// under its attempts, which its worker gives back unstarted: it leaves
// active for pending, at its priority. The attempt is not spent: revived,
// the attempts the budget does not count, gains one, so attempts − revived
// is what it was before the claim — while the attempts, the lease tokens,
// never go back. Its error, if any, stays.
func planRelease(s Server, p *Plan, ev eventLog, job int, id Ref, row jobRow) {
	v := s.HashGet(p, job, releaseFields)
	p.zrem(claimActive, id)
	p.zadd(claimPending, id, priorityScore(v[0]))
	p.hset(job, refState, refPending, refRevived, p.Decimal(revivedOf(v[1], row.attempts)+1))
	ev.job(p, refReleased, id, row.attempts)
	p.Count(JobsReleased, 1)
}

// openRow opens the row of job id, reading fields of it, as openNamed
// does — or, when the call opened it already (a settlement, which refused
// or settled it; a tick, which found its job made), reads them of that
// key (see openOnce).
func (t *turn) openRow(id []byte, fields []Ref) (int, []Value, error) {
	if k, ok := t.opened.key(id); ok {
		if t.s.Type(k) != Hash {
			return k, make([]Value, len(fields)), nil // zero, as openNamed reads another type (a rare path)
		}
		return k, t.s.HashGet(t.p, k, fields), nil
	}
	return openNamed(t.s, t.p, t.queue, id, fields)
}

// refusalText writes err's reply text, "<CODE> <message>", into p's
// scratch and returns a ref to it.
func refusalText(p *Plan, err error) Ref {
	off := len(p.Scratch)
	if r, ok := err.(*errors.Refusal); ok {
		p.Scratch = append(p.Scratch, r.Code.String()...)
		p.Scratch = append(p.Scratch, ' ')
		p.Scratch = append(p.Scratch, r.Msg...)
	} else {
		p.Scratch = append(p.Scratch, "ERR "...)
		p.Scratch = append(p.Scratch, err.Error()...)
	}
	return p.span(off)
}

// checkSettle decides what SETTLE's arguments decide alone, in
// docs/commands.md's order: the numbers and the settlements' split, then
// the keys' layouts, the JOB ids, and the keys agreeing. With p, it
// gathers the settlements into p.settlements.
func checkSettle(a [][]byte, p *Plan) (c claimArgs, err error) {
	if c, err = claimNumbers(a, settleCountBound); err != nil {
		return c, err
	}
	n, err := settleNBound.parse(a[settleN])
	if err != nil {
		return c, err
	}
	var list []settlement
	if p != nil {
		list = p.settlements[:0]
	}
	at := settleFirst
	for i := 1; i <= int(n); i++ {
		st, next, err := parseSettlement(a, at, i)
		if err != nil {
			return c, err
		}
		if p != nil {
			list = append(list, st)
		}
		at = next
	}
	if at != len(a) {
		return c, errors.New(errors.Shape, "the arguments hold more than n=%d settlements", n)
	}
	if p != nil {
		p.settlements = list
	}
	// layouts, then the ids, then agreement
	var queue []byte
	same := true
	for i, set := range []string{keys.PendingSet, keys.ActiveSet, keys.DelayedSet, keys.DeadSet} {
		q, ok := keys.SplitSetOf(a[2+i], set, queue)
		if !ok {
			return c, setLayout[set]
		}
		if queue == nil {
			queue = q
		}
		same = same && bytes.Equal(q, queue)
	}
	for i, at := 1, settleFirst; at < len(a); i++ {
		if !ids.Valid(ids.Job, a[at+1]) {
			return c, errors.New(errors.Kind, "settlement %d: job id must be JOB-namespaced", i)
		}
		_, args := settlementKind(a[at])
		at += args
	}
	if !same {
		return c, errKeysQueues
	}
	c.queue = queue
	return c, nil
}

// settlementKinds are the kinds of settlement, by their words (in any
// case), with the arguments each takes, its word included.
var settlementKinds = []struct {
	word []byte
	kind byte
	args int
}{{[]byte("ACK"), 'A', 4}, {[]byte("DONE"), 'D', 5}, {[]byte("FAIL"), 'F', 5}, {[]byte("RELEASE"), 'R', 3}}

// settlementKind is the kind of settlement word names and the arguments
// it takes; 0 and 0 for a word that names none. The words match in any
// ASCII case, as the server's keywords do (strcasecmp) — not by Unicode
// folding, under which "AC\u212A" (KELVIN SIGN) would be ACK.
func settlementKind(word []byte) (kind byte, args int) {
	for _, k := range settlementKinds {
		if equalFoldASCII(word, k.word) {
			return k.kind, k.args
		}
	}
	return 0, 0
}

// equalFoldASCII reports whether a and b, b upper-case ASCII, are equal
// under ASCII case folding.
func equalFoldASCII(a, b []byte) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		c := a[i]
		if 'a' <= c && c <= 'z' {
			c -= 'a' - 'A'
		}
		if c != b[i] {
			return false
		}
	}
	return true
}

// parseSettlement reads settlement number i (from 1) at argument at, and
// returns it and the argument after it.
func parseSettlement(a [][]byte, at, i int) (st settlement, next int, err error) {
	if at >= len(a) {
		return st, 0, errors.New(errors.Shape, "the arguments hold fewer than n settlements: settlement %d is missing", i)
	}
	kind := a[at]
	var need int
	st.kind, need = settlementKind(kind)
	if need == 0 {
		return st, 0, errors.New(errors.Shape, "settlement %d: the kind must be ACK, DONE, FAIL or RELEASE", i)
	}
	if at+need > len(a) {
		return st, 0, errors.New(errors.Shape, "settlement %d: %s takes %d arguments", i, kind, need-1)
	}
	st.id = at + 1
	if st.attempt, err = attemptBound.parse(a[at+2]); err != nil {
		return st, 0, errors.New(errors.Shape, "settlement %d: %s", i, err.(*errors.Refusal).Msg)
	}
	if st.kind == 'R' {
		return st, at + need, nil
	}
	b := keepBound
	if st.kind == 'F' {
		b = backoffBound
	}
	if st.ms, err = b.parse(a[at+3]); err != nil {
		return st, 0, errors.New(errors.Shape, "settlement %d: %s", i, err.(*errors.Refusal).Msg)
	}
	if st.kind == 'D' && st.ms == 0 {
		return st, 0, errors.New(errors.Shape, "settlement %d: %s", i, errResultKeep.Msg)
	}
	if need == 5 {
		st.text = at + 4
	}
	return st, at + need, nil
}
