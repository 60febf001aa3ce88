package emq

import (
	"bytes"
	"math"
	"math/big"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/echomq/emq/errors"
	"github.com/echomq/emq/ids"
	"github.com/echomq/emq/keys"
)

// fakeServer is a pure-Go test double of the [Server] port: its keys hold
// the types, string value, stream top, consumer group and stream entry a
// fuzz input gives, and it records what the verb asked of it, failing the
// test on a use the port forbids.
type fakeServer struct {
	t     *testing.T
	types []KeyType
	value []byte
	top   ids.StreamID
	now   int64
	queue *fakeQueue // a queue's sets and job rows, for the lifecycle verbs

	// a stream's consumer group and the entry a verb asks about
	noGroup bool     // the stream has no such group
	pending bool     // the entry is pending in the group …
	owner   string   // … owned by this consumer
	entry   []string // its fields and values; nil: no such entry
	held    []string // the strings reads handed out, by held index

	moving   bool // the queue's slot is being migrated: Moving says so
	unrouted bool // a wake-up or a timer's sweep: Routed says false
	woken    bool // a wake-up: Woken says so
	wanted   int  // a timer's sweep: the jobs its waiters want
	oom      bool // the server is over its maxmemory: OutOfMemory says so
	asked    int  // calls of Moving

	opens   int  // calls of Open
	opened  int  // keys opened
	values  bool // whether Open read the strings' bytes
	applies int  // calls of Apply
	wrote   bool
	plan    Plan // a copy of the plan Apply was given
}

// Open opens the declared keys and looks for the probed keys: a queue's
// config, which the fake holds among its rows, and those it names.
func (s *fakeServer) Open(n int, values bool, settingsOf []byte) SettingsKeys {
	s.opens++
	s.values = values
	if s.opens > 1 || n < 1 || n > len(s.types) {
		s.t.Fatalf("Open(%d), call %d: a verb opens its declared keys once", n, s.opens)
	}
	s.opened = n
	found := SettingsKeys{Config: NoKey, Limiter: NoKey, Events: NoKey}
	if settingsOf == nil || s.queue == nil {
		return found
	}
	queue := string(settingsOf)
	config := keys.Set(queue, keys.Config)
	if s.queue.rows[config].typ == Empty {
		return found
	}
	if found.Config = s.openProbed(config); found.Config < 0 {
		return found
	}
	found.Fields = s.HashFields(found.Config)
	fields := s.queue.rows[config].fields
	if _, ok := fields[LimiterField]; ok {
		found.Limiter = s.openProbed(keys.Set(queue, keys.Limiter))
	}
	if _, ok := fields[EventsField]; ok {
		found.Events = s.openProbed(keys.Set(queue, keys.Events))
	}
	return found
}

// openProbed opens a key Open looked for: its number, or Denied.
func (s *fakeServer) openProbed(name string) int {
	if s.queue.deny {
		return Denied
	}
	s.queue.names = append(s.queue.names, name)
	s.types = append(s.types, s.queue.rows[name].typ)
	s.opened++
	return s.opened - 1
}

// Moving reports the fake's migration; a verb asks it only of a key it
// found empty.
func (s *fakeServer) Moving(k int) bool {
	if s.Type(k) != Empty {
		s.t.Fatalf("Moving(%d) of a key that is not empty", k)
	}
	s.asked++
	return s.moving
}

// ExpireAt: the fake's keys never expire.
func (s *fakeServer) ExpireAt(int) int64 { return -1 }

func (s *fakeServer) Type(k int) KeyType {
	if k >= s.opened {
		s.t.Fatalf("Type(%d) of a key not opened (%d opened)", k, s.opened)
	}
	return s.types[k]
}

func (s *fakeServer) Value(k int) []byte {
	if s.Type(k) != String || !s.values {
		s.t.Fatalf("Value(%d) of a key that is not a string, or not read by Open", k)
	}
	return s.value
}

func (s *fakeServer) StreamTop(k int) ids.StreamID {
	if s.Type(k) != Stream {
		s.t.Fatalf("StreamTop(%d) of a key that is not a stream", k)
	}
	return s.top
}

func (s *fakeServer) NowMs() int64 { return s.now }

func (s *fakeServer) MayWait() bool { return false }

func (s *fakeServer) Routed() bool { return !s.unrouted }
func (s *fakeServer) Woken() bool  { return s.woken }
func (s *fakeServer) Wanted() int  { return s.wanted }

func (s *fakeServer) OutOfMemory() bool { return s.oom }

// Apply writes unless the plan's first write is an append at or below its
// stream's top, as the server's own append refuses.
func (s *fakeServer) Apply(p *Plan) error {
	s.applies++
	if s.opens == 0 || s.applies > 1 {
		s.t.Fatalf("Apply, call %d, after %d Open: a verb applies once, after Open", s.applies, s.opens)
	}
	s.plan = Plan{Writes: append([]Write(nil), p.Writes...), Refs: append([]Ref(nil), p.Refs...),
		Replies: append([]Reply(nil), p.Replies...), Scratch: append([]byte(nil), p.Scratch...),
		Spans: append([]Span(nil), p.Spans...), Counts: p.Counts}
	s.wrote = true
	if len(p.Writes) > 0 && p.Writes[0].Op == XAdd {
		var top ids.StreamID
		if s.types[p.Writes[0].Key] == Stream {
			top = s.top
		}
		s.wrote = top.Less(p.Writes[0].ID)
	}
	if !s.wrote {
		return ErrNotAboveTop
	}
	return nil
}

// errNoGroup is the fake's NOGROUP, which a verb hands on as it is.
var errNoGroup = &errors.Refusal{Code: errors.NoGroup, Msg: "No such key or consumer group"}

func (s *fakeServer) PendingOwner(_ *Plan, k int, _ Ref, _ ids.StreamID) ([]byte, bool, error) {
	switch s.Type(k) {
	case Empty:
		return nil, false, errNoGroup
	case Stream:
		if s.noGroup {
			return nil, false, errNoGroup
		}
		return []byte(s.owner), s.pending, nil
	}
	s.t.Fatalf("PendingOwner(%d) of a key that is neither a stream nor absent", k)
	return nil, false, nil
}

func (s *fakeServer) StreamEntry(k int, _ ids.StreamID) ([]Value, bool) {
	if s.Type(k) != Stream {
		s.t.Fatalf("StreamEntry(%d) of a key that is not a stream", k)
	}
	if s.entry == nil {
		return nil, false
	}
	var out []Value
	for _, str := range s.entry {
		out = append(out, Value{Bytes: []byte(str), Ref: s.hold(str), Found: true})
	}
	return out, true
}

// keyType reads a fuzzed byte as one of the key types.
func keyType(b byte) KeyType { return KeyType(b) % (Other + 1) }

// specCodes are the refusal codes of docs/commands.md; errors.Internal is none.
var specCodes = []errors.Code{errors.Shape, errors.Layout, errors.Kind, errors.Envelope, errors.WrongType, errors.Count, errors.Order,
	errors.NoJob, errors.Lease, errors.State, errors.NoPerm, errors.NoGroup, errors.TryAgain}

// byArguments reports whether err is a refusal the arguments alone decide:
// one of steps 1 to 5, but for PARK's ErrEntryMsg and ErrParkTooLarge,
// which the stored entry decides.
func byArguments(err error) bool {
	code := errors.CodeOf(err)
	return code != 0 && code <= errors.Envelope && err != ErrEntryMsg && err != ErrParkTooLarge
}

// call runs verb on args against s and checks what holds for every verb:
// a refusal carries a documented code first in its text and wrote nothing, and
// one decided from the arguments alone read no key — and is Check's verdict
// to the letter, while Check passes every call the verb took past its
// arguments; an acceptance applied its plan once. It returns the refusal, or
// nil for an acceptance.
func call(t *testing.T, verb *Verb, args []string, s *fakeServer, limits Limits) *errors.Refusal {
	t.Helper()
	s.t = t
	argv := make([][]byte, len(args))
	for i, a := range args {
		argv[i] = []byte(a)
	}
	err := verb.Run(Call{Args: argv, Server: s, Plan: &Plan{}, Limits: limits})
	if limits.AppendMaxEntries == 0 { // Check knows no server's config
		checked := verb.CheckCall(argv, s.now)
		if byArguments(err) {
			require.Equal(t, err, checked, "Check refuses as the verb does")
		} else {
			require.NoError(t, checked, "Check passes what only the server decides (verb: %v)", err)
		}
	}
	if err == nil {
		require.Equal(t, 1, s.applies, "an acceptance applies its plan")
		require.True(t, s.wrote, "an acceptance is a plan the server wrote")
		return nil
	}
	refusal, ok := err.(*errors.Refusal)
	require.True(t, ok, "a verb refuses with a *errors.Refusal, not %T %q", err, err)
	code := refusal.Code
	require.Contains(t, specCodes, code, "refusal %q", err)
	require.True(t, strings.HasPrefix(err.Error(), code.String()+" "), "the text starts with the code: %q", err)
	require.NotEmpty(t, refusal.Msg, "the refusal says what was wrong")
	require.False(t, s.wrote, "a refusal wrote nothing")
	if byArguments(err) {
		require.Zero(t, s.opens, "%s is decided from the arguments, before any key is read", code)
	}
	return refusal
}

// codeOf is the code of a refusal, or 0 for an acceptance.
func codeOf(r *errors.Refusal) errors.Code {
	if r == nil {
		return 0
	}
	return r.Code
}

// splitArgs reads a fuzzed string as arguments separated by single spaces;
// the empty string is no argument at all.
func splitArgs(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, " ")
}

// resolve returns the string a ref of the plan s applied names.
func (s *fakeServer) resolve(args []string, r Ref) string {
	switch r & refKind {
	case refConst:
		return Constants[r&RefIndex]
	case refScratch:
		return string(s.plan.ScratchBytes(r))
	case RefHeld:
		return s.held[r&RefIndex]
	}
	return args[r&RefIndex]
}

// refs returns the strings write w of the plan s applied names.
func (s *fakeServer) refs(args []string, w Write) []string {
	var out []string
	for _, r := range s.plan.Refs[w.From : w.From+w.N] {
		out = append(out, s.resolve(args, r))
	}
	return out
}

func isInt(b string) bool {
	_, ok := ParseInt([]byte(b))
	return ok
}

// FuzzParseInt: ParseInt accepts exactly the canonical decimal text of an
// int64, as the server's string2ll does.
func FuzzParseInt(f *testing.F) {
	f.Fuzz(func(t *testing.T, text string) {
		v, ok := ParseInt([]byte(text))
		canonical := new(big.Int)
		_, isNumber := canonical.SetString(text, 10)
		want := isNumber && canonical.IsInt64() && canonical.String() == text
		require.Equal(t, want, ok, "ParseInt(%q)", text)
		if ok {
			require.Equal(t, canonical.Int64(), v)
		}
	})
}

// FuzzEnqueue: EMQ.ENQUEUE accepts exactly the calls docs/commands.md admits,
// and then plans the job row and its pending entry, or nothing for a
// duplicate.
func FuzzEnqueue(f *testing.F) {
	f.Fuzz(func(t *testing.T, numkeys, jobKey, pendingKey, id, payload string, jobType, pendingType byte) {
		args := []string{"EMQ.ENQUEUE", numkeys, jobKey, pendingKey, id, payload}
		s := &fakeServer{types: []KeyType{keyType(jobType), keyType(pendingType)}}
		refusal := call(t, Enqueue, args, s, Limits{})
		code := codeOf(refusal)

		queue, keyID, jobOK := keys.SplitJob([]byte(jobKey))
		pendingQueue, pendingOK := keys.SplitPending([]byte(pendingKey))
		_, idOK := ids.Parse(ids.Job, []byte(id))
		argsOK := numkeys == "2" && jobOK && pendingOK && idOK &&
			bytes.Equal(queue, pendingQueue) && string(keyID) == id
		typesOK := (s.types[0] == Empty || s.types[0] == Hash) && (s.types[1] == Empty || s.types[1] == ZSet)
		require.Equal(t, argsOK && typesOK, code == 0, "accepted exactly when docs/commands.md admits the call (refusal %s)", code)

		switch code {
		case 0:
		case errors.Kind:
			require.Equal(t, "EMQKIND job id must be JOB-namespaced", refusal.Error(), "clients match this text")
			return
		case errors.WrongType:
			require.True(t, argsOK && !typesOK, "WRONGTYPE comes after every argument rule, on a wrong key type")
			return
		default:
			require.Contains(t, []errors.Code{errors.Shape, errors.Layout}, code)
			return
		}

		p := s.plan
		if s.types[0] == Hash {
			require.Equal(t, []Reply{{Kind: ReplyInt, Int: 0}}, p.Replies, "an existing job row is a duplicate")
			require.Empty(t, p.Writes, "a duplicate writes nothing")
			return
		}
		require.Equal(t, []Reply{{Kind: ReplyInt, Int: 1}}, p.Replies)
		require.Len(t, p.Writes, 2, "HSet then ZAdd")
		hset, zadd := p.Writes[0], p.Writes[1]
		require.Equal(t, HSet, hset.Op)
		require.Equal(t, int32(0), hset.Key)
		require.Equal(t, []string{"state", "pending", "attempts", "0", "payload", payload}, s.refs(args, hset))
		require.Equal(t, ZAdd, zadd.Op)
		require.Equal(t, int32(1), zadd.Key)
		require.Equal(t, []string{id}, s.refs(args, zadd))
		require.Zero(t, zadd.Score, "score 0: byte order of ids is the claim order")
	})
}

// batchCall is one fuzzed call of a stream verb.
type batchCall struct {
	args       []string
	server     *fakeServer
	maxEntries int
}

func newBatchCall(verb, numkeys, key, n, entries string, keyTypeByte byte, topMs, topSeq uint64) (batchCall, bool) {
	args := append([]string{verb, numkeys, key, n}, splitArgs(entries)...)
	s := &fakeServer{types: []KeyType{keyType(keyTypeByte)}, top: ids.StreamID{Ms: topMs, Seq: topSeq}}
	return batchCall{args: args, server: s}, len(args) >= 5 // arity -5: the server refuses fewer
}

// wantBatchCode is the refusal docs/commands.md gives a call of EMQ.APPEND
// (publish false) or EMQ.PUBLISH, worked out from its arguments, its key's
// type and its stream's top, rule by rule in the documented order; 0 when
// the call is admitted.
func wantBatchCode(b batchCall, publish bool) errors.Code {
	a, s := b.args, b.server

	// the shape: numkeys 1, then n, then exactly n entries of <EVT id>
	// <pairs> and that many field/value pairs, no field empty or "id"
	n, nOK := ParseInt([]byte(a[3]))
	shapeOK := a[1] == "1" && nOK && n > 0 && (!publish || n == 1) &&
		(b.maxEntries == 0 || n <= int64(b.maxEntries))
	type entry struct {
		id     string
		fields [][2]string
	}
	var entries []entry
	rest := a[4:]
	for shapeOK && int64(len(entries)) < n {
		if len(rest) < 2 {
			shapeOK = false
			break
		}
		pairs, ok := ParseInt([]byte(rest[1]))
		if !ok || pairs < 1 || pairs > int64(len(rest)-2)/2 {
			shapeOK = false
			break
		}
		e, size := entry{id: rest[0]}, len("id")+len(rest[0])
		for i := int64(0); i < pairs; i++ {
			field, value := rest[2+2*i], rest[3+2*i]
			shapeOK = shapeOK && field != "" && field != "id"
			size += len(field) + len(value)
			e.fields = append(e.fields, [2]string{field, value})
		}
		shapeOK = shapeOK && size <= maxEntryBytes
		entries = append(entries, e)
		rest = rest[2+2*pairs:]
	}
	if !shapeOK || len(rest) > 0 {
		return errors.Shape
	}

	// the key's layout, then every id, then the envelope
	_, sname, layoutOK := keys.SplitStream([]byte(a[2]))
	if !layoutOK || (publish && string(sname) != "msgs") {
		return errors.Layout
	}
	msgs, payloads := 0, 0
	for _, e := range entries {
		if _, ok := ids.Parse(ids.Evt, []byte(e.id)); !ok {
			return errors.Kind
		}
		for _, f := range e.fields {
			switch {
			case !publish:
			case f[0] == "msg":
				msgs++
				if _, ok := ids.Parse(ids.Msg, []byte(f[1])); !ok {
					return errors.Kind
				}
			case f[0] == "payload":
				payloads++
			}
		}
	}
	if publish && (msgs != 1 || payloads != 1) {
		return errors.Envelope
	}

	// the key's type, then the stream IDs against the top and each other
	var top ids.StreamID
	switch s.types[0] {
	case Stream:
		top = s.top
	case Empty:
	default:
		return errors.WrongType
	}
	for _, e := range entries {
		id, _ := ids.Parse(ids.Evt, []byte(e.id))
		if !top.Less(id.StreamID()) {
			return errors.Order
		}
		top = id.StreamID()
	}
	return 0
}

// checkBatch checks the plan of an accepted call of EMQ.APPEND or
// EMQ.PUBLISH: exactly n XAdd writes, one per entry in order, under
// strictly increasing stream IDs above the top, together covering every
// argument, and a reply of their IDs.
func checkBatch(t *testing.T, b batchCall) {
	s := b.server
	args := b.args
	n, _ := ParseInt([]byte(args[3]))
	ws := s.plan.Writes
	require.Equal(t, Reply{Kind: ReplyArray, Int: n}, s.plan.Replies[0], "an array of the n IDs")
	for i := range ws {
		require.Equal(t, Reply{Kind: ReplyStreamID, Int: int64(i)}, s.plan.Replies[1+i])
	}
	require.Equal(t, int(n), len(ws), "exactly n writes")
	if b.maxEntries > 0 {
		require.LessOrEqual(t, len(ws), b.maxEntries)
	}
	var top ids.StreamID
	if s.types[0] == Stream {
		top = s.top
	}
	pos := 4
	for i, w := range ws {
		require.Equal(t, XAdd, w.Op, "entry %d", i+1)
		require.Equal(t, int32(0), w.Key)
		require.Equal(t, int32(pos+2), w.First, "entry %d starts where entry %d ended", i+1, i)
		id, ok := ids.Parse(ids.Evt, []byte(args[pos]))
		require.True(t, ok, "entry %d: an EVT id", i+1)
		require.Equal(t, id.StreamID(), w.ID, "entry %d: its id's stream ID", i+1)
		require.True(t, top.Less(w.ID), "entry %d: %s above %s", i+1, w.ID, top)
		top = w.ID
		pairs, _ := ParseInt([]byte(args[pos+1]))
		require.Equal(t, int32(pairs), w.Pairs)
		require.Equal(t, []string{"id", args[pos]}, s.refs(args, w), "the id field holds the EVT id")
		pos = int(w.First + 2*w.Pairs)
	}
	require.Equal(t, len(args), pos, "the entries cover every argument")
}

// FuzzAppend: EMQ.APPEND refuses exactly as docs/commands.md orders its
// rules, writing nothing, or plans exactly its n entries in order.
func FuzzAppend(f *testing.F) {
	f.Fuzz(func(t *testing.T, numkeys, key, n, entries string, typ byte, topMs, topSeq uint64, maxEntries uint16) {
		b, ok := newBatchCall("EMQ.APPEND", numkeys, key, n, entries, typ, topMs, topSeq)
		if !ok {
			return
		}
		b.maxEntries = int(maxEntries)
		code := codeOf(call(t, Append, b.args, b.server, Limits{AppendMaxEntries: b.maxEntries}))
		require.Equal(t, wantBatchCode(b, false), code, "the refusal the rules give, in their order")
		if code == 0 {
			checkBatch(t, b)
		}
	})
}

// FuzzPublish: EMQ.PUBLISH refuses exactly as docs/commands.md orders its
// rules, writing nothing, or plans one envelope to the stream msgs.
func FuzzPublish(f *testing.F) {
	f.Fuzz(func(t *testing.T, numkeys, key, n, entries string, typ byte, topMs, topSeq uint64) {
		b, ok := newBatchCall("EMQ.PUBLISH", numkeys, key, n, entries, typ, topMs, topSeq)
		if !ok {
			return
		}
		code := codeOf(call(t, Publish, b.args, b.server, Limits{}))
		require.Equal(t, wantBatchCode(b, true), code, "the refusal the rules give, in their order")
		if code == 0 {
			checkBatch(t, b)
			require.Len(t, b.server.plan.Writes, 1)
		}
	})
}

// FuzzFailuresIncr: EMQ.FAILURES.INCR accepts exactly the calls
// docs/commands.md admits, and then plans one SET of the next count with its
// absolute expiry.
func FuzzFailuresIncr(f *testing.F) {
	f.Fuzz(func(t *testing.T, numkeys, key, ttl, value string, keyTypeByte byte, now int64) {
		args := []string{"EMQ.FAILURES.INCR", numkeys, key, ttl}
		s := &fakeServer{types: []KeyType{keyType(keyTypeByte)}, value: []byte(value), now: now & math.MaxInt64}
		code := codeOf(call(t, FailuresIncr, args, s, Limits{}))

		// The expiry docs/commands.md asks for, in exact arithmetic.
		ttlMs, _ := ParseInt([]byte(ttl))
		at := new(big.Int).Add(big.NewInt(ttlMs), big.NewInt(999))
		at.Quo(at, big.NewInt(1000)).Mul(at, big.NewInt(1000)).Add(at, big.NewInt(s.now))
		shapeOK := numkeys == "1" && isInt(ttl) && ttlMs > 0 && ttlMs <= math.MaxInt64-999 && at.IsInt64()
		_, sub, msg, layoutOK := keys.SplitFail([]byte(key))
		_, subOK := ids.Parse(ids.Sub, sub)
		_, msgOK := ids.Parse(ids.Msg, msg)
		argsOK := shapeOK && layoutOK && subOK && msgOK
		var count int64
		stored := s.types[0] == Empty
		if s.types[0] == String {
			count, stored = ParseInt(s.value)
			stored = stored && count < math.MaxInt64
		}
		require.Equal(t, argsOK && stored, code == 0, "accepted exactly when docs/commands.md admits the call (refusal %s)", code)

		switch code {
		case 0:
		case errors.Count:
			require.True(t, argsOK && s.types[0] == String, "EMQCOUNT is about a stored string")
			return
		case errors.WrongType:
			require.True(t, argsOK && s.types[0] != Empty && s.types[0] != String)
			return
		case errors.Shape:
			require.False(t, shapeOK)
			return
		default:
			require.Contains(t, []errors.Code{errors.Layout, errors.Kind}, code)
			return
		}
		p := s.plan
		require.Equal(t, []Reply{{Kind: ReplyInt, Int: count + 1}}, p.Replies, "the reply is the new count")
		require.Equal(t, []Write{{Op: SetPXAt, Key: 0, Count: count + 1, AtMs: at.Int64()}}, p.Writes)
	})
}
