package torture

import (
	"bytes"
	"fmt"
	"strconv"

	"github.com/echomq/emq/ids"
	"github.com/echomq/emq/keys"
	"github.com/echomq/emq/registry"
)

// plant returns the commands that put the worker's wrong-typed keys in
// place, remembering each key with the refusal a call meets there.
func (g *gen) plant() [][]string {
	types := map[string]func(key string) []string{
		"string": func(k string) []string { return []string{"SET", k, "v"} },
		"list":   func(k string) []string { return []string{"RPUSH", k, "a"} },
		"set":    func(k string) []string { return []string{"SADD", k, "a"} },
		"zset":   func(k string) []string { return []string{"ZADD", k, "1", "a"} },
		"hash":   func(k string) []string { return []string{"HSET", k, "f", "v"} },
		"stream": func(k string) []string { return []string{"XADD", k, "1-1", "f", "v"} },
	}
	var cmds [][]string
	add := func(slot, key, code string, cmd []string) {
		g.planted = append(g.planted, plantedKey{slot: slot, key: key, code: code})
		cmds = append(cmds, cmd)
	}
	for _, t := range []string{"string", "list", "set", "zset", "hash", "stream"} {
		name := g.space("junk", 0) + "-" + t
		set := types[t]
		// ENQUEUE's job key and pending key of one queue, both of type t:
		// one of the two is always wrong.
		job := keys.Job(name, g.mint(ids.Job))
		add("job", job, wrongTyp, set(job))
		cmds = append(cmds, set(keys.Pending(name)))
		if t != "stream" {
			add("stream", keys.Stream(name, "s"), wrongTyp, set(keys.Stream(name, "s")))
			add("msgs", keys.Stream(name, "msgs"), wrongTyp, set(keys.Stream(name, "msgs")))
		}
		if t != "string" {
			fail := keys.Fail(name, g.mint(ids.Sub), g.mint(ids.Msg))
			add("fail", fail, wrongTyp, set(fail))
		}
	}
	// Strings INCR refuses: not integers, or at the top of the range.
	for i, v := range []string{"abc", "1.5", " 1", "", "-0", "01", "9223372036854775807", "99999999999999999999"} {
		fail := keys.Fail(g.space("junk", 1)+"-count"+strconv.Itoa(i), g.mint(ids.Sub), g.mint(ids.Msg))
		add("fail", fail, count, []string{"SET", fail, v})
	}
	// Streams whose top is above every id: the last possible ID, and one
	// far in the future.
	for i, top := range []string{"18446744073709551615-18446744073709551615", "99999999999999-0"} {
		name := g.space("junk", 2) + "-top" + strconv.Itoa(i)
		for _, sname := range []string{"s", "msgs"} {
			slot := map[string]string{"s": "stream", "msgs": "msgs"}[sname]
			key := keys.Stream(name, sname)
			add(slot, key, order, []string{"XADD", key, top, "f", "v"})
		}
	}
	return append(cmds, g.plantLife()...)
}

// plantedFor picks a planted key of the slot verb's key fills.
func (g *gen) plantedFor(verb string) plantedKey {
	slot := map[string]string{"EMQ.ENQUEUE": "job", "EMQ.APPEND": "stream", "EMQ.PUBLISH": "msgs", "EMQ.FAILURES.INCR": "fail"}[verb]
	var fit []plantedKey
	for _, p := range g.planted {
		if p.slot == slot {
			fit = append(fit, p)
		}
	}
	return fit[g.pick(len(fit))]
}

// template is a well-formed call of the junk space, for garbage to break.
func (g *gen) template() (built, string) {
	for {
		if b, what := g.build("junk"); len(b.args) > 1 {
			return b, what
		}
	}
}

// verbs are the command table's verbs, with their arity as the server
// enforces it.
var verbs = registry.Rows()

// arityOK reports whether argc arguments meet arity, as the server checks.
func arityOK(arity, argc int) bool {
	return arity == argc || arity < 0 && argc >= -arity
}

func (g *gen) randomArgs(n int) [][]byte {
	args := make([][]byte, n)
	for i := range args {
		args[i] = g.bytes(g.pick(40))
	}
	return args
}

// garbage is a call built to be refused, with the refusal predicted where
// the garbage decides it.
func (g *gen) garbage() call {
	c := call{class: garbage, refuse: true}
	switch p := g.pick(17); p {
	case 0: // argument counts the server refuses, up to 10,000
		v := verbs[g.pick(len(verbs))]
		argc := []int{1, 2, 3, 4, 5, 6, 7, 8, 100, 10_000}[g.pick(10)]
		for arityOK(v.Arity, argc) {
			argc = 1 + g.pick(10)
			if v.Arity < 0 {
				argc = 1 + g.pick(-v.Arity-1)
			}
		}
		c.args = append(text(v.Name), g.randomArgs(argc-1)...)
		c.codes = []string{"ERR wrong number of arguments for '" + v.Name + "' command"}
		c.what = fmt.Sprintf("garbage/arity-%s-%d", v.Name, argc)
	case 1: // names the module does not serve
		names := []string{"EMQ.NOPE", "EMQ.", "EMQ.ENQUEUEX", "EMQ.APPEN", "EMQ.FAILURES", "EMQ.FAILURES.INCRX", "EMQ.PANIC"}
		if g.testBuild {
			names = names[:len(names)-1]
		}
		name := names[g.pick(len(names))]
		c.args = append(text(name), g.randomArgs(g.pick(6))...)
		c.codes = []string{"ERR unknown command"}
		c.what = "garbage/unknown-" + name
	case 2: // binary in every argument
		v := verbs[g.pick(4)]
		argc := v.Arity
		if argc < 0 {
			argc = -argc + g.pick(8)
		}
		c.args = append(text(v.Name), g.randomArgs(argc-1)...)
		c.what = "garbage/binary-" + v.Name
	case 3: // numkeys lies
		b, what := g.template()
		lies := append([]string{"1", "2", "3", "100", "10000", "2147483647", "4294967297", "-2147483648"}, badCounts...)
		lie := lies[g.pick(len(lies))]
		if lie == string(b.args[1]) {
			lie = "0"
		}
		c.args, c.codes = b.args, []string{shape}
		c.args[1] = []byte(lie)
		c.what = fmt.Sprintf("garbage/%s/numkeys=%q", what, lie)
	case 4: // extreme counts
		b, what := g.template()
		i := b.counts[g.pick(len(b.counts))]
		v := badCounts[g.pick(len(badCounts))]
		c.args, c.codes = b.args, []string{shape}
		c.args[i] = []byte(v)
		c.what = fmt.Sprintf("garbage/%s/count-arg-%d=%q", what, i, v)
	case 5, 6: // wrong types and values at every key
		return g.wrongType()
	case 7: // keys of no layout, or another layout
		b, what := g.template()
		i := b.keys[g.pick(len(b.keys))]
		name := g.space("junk", 3)
		others := append([]string{keys.Job(name, g.mint(ids.Job)), keys.Pending(name), keys.Stream(name, "msgs"),
			keys.Fail(name, g.mint(ids.Sub), g.mint(ids.Msg))}, nonKeys...)
		key := others[g.pick(len(others))]
		if layoutFits(string(b.args[0]), i, key) {
			key = "foo"
		}
		c.args, c.codes = b.args, []string{layout}
		c.args[i] = []byte(key)
		c.what = fmt.Sprintf("garbage/%s/key-arg-%d=%q", what, i, key)
	case 8: // ids of other namespaces, or binary where an id goes
		b, what := g.template()
		at := b.ids[g.pick(len(b.ids))]
		repl := []byte("XYZ" + string(g.bytes(16)))
		if g.pick(2) == 0 {
			other := map[ids.Namespace]ids.Namespace{ids.Job: ids.Msg, ids.Msg: ids.Evt, ids.Evt: ids.Sub, ids.Sub: ids.Job}[at.ns]
			repl = append([]byte(other), b.args[at.arg][at.off+3:at.off+ids.Len]...)
		}
		c.args, c.codes = b.args, []string{malformedCode(at, repl)}
		c.args[at.arg] = splice(b.args[at.arg], at.off, ids.Len, repl)
		c.what = fmt.Sprintf("garbage/%s/id-arg-%d=%q", what, at.arg, repl)
	case 9: // a huge argument where a count, a key or an id goes
		return g.hugeGarbage()
	case 10: // an entry that breaks the split: an empty or reserved field, an argument too few or too many
		return g.brokenEntry()
	case 11: // an envelope without payload, with two msgs, or with a msg that is no MSG id
		return g.brokenEnvelope()
	case 12, 13: // 2,500 entries in 10,000 arguments, the last one wrong
		return g.bigBatch()
	case 15, 16: // the job lifecycle's
		return g.lifeGarbage()
	default: // a valid first entry, then thousands of arguments of noise
		key := keys.Stream(g.space("junk", 4), "s")
		c.args = append(text("EMQ.APPEND", "1", key, "2500", g.mint(ids.Evt), "1", "f", "v"), g.randomArgs(9_992)...)
		c.codes = []string{shape, kind}
		c.what = "garbage/append-10000-noise"
	}
	return c
}

// layoutFits reports whether key follows the layout of argument i of verb,
// so that putting it there would not be a layout refusal.
func layoutFits(verb string, i int, key string) bool {
	k := []byte(key)
	switch {
	case verb == "EMQ.ENQUEUE" && i == 2:
		_, _, ok := keys.SplitJob(k)
		return ok
	case verb == "EMQ.ENQUEUE":
		_, ok := keys.SplitPending(k)
		return ok
	case verb == "EMQ.APPEND":
		_, _, ok := keys.SplitStream(k)
		return ok
	case verb == "EMQ.PUBLISH":
		_, sname, ok := keys.SplitStream(k)
		return ok && string(sname) == "msgs"
	}
	_, _, _, ok := keys.SplitFail(k)
	return ok
}

// malformedCode is the refusal of repl, a malformed id, put at at: EMQKIND,
// in ENQUEUE's exact words for a JOB id (a msg field's too: an id in the
// wrong place); but EMQLAYOUT inside a key if it holds a ':', which adds a
// segment to the key.
func malformedCode(at idAt, repl []byte) string {
	switch {
	case at.off > 0 && bytes.IndexByte(repl, ':') >= 0:
		return layout
	case at.ns == ids.Job:
		return jobKind
	}
	return kind
}

func splice(a []byte, off, n int, repl []byte) []byte {
	return append(append(append([]byte{}, a[:off]...), repl...), a[off+n:]...)
}

// wrongType calls a verb on a planted key: a wrong type at every key slot,
// a stored value INCR refuses, a stream whose top is above every id.
func (g *gen) wrongType() call {
	c := call{class: garbage, refuse: true}
	b, what := g.template()
	verb := string(b.args[0])
	p := g.plantedFor(verb)
	c.codes = []string{p.code}
	switch verb {
	case "EMQ.ENQUEUE":
		_, id, _ := keys.SplitJob([]byte(p.key))
		queue, _, _ := keys.SplitJob([]byte(p.key))
		b = enqueueCall(string(queue), string(id), g.payload())
		if g.pick(2) == 0 && string(queue) != g.space("junk", 0)+"-zset" {
			b = enqueueCall(string(queue), g.mint(ids.Job), g.payload()) // a new job, into a pending key of the wrong type
		}
	default:
		b.args[2] = []byte(p.key)
	}
	c.args = b.args
	c.what = fmt.Sprintf("garbage/%s/planted=%q", what, p.key)
	return c
}

func (g *gen) hugeGarbage() call {
	c := call{class: garbage, refuse: true}
	b, what := g.template()
	huge := g.huge()
	switch g.pick(4) {
	case 0:
		i := b.counts[g.pick(len(b.counts))]
		c.args, c.codes = b.args, []string{shape}
		c.args[i] = bytes.Repeat([]byte("1"), len(huge))
		what += fmt.Sprintf("/count-arg-%d", i)
	case 1:
		i := b.keys[g.pick(len(b.keys))]
		c.args, c.codes = b.args, []string{layout}
		c.args[i] = append([]byte("x"), huge...)
		what += fmt.Sprintf("/key-arg-%d", i)
	case 2:
		at := b.ids[g.pick(len(b.ids))]
		c.args, c.codes = b.args, []string{malformedCode(at, huge)}
		c.args[at.arg] = splice(b.args[at.arg], at.off, ids.Len, huge)
		what += fmt.Sprintf("/id-arg-%d", at.arg)
	default:
		// A huge value, next to something small that is wrong: a reserved
		// field in a batch, a JOB id of another namespace in a job.
		key := keys.Stream(g.space("junk", 5), "s")
		c.args, c.codes = text("EMQ.APPEND", "1", key, "2", g.mint(ids.Evt), "1", "f"), []string{shape}
		c.args = append(c.args, huge)
		c.args = append(c.args, text(g.mint(ids.Evt), "1", "id", "v")...)
		if g.pick(2) == 0 {
			id := g.mint(ids.Msg)
			c.args, c.codes = append(text("EMQ.ENQUEUE", "2", keys.Job(g.space("junk", 5), id), keys.Pending(g.space("junk", 5)), id), huge), []string{jobKind}
		}
		what = "huge-value"
	}
	c.what = "garbage/huge/" + what
	return c
}

// brokenEntry breaks the split of a batch: an empty or reserved field name,
// an argument too few or too many.
func (g *gen) brokenEntry() call {
	key := keys.Stream(g.space("junk", 6), "s"+strconv.Itoa(g.pick(2)))
	es := g.entries(g.batchSize())
	b := batchCall("EMQ.APPEND", key, es)
	c := call{class: garbage, refuse: true, args: b.args, codes: []string{shape}}
	// The field names of the batch sit after each entry's id and pairs.
	var fields []int
	pos := 4
	for _, e := range es {
		for j := 0; j < len(e.fields); j += 2 {
			fields = append(fields, pos+2+j)
		}
		pos += 2 + len(e.fields)
	}
	switch g.pick(4) {
	case 0:
		c.args[fields[g.pick(len(fields))]] = nil
		c.what = "garbage/append/empty-field"
	case 1:
		c.args[fields[g.pick(len(fields))]] = []byte("id")
		c.what = "garbage/append/reserved-field"
	case 2:
		c.args = c.args[:len(c.args)-1]
		c.what = "garbage/append/one-argument-short"
	default:
		c.args = append(c.args, g.bytes(g.pick(8)))
		c.what = "garbage/append/one-argument-over"
	}
	return c
}

func (g *gen) brokenEnvelope() call {
	key := keys.Stream(g.space("junk", 7), "msgs")
	msg, payload := g.mint(ids.Msg), g.payload()
	var fields [][]byte
	what, code := "", envelope
	switch g.pick(4) {
	case 0:
		fields, what = text("msg", msg, "trace", "x"), "no-payload"
	case 1:
		fields, what = append(text("payload"), payload), "no-msg"
	case 2:
		fields, what = append(text("msg", msg, "msg", msg, "payload"), payload), "two-msgs"
	default: // an id in the wrong place
		fields, what = append(text("msg", g.mint(ids.Job), "payload"), payload), "msg-not-a-msg-id"
		code = kind
	}
	b := batchCall("EMQ.PUBLISH", key, []entry{{evt: g.mint(ids.Evt), fields: fields}})
	return call{class: garbage, refuse: true, args: b.args, codes: []string{code}, what: "garbage/publish/" + what}
}

// bigBatch is EMQ.APPEND of 2,499 entries in 10,000 arguments, all well
// formed but the last: its id of another namespace, its field reserved, or
// its id the one before; or n one more than the entries.
func (g *gen) bigBatch() call {
	key := keys.Stream(g.space("junk", 8), "s")
	es := make([]entry, 2_499)
	for i := range es {
		es[i] = entry{evt: g.mint(ids.Evt), fields: [][]byte{[]byte("f"), g.bytes(g.pick(4))}}
	}
	last := &es[len(es)-1]
	c := call{class: garbage, refuse: true}
	switch g.pick(4) {
	case 0:
		last.evt = "MSG" + last.evt[3:]
		c.codes, c.what = []string{kind}, "garbage/append-2499/last-id-msg"
	case 1:
		last.fields[0] = []byte("id")
		c.codes, c.what = []string{shape}, "garbage/append-2499/last-field-reserved"
	case 2:
		last.evt = es[len(es)-2].evt
		c.codes, c.what = []string{order}, "garbage/append-2499/last-id-repeats"
	}
	b := batchCall("EMQ.APPEND", key, es)
	c.args = b.args
	if c.codes == nil {
		c.args[3] = []byte("2500")
		c.codes, c.what = []string{shape}, "garbage/append-2499/n-2500"
	}
	return c
}
