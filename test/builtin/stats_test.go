package builtin

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/echomq/emq/ids"
	"github.com/echomq/emq/internal/valkeytest"
	"github.com/echomq/emq/keys"
)

func TestStatsCountVerbsAndRefusalsLikeBuiltins(t *testing.T) {
	s := start(t, valkeytest.Options{})
	m, err := ids.NewMinter(14)
	require.NoError(t, err)
	job, sub, msg := m.Mint(ids.Job), m.Mint(ids.Sub), m.Mint(ids.Msg)
	ok(t, s, "SET", keys.Pending("wrong"), "x")
	ok(t, s, "SET", keys.Fail("t", sub.String(), msg.String()), "abc")
	ok(t, s, "CONFIG", "RESETSTAT")

	calls := []step{
		{enqueue("q", job, "p"), want{n: 1}},
		{enqueue("q", job, "p"), want{n: 0}},
		{enqueue("q", m.Mint(ids.Msg), "p"), want{code: "EMQKIND"}},
		{enqueue("wrong", m.Mint(ids.Job), "p"), want{code: "WRONGTYPE"}},
		{verb("EMQ.ENQUEUE", []string{"emq:q"}, "a", "b", "c"), want{code: "EMQSHAPE"}},
		{failuresIncr("t", sub, msg, 1000), want{code: "EMQCOUNT"}},
		{appendTo("t", "s", entry{m.Mint(ids.Evt), []string{"id", "x"}}), want{code: "EMQSHAPE"}},
	}
	for _, c := range calls {
		expect(t, c.c, s.Do(c.c.argv()...), c.w)
	}
	s.Do("EMQ.ENQUEUE", "2") // the server's own arity rule: rejected before the verb runs

	t.Run("INFO errorstats counts every refusal by its code", func(t *testing.T) {
		counts := s.Info("errorstats")
		for code, n := range map[string]string{"EMQKIND": "1", "WRONGTYPE": "1", "EMQSHAPE": "2", "EMQCOUNT": "1", "ERR": "1"} {
			assert.Equal(t, "count="+n, counts["errorstat_"+code], code)
		}
	})
	t.Run("INFO commandstats counts calls, failed calls and rejected calls", func(t *testing.T) {
		stats := s.Info("commandstats")
		assert.Contains(t, stats["cmdstat_EMQ.ENQUEUE"], "calls=5,")
		assert.Contains(t, stats["cmdstat_EMQ.ENQUEUE"], "rejected_calls=1,failed_calls=3")
		assert.Contains(t, stats["cmdstat_EMQ.FAILURES.INCR"], "failed_calls=1")
		assert.Contains(t, stats["cmdstat_EMQ.APPEND"], "failed_calls=1")
	})
}
