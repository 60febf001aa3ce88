package module

import (
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
