package emq

import "github.com/echomq/emq/keys"

// Limit caps how many jobs a queue's claims deliver per window:
//
//	EMQ.LIMIT 2 emq:{q}:config emq:{q}:pending <max> <window_ms>
//
// At most max jobs (1 … 1,000,000) are delivered per window_ms (1 …
// 2^31−1); max 0 removes the limit. The window starts with the first
// delivery after the last one ended, and emq:{q}:limiter counts it; a
// claim cuts a window begun under a longer window_ms to end window_ms
// from it (docs/commands.md, EMQ.LIMIT). It wakes the queue's waiting
// workers (a raised limit may let them claim) and replies 1; a limit as
// it was already is no write, no event.
var Limit = &Verb{Name: "EMQ.LIMIT", Arity: 6, Keys: 2, Cap: "limit",
	Check: func(a [][]byte, _ int64) error { _, _, _, err := checkLimit(a); return err },
	Run:   limit}

// The arguments of EMQ.LIMIT.
const limitMax, limitWindow = 4, 5

// rateFields are the config fields of a limit.
var rateFields = []Ref{refRateMax, refRateMs}

func limit(c Call) error {
	// shape and fence
	queue, max, window, err := checkLimit(c.Args)
	if err != nil {
		return err
	}

	// reads
	s, p := c.Server, c.Plan
	st, err := openControl(s, p, queue)
	if err != nil {
		return err
	}

	// plan: the waiters look again, whatever changed — a limit set as it
	// was may follow a limiter deleted by hand, which wakes nobody
	switch {
	case max == 0 && !st.rateSet, max == st.rateMax && window == st.rateMs:
		// as it was: nothing changes, nothing to record
	case max == 0:
		p.write(Write{Op: HDel, Key: 0}, rateFields...)
		st.events.queue(p, refLimited, refMax, refZero, refWindow, refZero)
	default:
		p.hset(0, refRateMax, Arg(limitMax), refRateMs, Arg(limitWindow))
		st.events.queue(p, refLimited, refMax, Arg(limitMax), refWindow, Arg(limitWindow))
	}
	p.wake(1)
	p.replyInt(1)

	// apply
	return s.Apply(p)
}

// checkLimit decides what LIMIT's arguments decide alone.
func checkLimit(a [][]byte) (queue []byte, max, window int64, err error) {
	if err := numkeys(a, 2); err != nil {
		return nil, 0, 0, err
	}
	if max, err = rateMaxBound.parse(a[limitMax]); err != nil {
		return nil, 0, 0, err
	}
	if window, err = rateMsBound.parse(a[limitWindow]); err != nil {
		return nil, 0, 0, err
	}
	queue, err = checkControl(a, keys.PendingSet)
	return queue, max, window, err
}
