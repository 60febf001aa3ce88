package emq

import (
	"github.com/echomq/emq/errors"
	"github.com/echomq/emq/keys"
)

// Pause stops a queue's claims:
//
//	EMQ.PAUSE 2 emq:{q}:config emq:{q}:pending
//
// A paused queue's claims still sweep (promote, requeue stalls, tick) but
// take nothing: CLAIM replies nil, BCLAIM waits. Replies 1, or 0 when the
// queue was paused already (nothing written).
var Pause = &Verb{Name: "EMQ.PAUSE", Arity: 4, Keys: 2, Cap: "pause",
	Check: func(a [][]byte, _ int64) error { _, err := checkControl(a, keys.PendingSet); return err },
	Run:   func(c Call) error { return pause(c, true) }}

// Resume lets a paused queue's claims take jobs again, and wakes its
// waiting workers:
//
//	EMQ.RESUME 2 emq:{q}:config emq:{q}:pending
//
// Replies 1, or 0 when the queue was not paused (nothing written).
var Resume = &Verb{Name: "EMQ.RESUME", Arity: 4, Keys: 2, Cap: "resume",
	Check: func(a [][]byte, _ int64) error { _, err := checkControl(a, keys.PendingSet); return err },
	Run:   func(c Call) error { return pause(c, false) }}

// pausedFields is the config field of a paused queue.
var pausedFields = []Ref{refPaused}

func pause(c Call, paused bool) error {
	// shape and fence
	queue, err := checkControl(c.Args, keys.PendingSet)
	if err != nil {
		return err
	}

	// reads
	s, p := c.Server, c.Plan
	st, err := openControl(s, p, queue)
	if err != nil {
		return err
	}

	// plan
	switch {
	case st.paused == paused:
		if !paused { // not paused: its waiters look all the same (after a hand edit, say)
			p.wake(1)
		}
		p.replyInt(0)
		return s.Apply(p)
	case paused:
		p.hset(0, refPaused, refOne)
		st.events.queue(p, refPaused)
	default:
		p.write(Write{Op: HDel, Key: 0}, pausedFields...)
		st.events.queue(p, refResumed)
		p.wake(1) // the pending set: its waiters claim again
	}
	p.replyInt(1)

	// apply
	return s.Apply(p)
}

// checkControl decides what a queue setting verb's arguments decide alone:
// numkeys 2, then the config key and the second key (second names it), in
// layout then agreement order. It returns the queue.
func checkControl(a [][]byte, second string) ([]byte, error) {
	if err := numkeys(a, 2); err != nil {
		return nil, err
	}
	queue, _, err := queueKeys(a, false, keys.Config, second)
	return queue, err
}

// openControl runs the reads PAUSE, RESUME and LIMIT share — the config a
// hash or absent, the pending key a sorted set or absent — and returns the
// queue's settings. The config is a declared key of these verbs.
func openControl(s Server, p *Plan, queue []byte) (settings, error) {
	s.Open(2, false, nil)
	if t := s.Type(1); t != Empty && t != ZSet {
		return settings{}, errors.ErrWrongType
	}
	var st settings
	return st, st.read(s, p, queue, declaredConfig(s, 0))
}
