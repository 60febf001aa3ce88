package module

import (
	stderrors "errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/echomq/emq/emq"
	emqerrors "github.com/echomq/emq/errors"
	"github.com/echomq/emq/registry"
)

// Every refusal code and every event has its counter, whatever its number:
// the counters are sized by the count of codes and events, not by the
// largest one a verb used when they were written. (INFO emq showing a field
// for each is test/surface's.)
func TestEveryCodeAndEventIsCounted(t *testing.T) {
	rows := registry.Rows()
	s := newStats(rows)
	for i := range s.verbs {
		for _, code := range emqerrors.Codes {
			s.verbs[i].refused[code]++
		}
	}
	var p emq.Plan
	for e := range emq.NumCounters {
		p.Count(e, int64(e)+1)
	}
	s.count(&p)

	byCode := s.refusedByCode()
	for _, code := range emqerrors.Codes {
		t.Run("refusals coded "+code.String()+" are counted", func(t *testing.T) {
			assert.Equal(t, int64(len(rows)), byCode[code], "one per verb")
		})
	}
	for _, v := range s.verbs {
		t.Run(v.name+"'s refusals add up over every code", func(t *testing.T) {
			assert.Equal(t, int64(len(emqerrors.Codes)), v.refusedCalls())
		})
	}
	for e, name := range emq.CounterNames {
		t.Run("event "+name+" is counted", func(t *testing.T) {
			require.NotEmpty(t, name, "event %d has a name in INFO", e)
			assert.Equal(t, int64(e)+1, s.counts[e])
		})
	}
}

// A verb's error is replied and counted under the code of the refusal it
// is or wraps, and one that is no refusal as ERR: every refused call counts
// under a code INFO emq shows.
func TestAVerbsErrorIsRepliedAndCountedUnderACode(t *testing.T) {
	kind := emqerrors.New(emqerrors.Kind, "job id must be JOB-namespaced")
	for _, tc := range []struct {
		name string
		err  error
		code emqerrors.Code
		msg  string
	}{
		{"a refusal under its code", kind, emqerrors.Kind, "job id must be JOB-namespaced"},
		{"a wrapped refusal under its code", fmt.Errorf("claim: %w", kind), emqerrors.Kind, "job id must be JOB-namespaced"},
		{"an error that is no refusal as ERR", stderrors.New("the plan overflowed"), emqerrors.Internal, "the plan overflowed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := refusalOf(tc.err)
			assert.Equal(t, tc.code, r.Code)
			assert.Equal(t, tc.msg, r.Msg)
			assert.Contains(t, emqerrors.Codes, r.Code, "a code INFO emq counts")
		})
	}
}
