package inspect

import (
	"context"
	"fmt"
	"iter"
	"strconv"
	"strings"
)

// Field is one integer field of INFO emq, as the server names it
// (emq_jobs_acked …).
type Field struct {
	Name  string
	Value int64
}

// NodeStats are one primary's INFO emq fields, in the server's order.
// A node without the module has none.
type NodeStats struct {
	Addr   string
	Fields []Field
}

// Get returns the value of field name, or 0 when absent.
func (s NodeStats) Get(name string) int64 {
	for _, f := range s.Fields {
		if f.Name == name {
			return f.Value
		}
	}
	return 0
}

// levels are the INFO emq fields that tell a level now, not a count since
// the module loaded; every other field only grows until the next load.
var levels = map[string]bool{
	"emq_blocked_workers":     true,
	"emq_timers":              true,
	"emq_go_heap_inuse_bytes": true,
	"emq_go_heap_live_bytes":  true,
	"emq_go_heap_objects":     true,
	"emq_go_threads":          true,
	"emq_go_maxprocs":         true,
}

// IsLevel reports whether INFO emq's field name is a level (a gauge) rather
// than a counter.
func IsLevel(name string) bool { return levels[name] }

// Role is what an INFO emq field tells, read from its name.
type Role int

// The roles of INFO emq's fields.
const (
	Counter      Role = iota // a count since the module loaded (emq_jobs_acked …)
	Level                    // what holds now (IsLevel: emq_blocked_workers …)
	VerbCalls                // emq_calls_<verb>: the verb's calls, refused ones included
	VerbOK                   // emq_ok_<verb>: its calls that succeeded
	VerbRefused              // emq_refused_<verb>: its calls refused
	CodeRefusals             // emq_refused_<code>: refusals with the code, over every verb
)

// Tagged is an INFO emq field with its role and, for a verb's or a code's
// field, the verb as INFO names it (ack, failures_incr) or the code as the
// error reply spells it (EMQLAYOUT, ERR).
type Tagged struct {
	Field
	Role Role
	Of   string
}

// Tag gives each field its role, in order. The emq_calls_<verb> fields
// name the verbs, which tells emq_refused_<verb> from emq_refused_<code>;
// every field not of a verb, a code or a level is a counter, so one a new
// version adds shows up unasked.
func Tag(fields []Field) []Tagged {
	verbs := map[string]bool{}
	for _, f := range fields {
		if v, ok := strings.CutPrefix(f.Name, "emq_calls_"); ok {
			verbs[v] = true
		}
	}
	out := make([]Tagged, len(fields))
	for i, f := range fields {
		t := Tagged{Field: f, Role: Counter}
		calls, isCalls := strings.CutPrefix(f.Name, "emq_calls_")
		ok, isOK := strings.CutPrefix(f.Name, "emq_ok_")
		refused, isRefused := strings.CutPrefix(f.Name, "emq_refused_")
		switch {
		case isCalls:
			t.Role, t.Of = VerbCalls, calls
		case isOK && verbs[ok]:
			t.Role, t.Of = VerbOK, ok
		case isRefused && verbs[refused]:
			t.Role, t.Of = VerbRefused, refused
		case isRefused:
			t.Role, t.Of = CodeRefusals, strings.ToUpper(refused)
		case IsLevel(f.Name):
			t.Role = Level
		}
		out[i] = t
	}
	return out
}

// Stats returns INFO emq of every primary, in address order: one INFO per
// primary. With a primary of a cluster that does not answer, it returns
// those of the others and the *UnreachableError.
func (in *Inspector) Stats(ctx context.Context) ([]NodeStats, error) {
	primaries, lost := in.askPrimaries(ctx)
	if lost != nil && !Partial(lost) {
		return nil, lost
	}
	out := make([]NodeStats, len(primaries))
	for i, p := range primaries {
		text, err := p.Client.Do(ctx, p.Client.B().Info().Section("emq").Build()).ToString()
		if err != nil {
			return nil, fmt.Errorf("INFO emq of %s: %w", p.Addr, err)
		}
		out[i] = NodeStats{Addr: p.Addr, Fields: ParseInfo(text)}
	}
	return out, lost
}

// Sum adds the nodes' fields by name, in the first node's order (then any
// field only a later node has).
func Sum(nodes []NodeStats) []Field {
	var out []Field
	at := map[string]int{}
	for _, n := range nodes {
		for _, f := range n.Fields {
			i, ok := at[f.Name]
			if !ok {
				i = len(out)
				at[f.Name] = i
				out = append(out, Field{Name: f.Name})
			}
			out[i].Value += f.Value
		}
	}
	return out
}

// ParseInfo reads the integer fields of an INFO reply, in order.
func ParseInfo(text string) []Field {
	var out []Field
	for name, value := range InfoFields(text) {
		if n, err := strconv.ParseInt(value, 10, 64); err == nil {
			out = append(out, Field{Name: name, Value: n})
		}
	}
	return out
}

// InfoFields yields each field of an INFO reply with its value, in order,
// skipping the section headers; the text may be RESP2's bulk string or
// RESP3's verbatim string (its "txt:" format kept).
func InfoFields(text string) iter.Seq2[string, string] {
	return func(yield func(string, string) bool) {
		text = strings.TrimPrefix(text, "txt:")
		for line := range strings.Lines(text) {
			line = strings.TrimRight(line, "\r\n")
			name, value, ok := strings.Cut(line, ":")
			if ok && !strings.HasPrefix(line, "#") && !yield(name, value) {
				return
			}
		}
	}
}
