package torture

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/echomq/emq/ids"
)

// moduleCodes are the first words of the module's refusals
// (docs/commands.md's refusals).
var moduleCodes = map[string]bool{shape: true, layout: true, kind: true, envelope: true, wrongTyp: true, count: true, order: true,
	noJob: true, lease: true, state: true}

// The server's own errors a call may meet before it reaches the module, and
// the only ones accepted: the arity rule (the first row of docs/commands.md's
// refusals) for a call with an argument count the command table refuses, and
// an unknown command for a name the module does not serve. Any other ERR —
// above all the module's "ERR emq internal error", a recovered panic — fails
// the run.
const (
	arityError   = "ERR wrong number of arguments for '%s' command"
	unknownError = "ERR unknown command '"
)

// verbStats count what one verb's calls met, to hold against INFO emq.
type verbStats struct {
	calls, refused int64
	// successes, by what they add up to in INFO emq
	admitted, duplicates, entries, envelopes, failures int64
	claimed                                            int64 // jobs delivered by claims
	acked, failed, released, settlesRefused            int64 // EMQ.SETTLE's settlements
	removed                                            int64 // jobs EMQ.REMOVE deleted
	scheduled                                          int64 // jobs admitted into delayed
	ticking                                            int64 // repeat schedules set to tick within a second
}

// tally is what a worker's calls met, by verb.
type tally map[string]*verbStats

func (t tally) verb(name string) *verbStats {
	if t[name] == nil {
		t[name] = &verbStats{}
	}
	return t[name]
}

func (t tally) add(o tally) {
	for name, s := range o {
		d := t.verb(name)
		d.calls += s.calls
		d.refused += s.refused
		d.admitted += s.admitted
		d.duplicates += s.duplicates
		d.entries += s.entries
		d.envelopes += s.envelopes
		d.failures += s.failures
		d.claimed += s.claimed
		d.acked += s.acked
		d.failed += s.failed
		d.released += s.released
		d.settlesRefused += s.settlesRefused
		d.removed += s.removed
		d.scheduled += s.scheduled
		d.ticking += s.ticking
	}
}

// check decides whether r is a reply c may get, and counts it.
func check(c call, r reply, counts tally) error {
	name := strings.ToUpper(string(c.args[0]))
	arity, known := 0, false
	for _, v := range verbs {
		if v.Name == name {
			arity, known = v.Arity, true
		}
	}
	switch {
	case !known:
		if r.isError() && strings.HasPrefix(r.text, unknownError) {
			return nil
		}
		return fmt.Errorf("a call of no verb of the module: want %s…, got %s", unknownError, r)
	case !arityOK(arity, len(c.args)):
		if want := fmt.Sprintf(arityError, name); r.isError() && r.text == want {
			return accepted(c, r)
		}
		return fmt.Errorf("%d arguments against arity %d: want the arity error, got %s", len(c.args), arity, r)
	}
	s := counts.verb(name)
	s.calls++
	if r.isError() {
		s.refused++
	}
	if c.class == valid && c.mayRefuse == nil {
		if got := r.String(); got != c.want {
			return fmt.Errorf("a valid call: want %s, got %s", c.want, got)
		}
	}
	if r.isError() {
		code, _, _ := strings.Cut(r.text, " ")
		if !moduleCodes[code] {
			return fmt.Errorf("an error that is no refusal of docs/commands.md: %s", r)
		}
		if c.mayRefuse != nil && !slices.Contains(c.mayRefuse, code) {
			return fmt.Errorf("a valid call refused with %s, not one of %v", r, c.mayRefuse)
		}
		return accepted(c, r)
	}
	if c.refuse || len(c.codes) > 0 {
		return fmt.Errorf("want a refusal %v, got success %s", c.codes, r)
	}
	return success(name, c.args, r, s)
}

// accepted checks an error reply against the codes c predicts.
func accepted(c call, r reply) error {
	if len(c.codes) == 0 {
		return nil
	}
	for _, code := range c.codes {
		if strings.HasPrefix(r.text, code) {
			return nil
		}
	}
	return fmt.Errorf("want a refusal starting %q, got %s", c.codes, r)
}

// success checks that r has the shape of verb's success, and counts it.
func success(verb string, args [][]byte, r reply, s *verbStats) error {
	if err := lifeSuccess(verb, args, r, s); err != nil {
		return err
	}
	switch verb {
	case "EMQ.ENQUEUE":
		if r.kind != ':' || (r.n != 0 && r.n != 1) {
			return fmt.Errorf("want 0 or 1, got %s", r)
		}
		s.admitted += r.n
		s.duplicates += 1 - r.n
	case "EMQ.APPEND", "EMQ.PUBLISH":
		n, _ := strconv.Atoi(string(args[3]))
		if r.kind != '*' || len(r.elems) != n {
			return fmt.Errorf("want an array of the n=%d stream IDs, got %s", n, r)
		}
		var prev ids.StreamID
		for i, e := range r.elems {
			sid, ok := ids.ParseStreamID(e.text)
			if e.kind != '$' || !ok || !prev.Less(sid) {
				return fmt.Errorf("element %d of %s is no stream ID above the one before", i+1, r)
			}
			prev = sid
		}
		if verb == "EMQ.APPEND" {
			s.entries += int64(n)
		} else {
			s.envelopes++
		}
	case "EMQ.FAILURES.INCR":
		if r.kind != ':' || r.n < 1 {
			return fmt.Errorf("want a count of 1 or more, got %s", r)
		}
		s.failures++
	case "EMQ.CAPS":
		if r.String() != capsReply {
			return fmt.Errorf("want %s, got %s", capsReply, r)
		}
	}
	return nil
}

// describe shows a call for a failure message: each argument quoted, long
// ones cut, and of many arguments the first 12 and the last 4.
func describe(c call) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s (%d args):", c.what, len(c.args))
	for i, a := range c.args {
		switch {
		case len(c.args) > 16 && i == 12:
			fmt.Fprintf(&b, " …")
			continue
		case len(c.args) > 16 && i > 12 && i < len(c.args)-4:
			continue
		case len(a) > 60:
			fmt.Fprintf(&b, " %q…(%d bytes)", a[:60], len(a))
		default:
			fmt.Fprintf(&b, " %q", a)
		}
	}
	return b.String()
}
