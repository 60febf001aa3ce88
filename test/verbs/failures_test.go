package verbs

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/echomq/emq/internal/valkeytest"
	"github.com/echomq/emq/keys"
)

// The FAILURES.INCR cases' ids and key.
const (
	subID = "SUB0018f2a4c1e00001"
)

var failKey = keys.Fail("t", subID, msgID)

// incr is the call EMQ.FAILURES.INCR 1 <key> <ttl>.
func incr(key, ttl string) []string {
	return []string{"EMQ.FAILURES.INCR", "1", key, ttl}
}

// requireExpiry requires key's TTL to be secs whole seconds from a moment
// of the call: PEXPIRETIME within [before, after] + secs×1000 and PTTL
// within (secs×1000 − elapsed, secs×1000].
func requireExpiry(t *testing.T, s *valkeytest.Server, key string, secs, before, after int64) {
	t.Helper()
	at, err := s.Do("PEXPIRETIME", key).AsInt64()
	require.NoError(t, err)
	require.GreaterOrEqual(t, at, before+secs*1000, "expiry before the call's clock")
	require.LessOrEqual(t, at, after+secs*1000, "expiry after the call's clock")
	pttl, err := s.Do("PTTL", key).AsInt64()
	require.NoError(t, err)
	require.LessOrEqual(t, pttl, secs*1000)
	require.Greater(t, pttl, secs*1000-1000)
}

func TestFailuresIncr(t *testing.T) {
	s := valkeytest.Start(t, valkeytest.Options{})

	t.Run("counts 1, 2, 3 and stores the count", func(t *testing.T) {
		flush(t, s)
		for want := int64(1); want <= 3; want++ {
			got, err := s.Do(incr(failKey, "60000")...).AsInt64()
			require.NoError(t, err)
			require.Equal(t, want, got)
			v, err := s.Do("GET", failKey).ToString()
			require.NoError(t, err)
			require.Equal(t, strconv.FormatInt(want, 10), v)
		}
	})

	rounding := []struct {
		ms   string
		secs int64
	}{
		{"1", 1}, {"999", 1}, {"1000", 1}, {"1001", 2}, {"1500", 2},
		{"2000", 2}, {"2001", 3}, {"86400000", 86400},
	}
	for _, c := range rounding {
		t.Run("a TTL of "+c.ms+" ms is "+strconv.FormatInt(c.secs, 10)+" s, absolute", func(t *testing.T) {
			flush(t, s)
			before := serverMs(t, s)
			must(t, s, incr(failKey, c.ms)...)
			after := serverMs(t, s)
			requireExpiry(t, s, failKey, c.secs, before, after)
		})
	}

	t.Run("the largest TTL whose expiry fits is accepted", func(t *testing.T) {
		flush(t, s)
		const ttl = 9_000_000_000_000_000_000 // 9e15 s: now + 9e18 ms fits an int64
		before := serverMs(t, s)
		must(t, s, incr(failKey, strconv.FormatInt(ttl, 10))...)
		after := serverMs(t, s)
		at, err := s.Do("PEXPIRETIME", failKey).AsInt64()
		require.NoError(t, err)
		require.GreaterOrEqual(t, at, before+ttl)
		require.LessOrEqual(t, at, after+ttl)
	})

	t.Run("a key with a TTL gets the new TTL", func(t *testing.T) {
		flush(t, s)
		must(t, s, "SET", failKey, "5", "EX", "100000")
		before := serverMs(t, s)
		got, err := s.Do(incr(failKey, "1500")...).AsInt64()
		after := serverMs(t, s)
		require.NoError(t, err)
		require.Equal(t, int64(6), got)
		requireExpiry(t, s, failKey, 2, before, after)
	})

	counts := []struct{ stored, want string }{
		{"41", "42"},
		{"0", "1"},
		{"9", "10"},
		{"99", "100"},
		{"-10", "-9"},
		{"-100", "-99"},
		{"-5", "-4"},
		{"-1", "0"},
		{"9223372036854775806", "9223372036854775807"},
		{"-9223372036854775808", "-9223372036854775807"},
	}
	for _, c := range counts {
		t.Run("a stored "+c.stored+" counts on to "+c.want, func(t *testing.T) {
			flush(t, s)
			must(t, s, "SET", failKey, c.stored)
			got, err := s.Do(incr(failKey, "1000")...).AsInt64()
			require.NoError(t, err)
			require.Equal(t, c.want, strconv.FormatInt(got, 10))
			v, err := s.Do("GET", failKey).ToString()
			require.NoError(t, err)
			require.Equal(t, c.want, v)
		})
	}
}

func TestFailuresIncrRefusals(t *testing.T) {
	s := valkeytest.Start(t, valkeytest.Options{})
	const (
		notPositive  = "EMQSHAPE fail_ttl_ms must be a positive integer"
		roundingOver = "EMQSHAPE fail_ttl_ms overflows when rounded up to seconds"
		expiryOver   = "EMQSHAPE fail_ttl_ms overflows the absolute expiry"
		badKey       = "EMQLAYOUT failure key must be emq:{<topic>}:fail:<SUB id>:<MSG id>"
		notSub       = "EMQKIND subscriber id must be SUB-namespaced"
		notMsg       = "EMQKIND message id must be MSG-namespaced"
		notInteger   = "EMQCOUNT value is not an integer or out of range"
		overflow     = "EMQCOUNT increment or decrement would overflow"
	)
	stored := func(v string) [][]string { return [][]string{{"SET", failKey, v, "PX", "100000"}} }
	cases := []refusal{
		// shape
		{name: "numkeys 0", args: []string{"EMQ.FAILURES.INCR", "0", failKey, "1000"}, want: "EMQSHAPE numkeys must be 1"},
		{name: "numkeys 2", args: []string{"EMQ.FAILURES.INCR", "2", failKey, "1000"}, want: "EMQSHAPE numkeys must be 1"},
		{name: "numkeys 01", args: []string{"EMQ.FAILURES.INCR", "01", failKey, "1000"}, want: "EMQSHAPE numkeys must be 1"},
		{name: "numkeys abc", args: []string{"EMQ.FAILURES.INCR", "abc", failKey, "1000"}, want: "EMQSHAPE numkeys must be 1"},
		{name: "a TTL of 0", args: incr(failKey, "0"), want: notPositive},
		{name: "a TTL of -1", args: incr(failKey, "-1"), want: notPositive},
		{name: "a TTL of abc", args: incr(failKey, "abc"), want: notPositive},
		{name: "a TTL of 1.5", args: incr(failKey, "1.5"), want: notPositive},
		{name: "a TTL of +5", args: incr(failKey, "+5"), want: notPositive},
		{name: "a TTL with a leading space", args: incr(failKey, " 5"), want: notPositive},
		{name: "a TTL with a trailing space", args: incr(failKey, "5 "), want: notPositive},
		{name: "a TTL with a leading zero", args: incr(failKey, "05"), want: notPositive},
		{name: "an empty TTL", args: incr(failKey, ""), want: notPositive},
		{name: "a TTL beyond int64", args: incr(failKey, "9223372036854775808"), want: notPositive},
		{name: "a TTL of int64 max overflows rounding", args: incr(failKey, "9223372036854775807"), want: roundingOver},
		{name: "a TTL one above the rounding limit", args: incr(failKey, "9223372036854774809"), want: roundingOver},
		{name: "the largest TTL that rounds still overflows the expiry", args: incr(failKey, "9223372036854774808"), want: expiryOver},
		{name: "a TTL whose absolute expiry overflows", args: incr(failKey, "9223372036854000000"), want: expiryOver},

		// layout
		{name: "a key without the emq: prefix", args: incr("emx:{t}:fail:"+subID+":"+msgID, "1000"), want: badKey},
		{name: "a key without a hash tag", args: incr("emq:t:fail:"+subID+":"+msgID, "1000"), want: badKey},
		{name: "a key with an empty topic", args: incr("emq:{}:fail:"+subID+":"+msgID, "1000"), want: badKey},
		{name: "a key with another segment name", args: incr("emq:{t}:fails:"+subID+":"+msgID, "1000"), want: badKey},
		{name: "a key missing its ids segment", args: incr("emq:{t}:fail:", "1000"), want: badKey},
		{name: "a key missing the MSG id segment", args: incr("emq:{t}:fail:"+subID, "1000"), want: badKey},
		{name: "a key holding the ids without fail:", args: incr("emq:{t}:"+subID+":"+msgID, "1000"), want: badKey},

		// kind
		{name: "a MSG id where the SUB id belongs", args: incr(keys.Fail("t", msgID, msgID), "1000"), want: notSub},
		{name: "a SUB id where the MSG id belongs", args: incr(keys.Fail("t", subID, subID), "1000"), want: notMsg},
		{name: "the two ids swapped", args: incr(keys.Fail("t", msgID, subID), "1000"), want: notSub},
		{name: "a SUB id in uppercase hex", args: incr(keys.Fail("t", "SUB0018F2A4C1E00001", msgID), "1000"), want: notSub},
		{name: "a MSG id with bit 63 set", args: incr(keys.Fail("t", subID, "MSG8000000000000000"), "1000"), want: notMsg},
		{name: "a MSG id of 18 bytes", args: incr(keys.Fail("t", subID, msgID[:18]), "1000"), want: notMsg},

		// stored values
		{name: "a stored abc", setup: stored("abc"), args: incr(failKey, "1000"), want: notInteger},
		{name: "a stored 1.5", setup: stored("1.5"), args: incr(failKey, "1000"), want: notInteger},
		{name: "a stored value with a leading space", setup: stored(" 1"), args: incr(failKey, "1000"), want: notInteger},
		{name: "a stored 01", setup: stored("01"), args: incr(failKey, "1000"), want: notInteger},
		{name: "a stored +1", setup: stored("+1"), args: incr(failKey, "1000"), want: notInteger},
		{name: "a stored -0", setup: stored("-0"), args: incr(failKey, "1000"), want: notInteger},
		{name: "a stored empty string", setup: stored(""), args: incr(failKey, "1000"), want: notInteger},
		{name: "a stored value beyond int64", setup: stored("9223372036854775808"), args: incr(failKey, "1000"), want: notInteger},
		{name: "a stored int64 max would overflow", setup: stored("9223372036854775807"), args: incr(failKey, "1000"), want: overflow},

		// types
		{name: "a hash at the key", setup: [][]string{{"HSET", failKey, "f", "v"}}, args: incr(failKey, "1000"), want: wrongType},
		{name: "a list at the key", setup: [][]string{{"RPUSH", failKey, "1"}}, args: incr(failKey, "1000"), want: wrongType},
		{name: "a stream at the key", setup: [][]string{{"XADD", failKey, "1-1", "f", "v"}}, args: incr(failKey, "1000"), want: wrongType},
		{name: "a set at the key", setup: [][]string{{"SADD", failKey, "1"}}, args: incr(failKey, "1000"), want: wrongType},
		{name: "a sorted set at the key", setup: [][]string{{"ZADD", failKey, "1", "1"}}, args: incr(failKey, "1000"), want: wrongType},

		// precedence
		{name: "shape beats layout", args: incr("bad", "0"), want: notPositive},
		{name: "a TTL overflow beats layout", args: incr("bad", "9223372036854775807"), want: roundingOver},
		{name: "layout beats kind", args: incr("emq:{t}:fail:"+msgID, "1000"), want: badKey},
		{name: "kind beats WRONGTYPE", setup: [][]string{{"HSET", keys.Fail("t", msgID, msgID), "f", "v"}},
			args: incr(keys.Fail("t", msgID, msgID), "1000"), want: notSub},
		{name: "shape beats a bad stored count", setup: stored("abc"), args: incr(failKey, "0"), want: notPositive},

		// arity
		{name: "three arguments are an arity error", args: []string{"EMQ.FAILURES.INCR", "1", failKey}, want: arityErr("EMQ.FAILURES.INCR")},
		{name: "five arguments are an arity error", args: append(incr(failKey, "1000"), "x"), want: arityErr("EMQ.FAILURES.INCR")},
	}
	runRefusals(t, s, [][]string{{"SET", keys.Fail("t", subID, "MSG0018f2a4c1e00009"), "3", "PX", "100000"}}, cases)
}

// How a count is held, as docs/commands.md states it: the verb stores the
// count as a plain string in place, so OBJECT ENCODING says raw where INCR
// would say int, while a replica, which receives SET, says int; value, TTL
// and digest are the same. Reading a count turns an int or embstr string
// into a raw one, even when the call is then refused with EMQCOUNT; nothing
// else about the key changes.
func TestFailureCountEncodingIsAsDocumented(t *testing.T) {
	p := valkeytest.Start(t, valkeytest.Options{})
	r := valkeytest.StartReplica(t, p, valkeytest.Options{NoModule: true})
	encoding := func(s *valkeytest.Server, key string) string {
		e, err := s.Do("OBJECT", "ENCODING", key).ToString()
		require.NoError(t, err)
		return e
	}

	t.Run("a stored count is raw here and int on the replica, the same count with the same expiry", func(t *testing.T) {
		flush(t, p)
		must(t, p, incr(failKey, "60000")...)
		must(t, p, incr(failKey, "60000")...)
		valkeytest.WaitReplicated(t, p, r)
		require.Equal(t, "raw", encoding(p, failKey))
		require.Equal(t, "int", encoding(r, failKey))
		for _, cmd := range [][]string{{"GET", failKey}, {"PEXPIRETIME", failKey}, {"DEBUG", "DIGEST"}} {
			want, err := p.Do(cmd...).ToAny()
			require.NoError(t, err)
			got, err := r.Do(cmd...).ToAny()
			require.NoError(t, err)
			require.Equal(t, want, got, "%q", cmd)
		}
	})

	refused := []struct{ name, stored, encoding string }{
		{"an embstr count refused with EMQCOUNT becomes raw, nothing else changes", "abc", "embstr"},
		{"an int count at int64 max refused with EMQCOUNT becomes raw, nothing else changes", "9223372036854775807", "int"},
	}
	for _, c := range refused {
		t.Run(c.name, func(t *testing.T) {
			flush(t, p)
			must(t, p, "SET", failKey, c.stored, "PX", "100000")
			want := c.encoding
			if pr := p.Product(); want == "embstr" && pr.Name == "valkey" && pr.Major == 8 && pr.Minor == 1 {
				// Valkey 8.1 embeds the key in the object: beside a key
				// this long a short string is raw (docs/COMPATIBILITY.md)
				want = "raw"
			}
			require.Equal(t, want, encoding(p, failKey))
			before := snapshot(t, p)
			require.ErrorContains(t, p.Do(incr(failKey, "1000")...).Error(), "EMQCOUNT")
			require.Equal(t, "raw", encoding(p, failKey))
			require.Equal(t, before, snapshot(t, p), "value, expiry and digest are unchanged")
		})
	}
}
