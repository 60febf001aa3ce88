package torture

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"

	"github.com/echomq/emq/emq"
	"github.com/echomq/emq/ids"
	"github.com/echomq/emq/keys"
	"github.com/echomq/emq/registry"
)

// class is where a call comes from.
type class uint8

const (
	valid   class = iota // well-formed; its exact reply is known and its data is checked at the end
	mutated              // a valid call with one byte, count, id or key changed
	garbage              // built to be refused
)

// call is one generated command and what its reply must be.
type call struct {
	args  [][]byte
	class class
	what  string   // the generator's name for it, for failure messages
	want  string   // valid: the exact reply, as reply.String() prints it
	codes []string // mutated, garbage: the reply must be an error starting with one of these, if any
	// refuse: the reply must be an error (garbage always; a mutation that
	// cannot leave a valid call).
	refuse bool
	record func() // valid: adds the call's writes to the model once its reply checked
	// mayRefuse: a valid call whose reply depends on the stored state and
	// the clock (the job lifecycle) may be refused with these codes, and
	// else has its verb's success shape; want is not checked.
	mayRefuse []string
	learn     func(reply) // the job lifecycle: steers the next calls by the reply
}

// Refusal codes, as the first word of an error reply (docs/commands.md's
// refusals).
const (
	shape    = "EMQSHAPE"
	layout   = "EMQLAYOUT"
	kind     = "EMQKIND"
	envelope = "EMQENVELOPE"
	wrongTyp = "WRONGTYPE"
	count    = "EMQCOUNT"
	order    = "EMQORDER"
	// jobKind is ENQUEUE's KIND refusal, whose whole text clients match on.
	jobKind = "EMQKIND job id must be JOB-namespaced"
)

// baseMs is the millisecond, since the EMQ epoch, the generators' ids start at.
const baseMs = 40_000_000_000

// The most bytes a huge argument has; each is at least a megabyte.
const maxHuge = 3 << 20

// idAt is an id a call carries: in argument arg, from byte off (0 for an id
// argument, the id's offset inside a key otherwise).
type idAt struct {
	arg, off int
	ns       ids.Namespace
}

// built is a call under construction: its arguments and where its counts,
// ids and keys sit, for a mutation to aim at.
type built struct {
	args   [][]byte
	counts []int // numkeys, n, pairs, fail_ttl_ms
	ids    []idAt
	keys   []int
	want   string
	record func()
}

// jobModel is an admitted job: what its row and pending entry must hold.
type jobModel struct {
	key, pending, id string
	payload          [32]byte // sha256
	size             int
}

// entryModel is an appended stream entry.
type entryModel struct {
	sid, evt string
	fields   [32]byte // sha256 of the field/value pairs after id
}

// failModel is a failure count: its value and the largest TTL set.
type failModel struct {
	count int64
	ttlMs int64
}

// gen makes one worker's calls, deterministically from the run's seed, and
// models what its accepted valid calls wrote. Every key it touches carries
// its name in the hash tag: "<name>.valid.*" for valid calls, "<name>.mutant.*"
// for mutated ones, "<name>.junk.*" for garbage and the keys planted with
// wrong types. No one-byte change turns one of those names into another, so
// a mutated call never touches valid data or another worker's keys, and each
// worker's replies do not depend on how the connections interleave.
type gen struct {
	r          *rand.Rand
	name       string
	node       uint32
	seq        uint64 // ids minted so far
	validShare int    // valid calls in ten
	testBuild  bool   // the server runs the emqtest build, which serves EMQ.PANIC

	jobs      []jobModel
	streams   map[string][]entryModel
	streamSeq []string // stream keys in first-use order, for a deterministic check
	fails     map[string]*failModel
	failKeys  []string
	failPairs map[string][][2]string // topic → the (SUB, MSG) pairs its failures count

	planted []plantedKey
	life    map[string]*lifeModel // the job lifecycle's queues, by space
}

// plantedKey is a junk-space key holding a wrong type or value, and the
// refusal a call meets there.
type plantedKey struct {
	slot string // job, pending, stream, msgs, fail
	key  string
	code string
}

func newGen(seed uint64, worker int, name string) *gen {
	return &gen{
		r:       rand.New(rand.NewPCG(seed, uint64(worker)+1)),
		name:    name,
		node:    uint32(worker),
		streams: map[string][]entryModel{}, fails: map[string]*failModel{}, failPairs: map[string][][2]string{},
	}
}

// mint returns the worker's next id of ns: ids of one worker only grow.
func (g *gen) mint(ns ids.Namespace) string {
	g.seq++
	id, _ := ids.New(ns, baseMs+g.seq/(ids.MaxSeq+1), g.node, uint32(g.seq%(ids.MaxSeq+1)))
	return id.String()
}

func (g *gen) space(space string, k int) string { return fmt.Sprintf("%s.%s.%d", g.name, space, k) }

// ---- random material --------------------------------------------------------

func (g *gen) bytes(n int) []byte {
	b := make([]byte, n)
	for i := 0; i < n; i += 8 {
		v := g.r.Uint64()
		for j := i; j < n && j < i+8; j++ {
			b[j] = byte(v >> (8 * (j - i)))
		}
	}
	return b
}

func (g *gen) huge() []byte { return g.bytes(1<<20 + g.r.IntN(maxHuge-1<<20)) }

// payload is mostly small, sometimes tens of kilobytes, rarely megabytes.
func (g *gen) payload() []byte {
	switch p := g.r.IntN(2000); {
	case p == 0:
		return g.huge()
	case p < 40:
		return g.bytes(1<<10 + g.r.IntN(63<<10))
	case p < 200:
		return nil
	}
	return g.bytes(g.r.IntN(64))
}

// field is a field name: never empty, never the reserved "id".
func (g *gen) field() []byte {
	if g.r.IntN(10) == 0 {
		return append([]byte{'b'}, g.bytes(g.r.IntN(12))...)
	}
	const letters = "abcdefghijklmnopqrstuvwxyz"
	b := make([]byte, 1+g.r.IntN(6))
	for i := range b {
		b[i] = letters[g.r.IntN(len(letters))]
	}
	if string(b) == "id" {
		return []byte("idx")
	}
	return b
}

func (g *gen) pick(n int) int { return g.r.IntN(n) }

// ---- builders -----------------------------------------------------------------

func text(args ...string) [][]byte {
	b := make([][]byte, len(args))
	for i, a := range args {
		b[i] = []byte(a)
	}
	return b
}

func enqueueCall(queue, id string, payload []byte) built {
	args := append(text("EMQ.ENQUEUE", "2", keys.Job(queue, id), keys.Pending(queue), id), payload)
	return built{args: args, counts: []int{1}, keys: []int{2, 3},
		ids: []idAt{{4, 0, ids.Job}, {2, len(keys.Job(queue, "")), ids.Job}}}
}

// entry is one stream entry to append: its EVT id and field/value pairs.
type entry struct {
	evt    string
	fields [][]byte // field, value, field, value …
}

func fieldsSum(fields [][]byte) [32]byte {
	h := sha256.New()
	for _, f := range fields {
		fmt.Fprintf(h, "%d:", len(f))
		h.Write(f)
	}
	var sum [32]byte
	copy(sum[:], h.Sum(nil))
	return sum
}

func streamIDOf(evt string) string {
	id, _ := ids.Parse(ids.Evt, []byte(evt))
	return id.StreamID().String()
}

// batchCall builds EMQ.APPEND or EMQ.PUBLISH of es to key.
func batchCall(verb, key string, es []entry) built {
	b := built{args: text(verb, "1", key, strconv.Itoa(len(es))), counts: []int{1, 3}, keys: []int{2}}
	want := make([]reply, len(es))
	for i, e := range es {
		b.ids = append(b.ids, idAt{len(b.args), 0, ids.Evt})
		b.counts = append(b.counts, len(b.args)+1)
		b.args = append(b.args, []byte(e.evt), []byte(strconv.Itoa(len(e.fields)/2)))
		for j, f := range e.fields {
			if verb == "EMQ.PUBLISH" && j%2 == 1 && string(e.fields[j-1]) == "msg" {
				b.ids = append(b.ids, idAt{len(b.args), 0, ids.Msg})
			}
			b.args = append(b.args, f)
		}
		want[i] = reply{kind: '$', text: streamIDOf(e.evt)}
	}
	b.want = reply{kind: '*', elems: want}.String()
	return b
}

func failuresCall(topic, sub, msg string, ttlMs int64) built {
	key := keys.Fail(topic, sub, msg)
	return built{args: text("EMQ.FAILURES.INCR", "1", key, strconv.FormatInt(ttlMs, 10)), counts: []int{1, 3}, keys: []int{2},
		ids: []idAt{{2, len(keys.Fail(topic, "", "")) - 1, ids.Sub}, {2, len(keys.Fail(topic, sub, "")), ids.Msg}}}
}

// entries makes n entries under fresh ids, with 1–4 pairs each, or now and
// then around 32, where the module stops keeping an entry's fields on the
// stack.
func (g *gen) entries(n int) []entry {
	es := make([]entry, n)
	for i := range es {
		es[i].evt = g.mint(ids.Evt)
		pairs := 1 + g.pick(4)
		if g.pick(30) == 0 {
			pairs = 28 + g.pick(9)
		}
		for p := pairs; p > 0; p-- {
			es[i].fields = append(es[i].fields, g.field(), g.value())
		}
	}
	return es
}

func (g *gen) value() []byte {
	if g.r.IntN(50) == 0 {
		return g.payload()
	}
	return g.bytes(g.r.IntN(24))
}

// batchSize is mostly a few entries, sometimes around 16 (where the module
// stops keeping the IDs of a batch on the stack), sometimes hundreds.
func (g *gen) batchSize() int {
	switch g.pick(40) {
	case 0:
		return 50 + g.pick(250)
	case 1, 2:
		return 14 + g.pick(6)
	}
	return 1 + g.pick(5)
}

// envelope makes one PUBLISH entry: msg and payload, maybe more fields, in
// any order.
func (g *gen) envelope() entry {
	pairs := [][2][]byte{{[]byte("msg"), []byte(g.mint(ids.Msg))}, {[]byte("payload"), g.payload()}}
	for n := g.pick(3); n > 0; n-- {
		f := g.field()
		if string(f) == "msg" || string(f) == "payload" {
			continue
		}
		pairs = append(pairs, [2][]byte{f, g.value()})
	}
	g.r.Shuffle(len(pairs), func(i, j int) { pairs[i], pairs[j] = pairs[j], pairs[i] })
	e := entry{evt: g.mint(ids.Evt)}
	for _, p := range pairs {
		e.fields = append(e.fields, p[0], p[1])
	}
	return e
}

// failPair picks one of topic's (SUB, MSG) pairs, or a new one, so that
// counts climb above 1.
func (g *gen) failPair(topic string) (sub, msg string) {
	pairs := g.failPairs[topic]
	if len(pairs) == 0 || g.r.IntN(4) == 0 {
		pairs = append(pairs, [2]string{g.mint(ids.Sub), g.mint(ids.Msg)})
		g.failPairs[topic] = pairs
	}
	p := pairs[g.pick(len(pairs))]
	return p[0], p[1]
}

// failTTL is a TTL no key reaches within a run, even with its first digit
// changed to 1: the data checked at the end must not expire, nor may a key
// expire between the two digests of a refused batch.
func (g *gen) failTTL() int64 { return 20_000_000 + g.r.Int64N(70_000_000) }

// ---- valid calls ----------------------------------------------------------------

// capsReply is EMQ.CAPS's reply, made from the command table.
var capsReply = func() string {
	var tokens []reply
	for _, t := range registry.Tokens() {
		tokens = append(tokens, reply{kind: '$', text: t})
	}
	return reply{kind: '*', elems: []reply{{kind: '$', text: "version"}, {kind: '$', text: emq.Version},
		{kind: '$', text: "caps"}, {kind: '*', elems: tokens}}}.String()
}()

// build makes a well-formed call in space: a job admitted (or repeated), a
// batch appended, an envelope published, a failure counted, or EMQ.CAPS.
func (g *gen) build(space string) (built, string) {
	queue, topic := g.space(space, g.pick(3))+"q", g.space(space, g.pick(3))+"t"
	switch p := g.pick(100); {
	case p < 8 && len(g.jobs) > 0 && space == "valid":
		j := g.jobs[g.pick(len(g.jobs))]
		b := enqueueCall(j.key[len("emq:{"):strings.IndexByte(j.key, '}')], j.id, g.payload())
		b.want = "0"
		return b, "enqueue/duplicate"
	case p < 33:
		id, payload := g.mint(ids.Job), g.payload()
		b := enqueueCall(queue, id, payload)
		b.want = "1"
		b.record = func() {
			g.jobs = append(g.jobs, jobModel{key: keys.Job(queue, id), pending: keys.Pending(queue), id: id,
				payload: sha256.Sum256(payload), size: len(payload)})
		}
		return b, "enqueue"
	case p < 58:
		key := keys.Stream(topic, "s"+strconv.Itoa(g.pick(2)))
		es := g.entries(g.batchSize())
		b := batchCall("EMQ.APPEND", key, es)
		b.record = func() { g.appended(key, es) }
		return b, "append"
	case p < 80:
		key := keys.Stream(topic, "msgs")
		es := []entry{g.envelope()}
		b := batchCall("EMQ.PUBLISH", key, es)
		b.record = func() { g.appended(key, es) }
		return b, "publish"
	case p < 98:
		sub, msg := g.failPair(topic)
		ttl := g.failTTL()
		b := failuresCall(topic, sub, msg, ttl)
		key := keys.Fail(topic, sub, msg)
		f := g.fails[key]
		if f == nil {
			f = &failModel{}
		}
		b.want = strconv.FormatInt(f.count+1, 10)
		b.record = func() {
			if g.fails[key] == nil {
				g.fails[key] = f
				g.failKeys = append(g.failKeys, key)
			}
			f.count++
			f.ttlMs = max(f.ttlMs, ttl)
		}
		return b, "failures.incr"
	}
	return built{args: text("EMQ.CAPS"), want: capsReply}, "caps"
}

func (g *gen) appended(key string, es []entry) {
	if _, ok := g.streams[key]; !ok {
		g.streamSeq = append(g.streamSeq, key)
	}
	for _, e := range es {
		g.streams[key] = append(g.streams[key], entryModel{sid: streamIDOf(e.evt), evt: e.evt, fields: fieldsSum(e.fields)})
	}
}

func (g *gen) valid() call {
	b, what := g.build("valid")
	return call{args: b.args, class: valid, what: "valid/" + what, want: b.want, record: b.record}
}

// ---- mutations --------------------------------------------------------------------

// Counts that no verb takes: zero, negative, the int64 extremes, one past
// them, and spellings string2ll refuses.
var badCounts = []string{"0", "-1", "9223372036854775807", "-9223372036854775808", "9223372036854775808",
	"-9223372036854775809", "", "abc", "1.0", "1e3", " 1", "1 ", "+1", "01", "-0", "0x1", "1\x00"}

// mutated changes one byte, one count, one id or one key of a well-formed
// call of the mutant space, predicting the refusal where the change decides
// it.
func (g *gen) mutated() call {
	b, what := g.build("mutant")
	for len(b.args) == 1 { // EMQ.CAPS has nothing to mutate
		b, what = g.build("mutant")
	}
	c := call{args: b.args, class: mutated}
	verb := string(b.args[0])
	switch g.pick(4) {
	case 0:
		i := g.pick(len(c.args))
		if len(c.args[i]) == 0 {
			c.args[i] = []byte{byte(g.r.Uint32())}
			c.what = fmt.Sprintf("mutated/%s/byte-into-empty-arg-%d", what, i)
			break
		}
		a := bytes.Clone(c.args[i])
		a[g.pick(len(a))] = byte(g.r.Uint32())
		c.args[i] = a
		c.what = fmt.Sprintf("mutated/%s/byte-of-arg-%d", what, i)
	case 1:
		i := b.counts[g.pick(len(b.counts))]
		orig, _ := strconv.ParseInt(string(c.args[i]), 10, 64)
		candidates := append([]string{strconv.FormatInt(orig+1, 10), strconv.FormatInt(orig-1, 10)}, badCounts...)
		v := candidates[g.pick(len(candidates))]
		if v == string(c.args[i]) {
			v = "0"
		}
		c.args[i] = []byte(v)
		c.what = fmt.Sprintf("mutated/%s/count-arg-%d=%q", what, i, v)
		switch {
		case i == 1 || (i == 3 && verb != "EMQ.FAILURES.INCR"):
			c.codes = []string{shape} // numkeys, n: the split can only fail
		case i == 3:
			if _, err := strconv.ParseInt(v, 10, 64); err != nil || v != strconv.FormatInt(orig+1, 10) && v != strconv.FormatInt(orig-1, 10) {
				c.codes = []string{shape}
			}
		default:
			c.refuse = true // a pairs count shifts the split onto a non-id
		}
	case 2:
		g.mutateID(&c, b, what)
	case 3:
		g.mutateKey(&c, b, what)
	}
	return c
}

// mutateID changes one id: to another namespace, uppercase, 18 bytes, the
// top bit set, another valid id, or (in a batch) the entry before's.
func (g *gen) mutateID(c *call, b built, what string) {
	at := b.ids[g.pick(len(b.ids))]
	a := bytes.Clone(c.args[at.arg])
	id := a[at.off : at.off+ids.Len]
	var repl []byte
	malformed := true
	switch v := g.pick(6); v {
	case 0:
		other := []ids.Namespace{ids.Job, ids.Msg, ids.Evt, ids.Sub}[g.pick(4)]
		if other == at.ns {
			other = "XYZ"
		}
		repl = append([]byte(other), id[3:]...)
	case 1:
		repl = append([]byte(string(at.ns)), []byte("0123456789ABCDEF")...)
	case 2:
		repl = bytes.Clone(id[:ids.Len-1])
	case 3:
		repl = append([]byte(string(at.ns)+"8"), id[4:]...)
	case 4:
		repl, malformed = []byte(g.mint(at.ns)), false
		if at.ns == ids.Job {
			c.codes = []string{layout} // the key's id and the argument now differ
		}
	case 5:
		malformed = false
		prev := -1
		for i, x := range b.ids {
			if x == at && i > 0 && b.ids[i-1].ns == ids.Evt && at.ns == ids.Evt {
				prev = i - 1
			}
		}
		if prev < 0 {
			first, _ := ids.New(at.ns, 0, g.node, 0)
			repl = []byte(first.String())
			break
		}
		p := b.ids[prev]
		repl, c.codes = bytes.Clone(b.args[p.arg][p.off:p.off+ids.Len]), []string{order}
	}
	if malformed {
		c.codes = []string{malformedCode(at, repl)}
	}
	c.args[at.arg] = splice(a, at.off, ids.Len, repl)
	c.what = fmt.Sprintf("mutated/%s/id-arg-%d@%d=%q", what, at.arg, at.off, repl)
}

// nonKeys follow no layout: a refusal of the key's layout whatever its slot.
var nonKeys = []string{"foo", "", "emq:", "EMQ:{x}:pending", "emq:{}:pending", "emq:{a{b}:pending", "{x}:pending",
	"emq:{x}", "emq:{x}:", "emq:{x}:unknown", "emq:{x}:job", "emq:{x}:stream:", "emq:{x}:stream:a:b", "emq:{x}:fail:nocolon", "emq:{x\x00}:pending"}

// mutateKey changes one key: to one of no layout, to another layout of the
// same name, or to a planted key of the junk space.
func (g *gen) mutateKey(c *call, b built, what string) {
	i := b.keys[g.pick(len(b.keys))]
	verb := string(c.args[0])
	var key string
	switch v := g.pick(3); {
	case v == 0:
		key, c.codes = nonKeys[g.pick(len(nonKeys))], []string{layout}
	case v == 1 || verb == "EMQ.ENQUEUE":
		// ENQUEUE's other key stays in the mutant space: a planted key
		// there names another queue, which is a layout refusal too.
		name := g.space("mutant", 9)
		others := []string{keys.Job(name, g.mint(ids.Job)), keys.Pending(name), keys.Stream(name, "s0"),
			keys.Fail(name, g.mint(ids.Sub), g.mint(ids.Msg))}
		key, c.codes = others[g.pick(len(others))], []string{layout}
		if verb == "EMQ.APPEND" && strings.Contains(key, ":stream:") || verb == "EMQ.FAILURES.INCR" && strings.Contains(key, ":fail:") {
			c.codes = nil // the right layout: the call stands, on another key
		}
	default:
		p := g.plantedFor(verb)
		key, c.codes = p.key, []string{p.code}
	}
	c.args[i] = []byte(key)
	c.what = fmt.Sprintf("mutated/%s/key-arg-%d=%q", what, i, key)
}
