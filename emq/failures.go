package emq

import (
	"math"

	"github.com/echomq/emq/errors"
	"github.com/echomq/emq/ids"
	"github.com/echomq/emq/keys"
)

// FailuresIncr counts one failure of a message for a subscriber and sets the
// count's TTL, in one turn:
//
//	EMQ.FAILURES.INCR 1 emq:{t}:fail:<SUB id>:<MSG id> <fail_ttl_ms>
//
// The TTL is fail_ttl_ms rounded up to whole seconds. It replies the new count.
var FailuresIncr = &Verb{Name: "EMQ.FAILURES.INCR", Arity: 4, Keys: 1, Cap: "failures.incr",
	Check: func(a [][]byte, nowMs int64) error { _, err := checkFailuresIncr(a, nowMs); return err },
	Run:   failuresIncr}

func failuresIncr(c Call) error {
	s := c.Server

	// shape and fence
	atMs, err := checkFailuresIncr(c.Args, s.NowMs())
	if err != nil {
		return err
	}

	// reads
	s.Open(1, true, nil)
	var count int64
	switch s.Type(0) {
	case Empty:
	case String:
		var ok bool
		if count, ok = ParseInt(s.Value(0)); !ok {
			return errNotInteger
		}
		if count == math.MaxInt64 {
			return errOverflow
		}
	default:
		return errors.ErrWrongType
	}

	// plan
	p := c.Plan
	p.Writes = append(p.Writes, Write{Op: SetPXAt, Count: count + 1, AtMs: atMs})
	p.replyInt(count + 1)
	p.Count(FailuresCounted, 1)

	// apply
	return s.Apply(p)
}

// checkFailuresIncr decides what the arguments alone decide — numkeys, the
// TTL, the key's layout, its ids — and returns the absolute expiry, in Unix
// ms, that the TTL sets at nowMs.
func checkFailuresIncr(a [][]byte, nowMs int64) (atMs int64, err error) {
	const failKey, ttlArg = 2, 3
	if err := numkeys(a, 1); err != nil {
		return 0, err
	}
	ttlMs, ok := positive(a[ttlArg])
	if !ok {
		return 0, errTTL
	}
	if ttlMs > math.MaxInt64-999 {
		return 0, errTTLRounding
	}
	secs := (ttlMs + 999) / 1000
	if secs > (math.MaxInt64-nowMs)/1000 {
		return 0, errTTLExpiry
	}
	_, sub, msg, ok := keys.SplitFail(a[failKey])
	if !ok {
		return 0, errFailLayout
	}
	if !ids.Valid(ids.Sub, sub) {
		return 0, errSubKind
	}
	if !ids.Valid(ids.Msg, msg) {
		return 0, errMsgKind
	}
	return nowMs + secs*1000, nil
}
