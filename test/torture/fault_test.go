package torture

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/echomq/emq/internal/valkeytest"
)

// TestAPlanStoppedPartWayRepliesTheWritesMade: when a write of a plan fails
// after others were made — which no verb plans for, so it is a bug — the
// call replies an ERR naming the writes made and nothing else, INFO counts
// it as refused under ERR, the server log has a warning, and what was
// written stays written and reaches the replica as it is. The test build's
// EMQ.FAULTNEXT makes one write fail.
func TestAPlanStoppedPartWayRepliesTheWritesMade(t *testing.T) {
	s := startTestModule(t)
	r := valkeytest.StartReplica(t, s, valkeytest.Options{NoModule: true})
	c := mustDial(t, s.Addr)
	defer c.close()

	evt := func(i int) string { return fmt.Sprintf("EVT0018f2a4c1e%05x", i) }
	appendThree := func(stream string, first int) []string {
		cmd := []string{"EMQ.APPEND", "1", "emq:{t}:stream:" + stream, "3"}
		for i := first; i < first+3; i++ {
			cmd = append(cmd, evt(i), "1", "f", "v")
		}
		return cmd
	}
	const job, pending = "emq:{q}:job:JOB0018f2a4c1e00001", "emq:{q}:pending"
	cases := []struct {
		name    string
		fault   int
		call    []string
		verb    string           // the verb's name in INFO fields
		written map[string]int64 // what stays: a stream's length, or 1 for a key that exists
	}{
		{"the first of three appends failing writes nothing", 1, appendThree("s1", 1), "append",
			map[string]int64{"emq:{t}:stream:s1": 0}},
		{"the second failing leaves the first entry written", 2, appendThree("s2", 1), "append",
			map[string]int64{"emq:{t}:stream:s2": 1}},
		{"the third failing leaves the first two written", 3, appendThree("s3", 1), "append",
			map[string]int64{"emq:{t}:stream:s3": 2}},
		{"the pending entry failing leaves the job row written", 2,
			[]string{"EMQ.ENQUEUE", "2", job, pending, "JOB0018f2a4c1e00001", "p"}, "enqueue",
			map[string]int64{job: 1, pending: 0}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r, err := c.str("EMQ.FAULTNEXT", fmt.Sprint(tc.fault))
			require.NoError(t, err)
			require.Equal(t, int64(tc.fault), r.n, "%s", r)
			before := infoEmq(t, c)
			warnings := len(s.ModuleWarnings())

			r, err = c.str(tc.call...)
			require.NoError(t, err)
			writes := strings.Count(strings.Join(tc.call, " "), " EVT")
			if tc.verb == "enqueue" {
				writes = 2
			}
			want := fmt.Sprintf("ERR emq: write %d of %d failed after %d were made (see the server log)", tc.fault, writes, tc.fault-1)
			assert.Equal(t, "-"+want, r.String(), "the reply names the writes made, and is the only reply")

			for key, n := range tc.written {
				assert.Equal(t, n, held(t, s, key), "%s on the primary", key)
			}
			after := infoEmq(t, c)
			assert.Equal(t, int64(1), after["emq_calls_"+tc.verb]-before["emq_calls_"+tc.verb])
			assert.Equal(t, int64(0), after["emq_ok_"+tc.verb]-before["emq_ok_"+tc.verb], "no success")
			assert.Equal(t, int64(1), after["emq_refused_"+tc.verb]-before["emq_refused_"+tc.verb])
			assert.Equal(t, int64(1), after["emq_refused_err"]-before["emq_refused_err"], "counted under ERR")
			for _, e := range []string{"emq_entries_appended", "emq_jobs_admitted"} {
				assert.Equal(t, before[e], after[e], "%s: the events of a plan not made whole are not counted", e)
			}
			logged := s.ModuleWarnings()[warnings:]
			require.Len(t, logged, 1, "one warning")
			assert.Contains(t, logged[0], fmt.Sprintf("emq: write %d of %d failed (errno 5) after %d were made", tc.fault, writes, tc.fault-1))
		})
	}

	t.Run("the replica holds what the primary holds", func(t *testing.T) {
		valkeytest.WaitReplicated(t, s, r)
		for _, tc := range cases {
			for key, n := range tc.written {
				assert.Equal(t, n, held(t, r, key), "%s on the replica", key)
			}
		}
		want, err := s.Do("DEBUG", "DIGEST").ToString()
		require.NoError(t, err)
		got, err := r.Do("DEBUG", "DIGEST").ToString()
		require.NoError(t, err)
		assert.Equal(t, want, got)
	})
	t.Run("the entries that stay are the first ones", func(t *testing.T) {
		entries, err := s.Do("XRANGE", "emq:{t}:stream:s3", "-", "+").AsXRange()
		require.NoError(t, err)
		var got []string
		for _, e := range entries {
			got = append(got, e.FieldValues["id"])
		}
		assert.Equal(t, []string{evt(1), evt(2)}, got)
	})
	t.Run("the fault fires once: the next call is served whole", func(t *testing.T) {
		r, err := c.str(appendThree("s2", 4)...)
		require.NoError(t, err)
		assert.Len(t, r.elems, 3, "%s", r)
		assert.Equal(t, int64(4), held(t, s, "emq:{t}:stream:s2"))
	})
}

// held is what key holds: a stream's length, or 1 for any other key that
// exists.
func held(t *testing.T, s *valkeytest.Server, key string) int64 {
	t.Helper()
	typ, err := s.Do("TYPE", key).ToString()
	require.NoError(t, err)
	cmd := "EXISTS"
	if typ == "stream" {
		cmd = "XLEN"
	}
	n, err := s.Do(cmd, key).AsInt64()
	require.NoError(t, err)
	return n
}
