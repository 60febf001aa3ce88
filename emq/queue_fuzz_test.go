package emq

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/echomq/emq/keys"
)

// The fuzz targets of the verbs 0.3 added. Each holds what every verb
// holds (call): no panic, a refusal with a code docs/commands.md names,
// Check refusing what the arguments decide exactly as the verb does, and
// an acceptance applied once; and what its verb's own plan must be.

// fuzzServer is a fake whose declared keys have the types of types (a
// byte each) and whose queue may have a config (the fuzzed fields).
func fuzzServer(args []string, nkeys int, types []byte, config string, now int64) *fakeServer {
	s := &fakeServer{now: now & (1<<46 - 1)}
	for i := range nkeys {
		var b byte
		if i < len(types) {
			b = types[i]
		}
		s.types = append(s.types, keyType(b))
	}
	s.queue = newFakeQueue(args[2 : 2+nkeys : 2+nkeys]) // clipped: the fake appends the keys it opens
	for i, name := range args[2 : 2+nkeys] {
		s.queue.rows[name] = fakeRow{typ: s.types[i], fields: map[string]string{"state": "active", "attempts": "1", "payload": "p"}}
	}
	if config != "" {
		fields := map[string]string{}
		for _, kv := range strings.Split(config, ",") {
			k, v, _ := strings.Cut(kv, "=")
			fields[k] = v
		}
		s.queue.rows[keys.Set("q", keys.Config)] = fakeRow{typ: Hash, fields: fields}
	}
	return s
}

func FuzzSchedule(f *testing.F) {
	f.Add("3", "emq:{q}:job:JOB0018f2a4c1e00001", "emq:{q}:pending", "emq:{q}:delayed", "JOB0018f2a4c1e00001", "5", "0", []byte{0, 0, 0}, "", int64(1_700_000_000_000))
	f.Add("3", "emq:{q}:job:JOB0018f2a4c1e00001", "emq:{q}:pending", "emq:{q}:delayed", "JOB0018f2a4c1e00001", "0", "1800000000000", []byte{0, 5, 5}, "events=10", int64(1_700_000_000_000))
	f.Add("3", "emq:{q}:job:JOB0018f2a4c1e00001", "emq:{q}:delayed", "emq:{q}:pending", "JOB0018f2a4c1e00001", "1", "0", []byte{3, 0, 0}, "paused=1", int64(0))
	f.Fuzz(func(t *testing.T, numkeys, job, pending, delayed, id, priority, at string, types []byte, config string, now int64) {
		args := []string{"EMQ.SCHEDULE", numkeys, job, pending, delayed, id, "payload", priority, at}
		s := fuzzServer(args, 3, types, config, now)
		if call(t, Schedule, args, s, Limits{}) != nil || s.types[0] == Hash {
			return
		}
		// the row, then the set; a queue keeping events has its entry
		// planned between them (the host appends it before either)
		ws := s.plan.Writes
		require.Contains(t, []int{2, 3}, len(ws), "the row, an events entry or none, the set")
		require.Equal(t, HSet, ws[0].Op, "the row first")
		add := ws[len(ws)-1]
		for _, w := range ws[1 : len(ws)-1] {
			require.Equal(t, XAddAuto, w.Op, "between them, only an events entry")
		}
		p, a := number(priority), number(at)
		if a == 0 || a <= s.now {
			require.Equal(t, Write{Op: ZAdd, Key: 1, From: add.From, N: 1, Score: float64(p)}, add, "to pending at its priority")
		} else {
			require.Equal(t, Write{Op: ZAdd, Key: 2, From: add.From, N: 1, Score: float64(a)}, add, "to delayed at its time")
		}
	})
}

func FuzzSettle(f *testing.F) {
	f.Add("4", "30000", "2", "3", "2", "ACK JOB0018f2a4c1e00001 1 0 FAIL JOB0018f2a4c1e00002 1 0 boom", []byte{5, 5, 5, 5}, "")
	f.Add("4", "30000", "0", "3", "1", "DONE JOB0018f2a4c1e00001 1 60000 r", []byte{0, 0, 0, 0}, "events=100")
	f.Add("4", "30000", "1", "3", "1", "done JOB0018f2a4c1e00001 1 0 r", []byte{0, 0, 0, 0}, "")
	f.Add("4", "30000", "1", "3", "2", "ACK JOB0018f2a4c1e00001 1", []byte{0, 0, 0, 0}, "")
	f.Add("4", "30000", "1", "1", "2", "RELEASE JOB0018f2a4c1e00001 1 release JOB0018f2a4c1e00002 2", []byte{5, 5, 5, 5}, "events=100")
	f.Add("4", "30000", "1", "3", "1", "RELEASE JOB0018f2a4c1e00001", []byte{5, 5, 5, 5}, "")
	f.Add("4", "30000", "1001", "3", "0", "", []byte{0, 0, 0, 0}, "rate_max=2,rate_ms=100")
	f.Fuzz(func(t *testing.T, numkeys, lease, count, max, n, settlements string, types []byte, config string) {
		args := append([]string{"EMQ.SETTLE", numkeys, "emq:{q}:pending", "emq:{q}:active", "emq:{q}:delayed", "emq:{q}:dead", lease, count, max, n},
			strings.Fields(settlements)...)
		s := fuzzServer(args, 4, types, config, 1_700_000_000_000)
		if call(t, Settle, args, s, Limits{}) != nil {
			return
		}
		r := s.plan.Replies
		require.Equal(t, Reply{Kind: ReplyArray, Int: 2}, r[0], "settlements, then the claim")
		require.Equal(t, ReplyArray, r[1].Kind)
		require.Equal(t, number(n), r[1].Int, "one reply per settlement")
	})
}

func FuzzRepeat(f *testing.F) {
	f.Add("3", "emq:{q}:repeat:r", "emq:{q}:repeats", "emq:{q}:config", "*/5 * * * *", "Europe/Berlin", "0", "0", "0", "0", []byte{0, 0, 0}, int64(1_700_000_000_000))
	f.Add("3", "emq:{q}:repeat:r", "emq:{q}:repeats", "emq:{q}:config", "@every 1h30m", "", "3", "1800000000000", "0", "5", []byte{3, 5, 3}, int64(1_700_000_000_000))
	f.Add("3", "emq:{q}:repeat:r", "emq:{q}:repeats", "emq:{q}:config", "TZ=UTC", "", "0", "0", "0", "0", []byte{0, 0, 0}, int64(1_700_000_000_000))
	f.Add("3", "emq:{q}:repeat:r", "emq:{q}:repeats", "emq:{q}:config", "@every 1ms", "", "0", "1800000000000", "1800000000001", "0", []byte{0, 0, 0}, int64(1_700_000_000_000))
	f.Fuzz(func(t *testing.T, numkeys, repeatKey, repeats, config, spec, tz, priority, start, end, limit string, types []byte, now int64) {
		args := []string{"EMQ.REPEAT", numkeys, repeatKey, repeats, config, spec, tz, "payload", priority, start, end, limit}
		s := fuzzServer(args, 3, types, "", now)
		if call(t, Repeat, args, s, Limits{}) != nil {
			return
		}
		first := s.plan.Replies[0].Int
		require.True(t, first == 0 || first > s.now, "the first tick is to come: %d, now %d", first, s.now)
	})
}

func FuzzControl(f *testing.F) {
	f.Add(uint8(0), "2", "emq:{q}:config", "emq:{q}:pending", "", []byte{3, 5}, "paused=1")
	f.Add(uint8(1), "2", "emq:{q}:config", "emq:{q}:pending", "", []byte{3, 5}, "paused=1")
	f.Add(uint8(2), "2", "emq:{q}:config", "emq:{q}:pending", "50 200", []byte{0, 0}, "")
	f.Add(uint8(3), "2", "emq:{q}:config", "emq:{q}:events", "1000", []byte{3, 7}, "events=1000")
	f.Fuzz(func(t *testing.T, which uint8, numkeys, config, second, numbers string, types []byte, fields string) {
		verbs := []*Verb{Pause, Resume, Limit, Events}
		v := verbs[int(which)%len(verbs)]
		args := append([]string{v.Name, numkeys, config, second}, strings.Fields(numbers)...)
		if !v.ArityFits(len(args)) {
			return // the server's arity refuses it before the verb
		}
		s := fuzzServer(args, 2, types, "", 0)
		if fields != "" && len(s.types) > 0 && s.types[0] == Hash {
			row := s.queue.rows[config]
			for _, kv := range strings.Split(fields, ",") {
				k, val, _ := strings.Cut(kv, "=")
				row.fields[k] = val
			}
		}
		if call(t, v, args, s, Limits{}) != nil {
			return
		}
		require.Equal(t, ReplyInt, s.plan.Replies[0].Kind)
		for _, w := range s.plan.Writes {
			if w.Op != XAddAuto {
				require.Equal(t, int32(0), w.Key, "a setting verb writes its config alone (and its event)")
			}
		}
	})
}

func FuzzRemove(f *testing.F) {
	f.Add("5", "emq:{q}:job:JOB0018f2a4c1e00001", []byte{3, 5, 5, 5, 5}, "")
	f.Add("5", "emq:{q}:job:JOB0018f2a4c1e00001", []byte{0, 5, 5, 5, 5}, "events=10")
	f.Add("5", "emq:{q}:job:MSG0018f2a4c1e00001", []byte{3, 5, 5, 5, 5}, "")
	f.Fuzz(func(t *testing.T, numkeys, job string, types []byte, config string) {
		args := []string{"EMQ.REMOVE", numkeys, job, "emq:{q}:pending", "emq:{q}:active", "emq:{q}:delayed", "emq:{q}:dead"}
		s := fuzzServer(args, 5, types, config, 0)
		if call(t, Remove, args, s, Limits{}) != nil {
			return
		}
		if s.types[0] == Empty {
			require.Equal(t, []Reply{{Kind: ReplyInt, Int: 0}}, s.plan.Replies)
			require.Empty(t, s.plan.Writes)
		}
	})
}

func FuzzEnqueueMany(f *testing.F) {
	f.Add("2", "emq:{q}:pending", "emq:{q}:delayed", "5", "0", "JOB0018f2a4c1e00001 a JOB0018f2a4c1e00002 b JOB0018f2a4c1e00001 c", []byte{0, 0}, "", int64(1_700_000_000_000))
	f.Add("2", "emq:{q}:pending", "emq:{q}:delayed", "0", "1800000000000", "JOB0018f2a4c1e00001 a", []byte{5, 5}, "events=10", int64(1_700_000_000_000))
	f.Add("2", "emq:{q}:pending", "emq:{q}:delayed", "0", "0", "JOB0018f2a4c1e00001", []byte{0, 0}, "", int64(0))
	f.Add("2", "emq:{q}:delayed", "emq:{q}:pending", "1", "0", "MSG0018f2a4c1e00001 a", []byte{3, 0}, "paused=1", int64(0))
	f.Fuzz(func(t *testing.T, numkeys, pending, delayed, priority, at, jobs string, types []byte, config string, now int64) {
		args := append([]string{"EMQ.ENQUEUEMANY", numkeys, pending, delayed, priority, at}, strings.Fields(jobs)...)
		if !EnqueueMany.ArityFits(len(args)) {
			return // the server's arity refuses it before the verb
		}
		s := fuzzServer(args, 2, types, config, now)
		if call(t, EnqueueMany, args, s, Limits{}) != nil {
			return
		}
		pairs := (len(args) - manyFirst) / 2
		r := s.plan.Replies
		require.Equal(t, Reply{Kind: ReplyArray, Int: int64(pairs)}, r[0], "one reply per job")
		seen := map[string]bool{}
		p, a := number(priority), number(at)
		set, score := int32(0), float64(p)
		if a != 0 && a > s.now {
			set, score = 1, float64(a)
		}
		var zadds []Write
		for _, w := range s.plan.Writes {
			if w.Op == ZAdd {
				zadds = append(zadds, w)
			}
		}
		var admitted []Ref
		for i := range pairs {
			id := args[manyFirst+2*i]
			want := int64(1)
			if seen[id] {
				want = 0 // a repeated id: its first pair admitted it
			}
			seen[id] = true
			require.Equal(t, Reply{Kind: ReplyInt, Int: want}, r[1+i], "job %d", i+1)
			if want == 1 {
				admitted = append(admitted, Arg(manyFirst+2*i))
			}
		}
		require.Len(t, zadds, 1, "one ZADD for the batch")
		z := zadds[0]
		require.Equal(t, Write{Op: ZAdd, Key: set, From: z.From, N: int32(len(admitted)), Score: score}, z, "the jobs join their set")
		require.Equal(t, admitted, s.plan.Refs[z.From:z.From+z.N], "each job admitted, in order")
	})
}
