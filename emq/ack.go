package emq

import "github.com/echomq/emq/errors"

// Ack acknowledges a job its caller holds:
//
//	EMQ.ACK 2 emq:{q}:job:<id> emq:{q}:active <attempt> <keep_ms> [<result>]
//
// The job must be active under attempt. It leaves the active set; with
// keep_ms 0 its row is deleted, else the row is kept, state done, for
// keep_ms (a late duplicate ENQUEUE of the id still answers 0) — with the
// job's result, when one is given. Replies 1.
var Ack = &Verb{Name: "EMQ.ACK", Arity: -6, Keys: 2, Cap: "ack",
	Check: func(a [][]byte, _ int64) error { _, _, _, _, err := checkAck(a); return err },
	Run:   ack}

// The refusals of an ack's result.
var (
	errResultKeep = static(errors.Shape, "a result needs keep_ms above 0: a row deleted at once cannot keep it")
	errAckArgs    = static(errors.Shape, "EMQ.ACK takes at most one result")
)

// ackResult is the argument of ACK's result.
const ackResult = 6

// checkAck decides what ACK's arguments decide alone.
func checkAck(a [][]byte) (attempt, keep int64, queue, id []byte, err error) {
	if len(a) > ackResult+1 {
		return 0, 0, nil, nil, errAckArgs
	}
	if err := numkeys(a, 2); err != nil {
		return 0, 0, nil, nil, err
	}
	if attempt, err = attemptBound.parse(a[4]); err != nil {
		return 0, 0, nil, nil, err
	}
	if keep, err = keepBound.parse(a[5]); err != nil {
		return 0, 0, nil, nil, err
	}
	if len(a) > ackResult && keep == 0 {
		return 0, 0, nil, nil, errResultKeep
	}
	queue, id, err = leasedKeys(a)
	return attempt, keep, queue, id, err
}

func ack(c Call) error {
	// shape and fence
	attempt, keep, queue, jobID, err := checkAck(c.Args)
	if err != nil {
		return err
	}

	// reads
	st, id, err := leased(c, queue, jobID, attempt)
	if err != nil {
		return err
	}

	// plan
	result := NoRef
	if len(c.Args) > ackResult {
		result = Arg(ackResult)
	}
	p := c.Plan
	p.zrem(1, id) // the key active
	planAck(p, st.events, 0, id, attempt, keep, c.Server.NowMs(), result, len(c.Args[len(c.Args)-1]))
	p.replyInt(1)

	// apply
	return c.Server.Apply(p)
}

// planAck plans the ack of the job at key job, active under attempt — but
// for its removal from the active set, which the caller plans: ACK with
// it, SETTLE with its claim's moves, so that the plan joins the batch's
// removals into one write. With keep 0 its row is deleted, else kept done
// for keep ms, with result unless that is NoRef (size its bytes).
func planAck(p *Plan, ev eventLog, job int, id Ref, attempt, keep, now int64, result Ref, size int) {
	switch {
	case keep == 0:
		p.write(Write{Op: Del, Key: int32(job)})
		size = 0
	case result == NoRef:
		p.hset(job, refState, refDone)
		size = 0
	default:
		p.hset(job, refState, refDone, refResult, result)
	}
	if keep > 0 {
		p.write(Write{Op: PExpireAt, Key: int32(job), AtMs: now + keep})
	}
	if ev.on() {
		ev.job(p, refCompleted, id, attempt, refResultSize, p.Decimal(int64(size)))
	}
	p.Count(JobsAcked, 1)
}
