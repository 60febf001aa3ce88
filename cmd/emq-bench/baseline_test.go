package main

import (
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/echomq/emq/internal/valkeytest"
)

func TestBaselineCells(t *testing.T) {
	native := []float64{10100, 10000, 10200}
	tests := []struct {
		name string
		base baselineResult
		want []string
	}{
		{"within 3 % of the baseline passes", baselineResult{cgResult: cgResult{perOp: []float64{10000, 9900, 10050}}},
			[]string{"10000 ±1.0%", "**1.010** ±3 % PASS"}},
		{"more than 3 % above the baseline misses", baselineResult{cgResult: cgResult{perOp: []float64{9500}}},
			[]string{"9500 ±0.0%", "**1.063** > +3 % MISS"}},
		{"more than 3 % below the baseline passes and says so", baselineResult{cgResult: cgResult{perOp: []float64{11000}}},
			[]string{"11000 ±0.0%", "**0.918** < −3 %: fewer, PASS"}},
		{"a row the baseline does not serve says —", baselineResult{refused: &replyError{command: "EMQ.SCHEDULE", reply: "ERR unknown command"}},
			[]string{"—", "—"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, tt.base.cells(native))
		})
	}
}

func TestCgLine(t *testing.T) {
	r := row{name: "ENQUEUE", variants: []variant{{name: "EMQ.ENQUEUE"}, {name: "EVALSHA admit script", target: 0.65}}}
	res := []cgResult{{perOp: []float64{27401}}, {perOp: []float64{42918}}}
	t.Run("without a baseline the line has the ratio to the composition only", func(t *testing.T) {
		line := cgLine(r, 1, res, nil)
		assert.Equal(t, "| ENQUEUE | EMQ.ENQUEUE | EVALSHA admit script | **0.638** | ≤ 0.65 PASS | 27401 ±0.0% | 42918 ±0.0% |\n", line)
		assert.Equal(t, strings.Count(strings.SplitN(cgHeader(false), "\n", 2)[0], "|"), strings.Count(line, "|"))
	})
	t.Run("with a baseline the line adds its instructions and the ratio to them", func(t *testing.T) {
		line := cgLine(r, 1, res, &baselineResult{cgResult: cgResult{perOp: []float64{27000}}})
		assert.Equal(t, "| ENQUEUE | EMQ.ENQUEUE | EVALSHA admit script | **0.638** | ≤ 0.65 PASS | 27401 ±0.0% | 42918 ±0.0% | 27000 ±0.0% | **1.015** ±3 % PASS |\n", line)
		assert.Equal(t, strings.Count(strings.SplitN(cgHeader(true), "\n", 2)[0], "|"), strings.Count(line, "|"))
	})
	t.Run("a row the baseline refused has — in its columns", func(t *testing.T) {
		line := cgLine(r, 1, res, &baselineResult{refused: &replyError{command: "EMQ.ENQUEUE", reply: "ERR unknown command"}})
		assert.True(t, strings.HasSuffix(line, "| — | — |\n"), line)
	})
}

func TestRefusalOf(t *testing.T) {
	first := &replyError{command: "EMQ.SCHEDULE", reply: "ERR unknown command"}
	tests := []struct {
		name string
		err  error
		want *replyError
	}{
		{"an error reply is a refusal", first, first},
		{"among a phase's connections, the first refusal is taken", errors.Join(nil, first, &replyError{command: "x", reply: "ERR"}), first},
		{"a broken connection is no refusal", io.ErrUnexpectedEOF, nil},
		{"no error is no refusal", nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Same(t, tt.want, refusalOf(tt.err))
		})
	}
}

func TestRefusalNote(t *testing.T) {
	t.Run("a short reply is quoted whole", func(t *testing.T) {
		assert.Equal(t, "- SCHEDULE: the baseline does not serve EMQ.SCHEDULE; it replied \"ERR unknown command 'EMQ.SCHEDULE'\"\n",
			refusalNote("SCHEDULE", &replyError{command: "EMQ.SCHEDULE", reply: "ERR unknown command 'EMQ.SCHEDULE'"}))
	})
	t.Run("a long reply is cut to its start, on one line", func(t *testing.T) {
		note := refusalNote("CLAIM", &replyError{command: "EMQ.CLAIM", reply: "ERR unknown command 'EMQ.CLAIM', with args beginning with: '4' 'emq:{bench:r1v0c0}:pending'"})
		assert.Equal(t, "- CLAIM: the baseline does not serve EMQ.CLAIM; it replied \"ERR unknown command 'EMQ.CLAIM', with args beginning with: '4' 'emq:{ben…\"\n", note)
	})
}

// A phase refused — a server without the verb — leaves its connection
// usable: the next phase on it is not failed by the old refusal.
func TestPhaseAfterARefusalRuns(t *testing.T) {
	s := valkeytest.Start(t, valkeytest.Options{NoModule: true})
	conns, err := dialAll(s.Addr, 2)
	require.NoError(t, err)
	defer closeAll(conns)
	r := enqueueRow()
	gens := []*opGen{newOpGen("a", &r, ""), newOpGen("b", &r, "")}

	_, err = runPhase(conns, &r.variants[0], gens, 64, 8)
	require.NotNil(t, refusalOf(err), "EMQ.ENQUEUE on a server without the module: %v", err)
	assert.ErrorContains(t, err, "unknown command")

	pipelined := &r.variants[len(r.variants)-1]
	require.Equal(t, "HSET + ZADD pipelined", pipelined.name)
	_, err = runPhase(conns, pipelined, gens, 64, 8)
	require.NoError(t, err)
}
