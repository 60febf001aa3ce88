package emq

import (
	"cmp"
	"maps"
	"math"
	"regexp"
	"slices"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/echomq/emq/errors"
	"github.com/echomq/emq/ids"
	"github.com/echomq/emq/keys"
)

// fakeQueue is what a fakeServer holds for the lifecycle verbs: a queue's
// sorted sets and hashes by key name, and the keys a verb derived.
type fakeQueue struct {
	names []string // every opened key's name, by key number
	rows  map[string]fakeRow
	sets  map[string][]fakeMember // by key name, lowest (score, id) first
	deny  bool                    // the caller's ACL denies every derived key
}

// fakeRow is a key holding a job row, or something else under its name.
type fakeRow struct {
	typ    KeyType
	fields map[string]string
}

type fakeMember struct {
	id    string
	score float64
}

// newFakeQueue is a queue whose declared keys are names.
func newFakeQueue(names []string) *fakeQueue {
	return &fakeQueue{names: names, rows: map[string]fakeRow{}, sets: map[string][]fakeMember{}}
}

// addSet stores set key name with members, as a sorted set stores them:
// an id once, its first score kept, in (score, id) order.
func (q *fakeQueue) addSet(name string, members []fakeMember) {
	var set []fakeMember
	for _, m := range members {
		if !slices.ContainsFunc(set, func(o fakeMember) bool { return o.id == m.id }) {
			set = append(set, m)
		}
	}
	slices.SortFunc(set, func(a, b fakeMember) int { return cmp.Or(cmp.Compare(a.score, b.score), cmp.Compare(a.id, b.id)) })
	q.sets[name] = set
}

// hold hands out b as the server hands out what it read: a held ref.
func (s *fakeServer) hold(b string) Ref {
	s.held = append(s.held, b)
	return RefHeld | Ref(len(s.held)-1)
}

// OpenDerived opens a job row a verb derived, unless the ACL denies it,
// and reads fields of it.
func (s *fakeServer) OpenDerived(p *Plan, name Ref, _ Access, fields []Ref) (int, []Value, bool) {
	if s.queue == nil || s.opens != 1 || name&refKind != refScratch {
		s.t.Fatalf("OpenDerived: a verb of v0.1, before Open, or of a name not in the scratch")
	}
	k := s.openProbed(string(p.ScratchBytes(name)))
	switch {
	case k < 0:
		return k, nil, false
	case len(fields) == 0:
		return k, nil, true
	case s.types[k] != Hash:
		return k, make([]Value, len(fields)), true
	}
	return k, s.HashGet(p, k, fields), true
}

// HashGet reads fields of hash key k.
func (s *fakeServer) HashGet(_ *Plan, k int, fields []Ref) []Value {
	if s.queue == nil || s.Type(k) != Hash {
		s.t.Fatalf("HashGet(%d) of a key that is not a hash", k)
	}
	row := s.queue.rows[s.queue.names[k]]
	var out []Value
	for _, f := range fields {
		if f&refKind != refConst {
			s.t.Fatalf("HashGet of a field that is not a constant")
		}
		v, ok := row.fields[Constants[f&RefIndex]]
		if !ok {
			out = append(out, Value{})
			continue
		}
		out = append(out, Value{Bytes: []byte(v), Ref: s.hold(v), Found: true})
	}
	return out
}

// HashFields reads every field of key k with its value, in field order.
func (s *fakeServer) HashFields(k int) []Value {
	if s.queue == nil || k >= s.opened {
		s.t.Fatalf("HashFields(%d) of a key not opened", k)
	}
	row := s.queue.rows[s.queue.names[k]]
	if row.typ != Hash {
		return nil
	}
	var out []Value
	for _, f := range slices.Sorted(maps.Keys(row.fields)) {
		out = append(out, Value{Bytes: []byte(f), Ref: NoRef, Found: true}, Value{Bytes: []byte(row.fields[f]), Ref: NoRef, Found: true})
	}
	return out
}

// ZRange reads sorted set key k up to max, lowest first.
func (s *fakeServer) ZRange(k int, max float64, exclusive bool, offset, limit int) []Member {
	if s.queue == nil || k >= len(s.queue.names) || (s.Type(k) != ZSet && s.Type(k) != Empty) {
		s.t.Fatalf("ZRange(%d) of a key that is neither a sorted set nor absent", k)
	}
	var out []Member
	for i, m := range s.queue.sets[s.queue.names[k]] {
		if len(out) == limit || m.score > max || exclusive && m.score == max {
			break
		}
		if i >= offset {
			out = append(out, Member{Bytes: []byte(m.id), Ref: s.hold(m.id), Score: m.score})
		}
	}
	return out
}

// ZRangeRows reads sorted set key k up to max, lowest first, opening each
// member's row unless the ACL denies it.
func (s *fakeServer) ZRangeRows(p *Plan, k int, max float64, exclusive bool, limit int, prefix Ref, fields []Ref) []Row {
	if prefix&refKind != refScratch {
		s.t.Fatalf("ZRangeRows: a prefix not in the scratch")
	}
	var rows []Row
	for _, m := range s.ZRange(k, max, exclusive, 0, limit) {
		r := Row{Member: m, Key: s.openProbed(string(p.ScratchBytes(prefix)) + string(m.Bytes))}
		if r.Key < 0 || s.types[r.Key] != Hash {
			r.Values = make([]Value, len(fields))
		} else {
			r.Values = s.HashGet(p, r.Key, fields)
		}
		rows = append(rows, r)
	}
	return rows
}

// ZScore reads member's score in sorted set key k.
func (s *fakeServer) ZScore(k int, member []byte) (float64, bool) {
	if s.queue == nil || k >= len(s.queue.names) {
		s.t.Fatalf("ZScore(%d) of a key not opened", k)
	}
	for _, m := range s.queue.sets[s.queue.names[k]] {
		if m.id == string(member) {
			return m.score, true
		}
	}
	return 0, false
}

// canonical is the text docs/commands.md admits as a number: decimal digits,
// no sign, no leading zero.
var canonical = regexp.MustCompile(`^(0|[1-9][0-9]*)$`)

// within reports whether text is a number docs/commands.md admits from min to
// max.
func within(text string, min, max int64) bool {
	v, err := strconv.ParseInt(text, 10, 64)
	return canonical.MatchString(text) && err == nil && v >= min && v <= max
}

// number reads an argument within admits.
func number(text string) int64 {
	v, _ := strconv.ParseInt(text, 10, 64)
	return v
}

// keysCode is the code a lifecycle call's keys decide, given that its
// shape is right: each key in its place (EMQLAYOUT), then the job id's
// namespace (EMQKIND), then one queue (EMQLAYOUT). job is the job key of a
// verb with one (hasJob); sets pairs each set key with its place. It
// returns the queue too.
func keysCode(hasJob bool, job string, sets ...string) (errors.Code, string) {
	var queue []byte
	var queues []string
	var id []byte
	layoutOK := true
	if hasJob {
		var ok bool
		queue, id, ok = keys.SplitJob([]byte(job))
		layoutOK = ok
		queues = append(queues, string(queue))
	}
	for i := 0; i < len(sets); i += 2 {
		q, ok := keys.SplitSet([]byte(sets[i]), sets[i+1])
		layoutOK = layoutOK && ok
		queues = append(queues, string(q))
	}
	switch {
	case !layoutOK:
		return errors.Layout, ""
	case hasJob && !jobID(id):
		return errors.Kind, ""
	case slices.ContainsFunc(queues, func(q string) bool { return q != queues[0] }):
		return errors.Layout, ""
	}
	return 0, queues[0]
}

func jobID(id []byte) bool {
	_, ok := ids.Parse(ids.Job, id)
	return ok
}

// zsetsOK reports whether every key from from to to-1 of s is a sorted set
// or absent.
func zsetsOK(s *fakeServer, from, to int) bool {
	for _, t := range s.types[from:to] {
		if t != Empty && t != ZSet {
			return false
		}
	}
	return true
}

// leaseCode is the code of EXTEND, ACK and FAIL for the job key's type and
// row once the arguments and the sets' types passed: EMQNOJOB, WRONGTYPE,
// EMQLEASE unless the row is active under attempt, else 0.
func leaseCode(jobType KeyType, state, attempts string, attempt int64) errors.Code {
	switch {
	case jobType == Empty:
		return errors.NoJob
	case jobType != Hash:
		return errors.WrongType
	case state != "active" || attempts != strconv.FormatInt(attempt, 10):
		return errors.Lease
	}
	return 0
}

// jobCall is one fuzzed call of a verb naming a job key (key 0): the fake
// holds that key's row with the fuzzed state and attempts.
func jobCall(verb *Verb, args []string, types []byte, state, attempts string, now int64) *fakeServer {
	s := &fakeServer{now: now & (1<<50 - 1)}
	for _, b := range types {
		s.types = append(s.types, keyType(b))
	}
	s.queue = newFakeQueue(args[2 : 2+verb.Keys])
	s.queue.rows[args[2]] = fakeRow{typ: s.types[0], fields: map[string]string{
		"state": state, "attempts": attempts, "payload": "p", "error": "e"}}
	return s
}

// wantCode is the code a call of a lifecycle verb is refused with, step by
// step: the shape, the keys, the stored data; 0 for an acceptance.
func wantCode(shapeOK bool, keys errors.Code, typesOK bool, state errors.Code) errors.Code {
	switch {
	case !shapeOK:
		return errors.Shape
	case keys != 0:
		return keys
	case !typesOK:
		return errors.WrongType
	}
	return state
}

// leaseCall runs a fuzzed call of EXTEND, ACK or FAIL — args[4] or [7] the
// attempt, the job key first, then the sets, paired with their places in sets
// — and requires the refusal docs/commands.md orders given whether the
// integers are in range. It returns the server and whether it accepted.
func leaseCall(t *testing.T, verb *Verb, args []string, types []byte, state, attempts string, now int64, shapeOK bool, sets ...string) (*fakeServer, bool) {
	s := jobCall(verb, args, types, state, attempts, now)
	code := codeOf(call(t, verb, args, s, Limits{}))
	keysOK, _ := keysCode(true, args[2], sets...)
	attempt := args[2+len(types)]
	want := wantCode(shapeOK, keysOK, zsetsOK(s, 1, len(types)) && (s.types[0] == Empty || s.types[0] == Hash),
		leaseCode(s.types[0], state, attempts, number(attempt)))
	require.Equal(t, want, code, "the refusal docs/commands.md orders for the call")
	return s, code == 0
}

// FuzzExtend: EMQ.EXTEND refuses exactly as docs/commands.md orders it, and
// else moves the deadline to now + lease_ms and replies it.
func FuzzExtend(f *testing.F) {
	f.Fuzz(func(t *testing.T, numkeys, jobKey, activeKey, attempt, lease string, jobType, activeType byte, state, attempts string, now int64) {
		args := []string{"EMQ.EXTEND", numkeys, jobKey, activeKey, attempt, lease}
		shapeOK := numkeys == "2" && within(attempt, 1, math.MaxInt32) && within(lease, 1, math.MaxInt32)
		s, ok := leaseCall(t, Extend, args, []byte{jobType, activeType}, state, attempts, now, shapeOK, activeKey, keys.ActiveSet)
		if !ok {
			return
		}
		deadline := s.now + number(lease)
		require.Equal(t, []Reply{{Kind: ReplyInt, Int: deadline}}, s.plan.Replies, "the reply is the new deadline")
		require.Len(t, s.plan.Writes, 1)
		w := s.plan.Writes[0]
		require.Equal(t, Write{Op: ZAdd, Key: 1, From: w.From, N: 1, Score: float64(deadline)}, w)
		_, id, _ := keys.SplitJob([]byte(jobKey))
		require.Equal(t, string(id), s.resolve(args, s.plan.Refs[w.From]))
	})
}

// FuzzAck: EMQ.ACK refuses exactly as docs/commands.md orders it, and else
// takes the job out of active and deletes its row or keeps it done for
// keep_ms.
func FuzzAck(f *testing.F) {
	f.Fuzz(func(t *testing.T, numkeys, jobKey, activeKey, attempt, keep string, jobType, activeType byte, state, attempts string, now int64) {
		args := []string{"EMQ.ACK", numkeys, jobKey, activeKey, attempt, keep}
		shapeOK := numkeys == "2" && within(attempt, 1, math.MaxInt32) && within(keep, 0, 1<<40)
		s, ok := leaseCall(t, Ack, args, []byte{jobType, activeType}, state, attempts, now, shapeOK, activeKey, keys.ActiveSet)
		if !ok {
			return
		}
		require.Equal(t, []Reply{{Kind: ReplyInt, Int: 1}}, s.plan.Replies)
		ops := []Op{}
		for _, w := range s.plan.Writes {
			ops = append(ops, w.Op)
		}
		if number(keep) == 0 {
			require.Equal(t, []Op{ZRem, Del}, ops, "keep_ms 0: out of active, row deleted")
			return
		}
		require.Equal(t, []Op{ZRem, HSet, PExpireAt}, ops, "keep_ms > 0: out of active, row done until it expires")
		require.Equal(t, []string{"state", "done"}, s.refs(args, s.plan.Writes[1]))
		require.Equal(t, s.now+number(keep), s.plan.Writes[2].AtMs)
	})
}

// FuzzFail: EMQ.FAIL refuses exactly as docs/commands.md orders it, and else
// moves the job to dead, pending or delayed with its error, replying the
// state.
func FuzzFail(f *testing.F) {
	f.Fuzz(func(t *testing.T, numkeys, jobKey, pendingKey, activeKey, delayedKey, deadKey, attempt, backoff, maxAttempts, errText string,
		types uint64, state, attempts string, now int64) {
		args := []string{"EMQ.FAIL", numkeys, jobKey, pendingKey, activeKey, delayedKey, deadKey, attempt, backoff, maxAttempts, errText}
		tb := []byte{byte(types), byte(types >> 8), byte(types >> 16), byte(types >> 24), byte(types >> 32)}
		shapeOK := numkeys == "5" && within(attempt, 1, math.MaxInt32) && within(backoff, 0, 1<<40) && within(maxAttempts, 1, math.MaxInt32)
		s, ok := leaseCall(t, Fail, args, tb, state, attempts, now, shapeOK,
			pendingKey, keys.PendingSet, activeKey, keys.ActiveSet, delayedKey, keys.DelayedSet, deadKey, keys.DeadSet)
		if !ok {
			return
		}
		next, set, score := "delayed", int32(3), float64(s.now+number(backoff))
		switch {
		case number(attempts) >= number(maxAttempts):
			next, set, score = "dead", 4, float64(s.now)
		case number(backoff) == 0:
			next, set, score = "pending", 1, 0
		}
		require.Len(t, s.plan.Replies, 1)
		require.Equal(t, ReplyBulk, s.plan.Replies[0].Kind)
		require.Equal(t, next, s.resolve(args, s.plan.Replies[0].Ref), "the reply is the new state")
		ws := s.plan.Writes
		require.Len(t, ws, 3)
		require.Equal(t, ZRem, ws[0].Op)
		require.Equal(t, int32(2), ws[0].Key, "out of active")
		require.Equal(t, ZAdd, ws[1].Op)
		require.Equal(t, set, ws[1].Key, "into the set of the new state")
		require.Equal(t, score, ws[1].Score)
		require.Equal(t, []string{"state", next, "error", errText}, s.refs(args, ws[2]))
	})
}

// FuzzRevive: EMQ.REVIVE refuses exactly as docs/commands.md orders it, and
// else moves a dead job to pending, its attempts kept and recorded as
// revived (the row's attempts here are 1).
func FuzzRevive(f *testing.F) {
	f.Fuzz(func(t *testing.T, numkeys, jobKey, pendingKey, deadKey string, types uint32, state string) {
		args := []string{"EMQ.REVIVE", numkeys, jobKey, pendingKey, deadKey}
		s := jobCall(Revive, args, []byte{byte(types), byte(types >> 8), byte(types >> 16)}, state, "1", 0)
		code := codeOf(call(t, Revive, args, s, Limits{}))

		keysOK, _ := keysCode(true, jobKey, pendingKey, keys.PendingSet, deadKey, keys.DeadSet)
		var stateCode errors.Code
		switch {
		case s.types[0] == Empty:
			stateCode = errors.NoJob
		case state != "dead":
			stateCode = errors.State
		}
		want := wantCode(numkeys == "3", keysOK, zsetsOK(s, 1, 3) && (s.types[0] == Empty || s.types[0] == Hash), stateCode)
		require.Equal(t, want, code, "the refusal docs/commands.md orders for the call")
		if code != 0 {
			return
		}
		require.Equal(t, []Reply{{Kind: ReplyInt, Int: 1}}, s.plan.Replies)
		ws := s.plan.Writes
		require.Len(t, ws, 3)
		require.Equal(t, []Op{ZRem, HSet, ZAdd}, []Op{ws[0].Op, ws[1].Op, ws[2].Op})
		require.Equal(t, []int32{2, 0, 1}, []int32{ws[0].Key, ws[1].Key, ws[2].Key}, "from dead, to pending")
		require.Equal(t, []string{"state", "pending", "revived", "1"}, s.refs(args, ws[1]))
	})
}

// queueCall is one fuzzed call of a verb that reads a queue's sets and
// derives job rows: every member's row is a key of the type its byte of
// rows says, with attempts and, maybe, an error.
type queueCall struct {
	s     *fakeServer
	queue string
	now   int64
}

// scoreAround reads a fuzzed byte as a score at, just around or far from now.
func scoreAround(now int64, b byte) float64 {
	return float64(now + []int64{-1000, -1, 0, 1, 1000}[b%5])
}

// newQueueCall is a call of verb with args whose declared keys hold the
// given members (by key number, ids split by spaces; pending's scores are
// 0, the others' around now), when its keys name one queue.
func newQueueCall(verb *Verb, args []string, types []byte, sets map[int]string, rows []byte, deny bool, now int64, queue string) queueCall {
	c := queueCall{s: &fakeServer{now: now & (1<<50 - 1)}, queue: queue}
	c.now = c.s.now
	for _, b := range types {
		c.s.types = append(c.s.types, keyType(b))
	}
	q := newFakeQueue(args[2 : 2+verb.Keys])
	q.deny = deny
	c.s.queue = q
	j := 0
	for k := range types {
		var ms []fakeMember
		for _, id := range splitArgs(sets[k]) {
			b := byte(j)
			if len(rows) > 0 {
				b = rows[j%len(rows)] + byte(j/len(rows))
			}
			j++
			score := 0.0
			if k != claimPending {
				score = scoreAround(c.now, b)
			}
			ms = append(ms, fakeMember{id, score})
			row := keys.Job(queue, id)
			if _, ok := q.rows[row]; ok {
				continue
			}
			fields := map[string]string{"state": "x", "attempts": strconv.Itoa(int(b>>3) & 3), "payload": "payload of " + id}
			if b&0x20 != 0 {
				fields["error"] = "e"
			}
			q.rows[row] = fakeRow{typ: []KeyType{Hash, Hash, Hash, Hash, Hash, Empty, String, ZSet}[b&7], fields: fields}
		}
		if c.s.types[k] == ZSet {
			q.addSet(args[2+k], ms)
		}
	}
	return c
}

// due returns set key k's members whose score is at most now (below it,
// with exclusive), at most limit, lowest first.
func (c queueCall) due(k int, exclusive bool, limit int) []fakeMember {
	var out []fakeMember
	for _, m := range c.s.queue.sets[c.s.queue.names[k]] {
		if len(out) < limit && (m.score < float64(c.now) || !exclusive && m.score == float64(c.now)) {
			out = append(out, m)
		}
	}
	return out
}

// jobsOf is ms without the members that are no JOB id, which a verb drops
// unread: no row of theirs is opened, nor counted (docs/commands.md).
func jobsOf(ms []fakeMember) []fakeMember {
	return slices.DeleteFunc(slices.Clone(ms), func(m fakeMember) bool { return !jobID([]byte(m.id)) })
}

// row returns the row of job id in the call's queue.
func (c queueCall) row(id string) fakeRow { return c.s.queue.rows[keys.Job(c.queue, id)] }

// FuzzStalledCheck: EMQ.STALLED.CHECK refuses exactly as docs/commands.md
// orders it, and else requeues the stalled jobs, at most limit, replying how
// many.
func FuzzStalledCheck(f *testing.F) {
	f.Fuzz(func(t *testing.T, numkeys, pendingKey, activeKey, limit string, types uint16, pending, active string, rows []byte, deny bool, now int64) {
		args := []string{"EMQ.STALLED.CHECK", numkeys, pendingKey, activeKey, limit}
		keysOK, queue := keysCode(false, "", pendingKey, keys.PendingSet, activeKey, keys.ActiveSet)
		c := newQueueCall(StalledCheck, args, []byte{byte(types), byte(types >> 8)}, map[int]string{0: pending, 1: active}, rows, deny, now, queue)
		code := codeOf(call(t, StalledCheck, args, c.s, Limits{}))

		shapeOK := numkeys == "2" && within(limit, 1, 100_000)
		var stalled []fakeMember
		if shapeOK && keysOK == 0 {
			stalled = c.due(1, true, int(number(limit)))
		}
		jobs := jobsOf(stalled)
		var stateCode errors.Code
		if deny && len(jobs) > 0 {
			stateCode = errors.NoPerm
		}
		want := wantCode(shapeOK, keysOK, zsetsOK(c.s, 0, 2), stateCode)
		require.Equal(t, want, code, "the refusal docs/commands.md orders for the call")
		if code != 0 {
			return
		}
		var requeued int64
		for _, m := range jobs {
			if c.row(m.id).typ == Hash {
				requeued++
			}
		}
		require.Equal(t, []Reply{{Kind: ReplyInt, Int: requeued}}, c.s.plan.Replies, "the reply counts the stalled jobs with a row")
	})
}

// FuzzClaim: EMQ.CLAIM refuses exactly as docs/commands.md orders it, and else
// delivers at most count jobs, each one the sets held with a row whose
// attempts were below max_attempts, under the attempt after them.
func FuzzClaim(f *testing.F) {
	f.Fuzz(func(t *testing.T, numkeys, pendingKey, activeKey, delayedKey, deadKey, lease, count, maxAttempts string,
		types uint32, pending, active, delayed string, rows []byte, deny bool, now int64) {
		args := []string{"EMQ.CLAIM", numkeys, pendingKey, activeKey, delayedKey, deadKey, lease, count, maxAttempts}
		keysOK, queue := keysCode(false, "", pendingKey, keys.PendingSet, activeKey, keys.ActiveSet, delayedKey, keys.DelayedSet, deadKey, keys.DeadSet)
		tb := []byte{byte(types), byte(types >> 8), byte(types >> 16), byte(types >> 24)}
		c := newQueueCall(Claim, args, tb, map[int]string{claimPending: pending, claimActive: active, claimDelayed: delayed}, rows, deny, now, queue)
		code := codeOf(call(t, Claim, args, c.s, Limits{}))

		shapeOK := numkeys == "4" && within(lease, 1, math.MaxInt32) && within(count, 1, 1000) && within(maxAttempts, 1, math.MaxInt32)
		var stateCode errors.Code
		if shapeOK && keysOK == 0 && deny && (len(jobsOf(c.due(claimPending, false, math.MaxInt))) > 0 ||
			len(jobsOf(c.due(claimDelayed, false, math.MaxInt))) > 0 || len(jobsOf(c.due(claimActive, true, math.MaxInt))) > 0) {
			stateCode = errors.NoPerm // pending's scores are 0, never above now
		}
		want := wantCode(shapeOK, keysOK, zsetsOK(c.s, 0, 4), stateCode)
		require.Equal(t, want, code, "the refusal docs/commands.md orders for the call")
		if code != 0 {
			return
		}
		rs := c.s.plan.Replies
		if rs[0].Kind == ReplyNullArray {
			require.Len(t, rs, 1, "nil when nothing was claimed")
			return
		}
		require.Equal(t, ReplyArray, rs[0].Kind)
		n := int(rs[0].Int)
		require.Positive(t, n)
		require.LessOrEqual(t, n, int(number(count)), "at most count jobs")
		require.Len(t, rs, 1+4*n, "one [id, attempt, payload] per job")
		seen := map[string]bool{}
		for i := 0; i < n; i++ {
			job := rs[1+4*i : 5+4*i]
			require.Equal(t, Reply{Kind: ReplyArray, Int: 3}, job[0])
			id := c.s.resolve(args, job[1].Ref)
			require.False(t, seen[id], "job %s delivered twice", id)
			seen[id] = true
			inSets := slices.ContainsFunc(c.s.queue.sets[pendingKey], func(m fakeMember) bool { return m.id == id }) ||
				slices.ContainsFunc(c.due(claimDelayed, false, math.MaxInt), func(m fakeMember) bool { return m.id == id }) ||
				slices.ContainsFunc(c.due(claimActive, true, math.MaxInt), func(m fakeMember) bool { return m.id == id })
			require.True(t, inSets, "job %s was pending, due or stalled", id)
			require.True(t, jobID([]byte(id)), "%q is a JOB id", id)
			row := c.row(id)
			require.Equal(t, Hash, row.typ, "a delivered job has a row")
			attempts := number(row.fields["attempts"])
			require.Less(t, attempts, number(maxAttempts), "a job past max_attempts is not delivered")
			require.Equal(t, Reply{Kind: ReplyInt, Int: attempts + 1}, job[2], "the attempt after the row's")
			require.Equal(t, row.fields["payload"], c.s.resolve(args, job[3].Ref))
		}
	})
}
