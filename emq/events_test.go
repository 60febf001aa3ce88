package emq

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/echomq/emq/keys"
)

// TestAnEventCutsAnErrorTooLongForAStreamEntry: the error a failed or a
// dead event carries is cut to maxEventText bytes — past a stream entry's
// 1 GiB the append would fail, and with it the call and every later claim
// of the job — while the row keeps it whole; an error that fits is the
// event's as it is.
func TestAnEventCutsAnErrorTooLongForAStreamEntry(t *testing.T) {
	defer func(n int) { maxEventText = n }(maxEventText)
	maxEventText = 8
	const now = int64(1_800_000_000_000)
	const id = "JOB0018f2a4c1e00001"
	sets := []string{keys.Pending("q"), keys.Set("q", keys.ActiveSet), keys.Set("q", keys.DelayedSet), keys.Set("q", keys.DeadSet)}
	fail := func(text string) []string {
		return append(append([]string{"EMQ.FAIL", "5", keys.Job("q", id)}, sets...), "1", "0", "1", text)
	}
	claim := append(append([]string{"EMQ.CLAIM", "4"}, sets...), "30000", "1", "1")
	active := map[string]string{"state": "active", "attempts": "1", "payload": "p"}
	for _, tc := range []struct {
		name     string
		args     []string
		row      map[string]string
		set      int    // the set holding the job
		event    string // the event appended
		want     string // its error
		rowError string // the row's error written, "" for none
	}{
		{"a failure's error that fits", fail("too long"), active, 1, "failed", "too long", "too long"},
		{"a failure's error past the bound", fail("much too long"), active, 1, "failed", "much too", "much too long"},
		{"a dead job's last error past the bound", claim,
			map[string]string{"state": "pending", "attempts": "1", "payload": "p", "error": "much too long"}, 0, "dead", "much too", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			numkeys, _ := strconv.Atoi(tc.args[1])
			declared := tc.args[2 : 2+numkeys]
			s := &fakeServer{now: now}
			s.queue = newFakeQueue(declared)
			s.queue.rows[keys.Set("q", keys.Config)] = fakeRow{typ: Hash, fields: map[string]string{"events": "100"}}
			s.queue.rows[keys.Job("q", id)] = fakeRow{typ: Hash, fields: tc.row}
			s.queue.addSet(sets[tc.set], []fakeMember{{id, float64(now + 1000)}})
			for _, name := range declared {
				typ := s.queue.rows[name].typ
				if len(s.queue.sets[name]) > 0 {
					typ = ZSet
				}
				s.types = append(s.types, typ)
			}
			verb := map[string]*Verb{"EMQ.FAIL": Fail, "EMQ.CLAIM": Claim}[tc.args[0]]
			require.Nil(t, call(t, verb, tc.args, s, Limits{SweepBatch: 100}))
			var event map[string]string
			rowError := ""
			for _, w := range s.plan.Writes {
				fields := s.refs(tc.args, w)
				pairs := map[string]string{}
				for i := 0; i+1 < len(fields); i += 2 {
					pairs[fields[i]] = fields[i+1]
				}
				switch w.Op {
				case XAddAuto:
					event = pairs
				case HSet:
					rowError += pairs["error"]
				}
			}
			require.NotNil(t, event, "an event appended")
			assert.Equal(t, tc.event, event["event"])
			assert.Equal(t, tc.want, event["error"], "the event's error")
			assert.Equal(t, tc.rowError, rowError, "the row's error, whole")
		})
	}
}
