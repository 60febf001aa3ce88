package module

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/echomq/emq/emq"
	emqerrors "github.com/echomq/emq/errors"
	"github.com/echomq/emq/registry"
)

// fields records the INFO fields written to it.
type fields map[string]int64

func (fields) Section(string)              {}
func (f fields) Int(field string, v int64) { f[field] = v }

// Every refusal code and every event has its counter, whatever its number:
// the counters are sized by the count of codes and events, not by the
// largest one a verb used when they were written.
func TestEveryCodeAndEventIsCounted(t *testing.T) {
	rows := registry.Rows()
	s := newStats(rows)
	for i := range s.verbs {
		v := &s.verbs[i]
		for _, code := range emqerrors.Codes {
			v.calls++
			v.refused[code]++
		}
		v.calls++ // and one success
	}
	var p emq.Plan
	for e := range p.Events {
		p.Events[e] = int64(e) + 1
	}
	s.count(&p)
	got := fields{}
	s.info(got)

	for _, code := range emqerrors.Codes {
		t.Run("refusals coded "+code.String()+" are counted", func(t *testing.T) {
			field := "refused_" + strings.ToLower(code.String())
			require.Contains(t, got, field)
			assert.Equal(t, int64(len(rows)), got[field], "one per verb")
		})
	}
	for e, name := range emq.EventNames {
		t.Run("event "+name+" is counted", func(t *testing.T) {
			require.Contains(t, got, name)
			assert.Equal(t, int64(e)+1, got[name])
		})
	}
	for _, v := range s.verbs {
		t.Run(v.name+"'s calls are its successes and its refusals", func(t *testing.T) {
			assert.Equal(t, int64(len(emqerrors.Codes)+1), got["calls_"+v.name])
			assert.Equal(t, int64(len(emqerrors.Codes)), got["refused_"+v.name])
			assert.Equal(t, int64(1), got["ok_"+v.name])
		})
	}
}
