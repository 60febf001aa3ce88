package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/echomq/emq/inspect"
)

var statsCmd = &command{
	name: "stats", summary: "the module's counters (INFO emq), readable; summed over a cluster's primaries",
	detail: `Counters count since the module loaded on each node. Verbs shows calls,
ok and refused per verb that was called; refusals are by code; levels are
what holds now (blocked workers, the module's Go heap).`,
	examples: []string{"emq stats", "emq stats --json | jq .total.emq_jobs_acked"},
	maxArgs:  0,
	run:      runStats,
}

// statsJSON is INFO emq for scripts: per node, and summed.
type statsJSON struct {
	Nodes []nodeStatsJSON  `json:"nodes"`
	Total map[string]int64 `json:"total"`
}

type nodeStatsJSON struct {
	Addr   string           `json:"addr"`
	Fields map[string]int64 `json:"fields"`
}

func fieldMap(fields []inspect.Field) map[string]int64 {
	m := make(map[string]int64, len(fields))
	for _, f := range fields {
		m[f.Name] = f.Value
	}
	return m
}

func runStats(ctx context.Context, s *session, _ []string) error {
	in, err := s.inspector()
	if err != nil {
		return err
	}
	nodes, lost := in.Stats(ctx)
	if lost != nil && !inspect.Partial(lost) {
		return lost
	}
	if err := printStats(s, nodes); err != nil {
		return err
	}
	return lost // a primary that did not answer is missing from the sums: exit 1
}

// printStats writes the nodes' fields, summed, as groups, or as JSON.
func printStats(s *session, nodes []inspect.NodeStats) error {
	total := inspect.Sum(nodes)
	if s.o.json {
		out := statsJSON{Total: fieldMap(total)}
		for _, n := range nodes {
			out.Nodes = append(out.Nodes, nodeStatsJSON{Addr: n.Addr, Fields: fieldMap(n.Fields)})
		}
		return writeJSON(s.e.stdout, out)
	}
	addrs := make([]string, len(nodes))
	for i, n := range nodes {
		addrs[i] = n.Addr
	}
	w := s.e.stdout
	if len(nodes) > 1 {
		fmt.Fprintf(w, "INFO emq summed over %d primaries: %s\n", len(nodes), strings.Join(addrs, ", "))
	} else {
		fmt.Fprintf(w, "INFO emq of %s\n", strings.Join(addrs, ""))
	}
	if len(total) == 0 {
		fmt.Fprintln(w, "no counters: the module is not loaded (clients run the verbs' scripts)")
		return nil
	}
	g := groupStats(total)
	fmt.Fprintln(w, "\ncounters")
	t := newTable(w)
	for _, f := range g.counters {
		t.row("  "+label(f.Name), count(f.Value))
	}
	if err := t.flush(); err != nil {
		return err
	}
	fmt.Fprintln(w, "\nverbs")
	t = newTable(w, "  VERB", "CALLS", "OK", "REFUSED")
	for _, v := range g.verbs {
		if v.calls > 0 {
			t.row("  "+v.name, count(v.calls), count(v.ok), count(v.refused))
		}
	}
	if err := t.flush(); err != nil {
		return err
	}
	if len(g.refusals) > 0 {
		fmt.Fprintln(w, "\nrefusals by code")
		t = newTable(w)
		for _, f := range g.refusals {
			t.row("  "+f.Name, count(f.Value))
		}
		if err := t.flush(); err != nil {
			return err
		}
	}
	fmt.Fprintln(w, "\nlevels now")
	t = newTable(w)
	for _, f := range g.levels {
		t.row("  "+label(f.Name), count(f.Value))
	}
	return t.flush()
}

// verbStats are one verb's calls.
type verbStats struct {
	name               string
	calls, ok, refused int64
}

// statsGroups are INFO emq's fields, grouped for people.
type statsGroups struct {
	verbs            []verbStats
	counters, levels []inspect.Field
	refusals         []inspect.Field // non-zero only, named by their code
}

// groupStats sorts INFO emq's fields into groups by their roles
// (inspect.Tag): per verb, its calls, ok and refused; refusals by code;
// levels; counters, in INFO's order.
func groupStats(fields []inspect.Field) statsGroups {
	var g statsGroups
	tagged := inspect.Tag(fields)
	verb := map[string]int{}
	for _, f := range tagged {
		if f.Role == inspect.VerbCalls {
			verb[f.Of] = len(g.verbs)
			g.verbs = append(g.verbs, verbStats{name: f.Of, calls: f.Value})
		}
	}
	for _, f := range tagged {
		switch f.Role {
		case inspect.VerbOK:
			g.verbs[verb[f.Of]].ok = f.Value
		case inspect.VerbRefused:
			g.verbs[verb[f.Of]].refused = f.Value
		case inspect.CodeRefusals:
			if f.Value > 0 {
				g.refusals = append(g.refusals, inspect.Field{Name: f.Of, Value: f.Value})
			}
		case inspect.Level:
			g.levels = append(g.levels, f.Field)
		case inspect.Counter:
			g.counters = append(g.counters, f.Field)
		}
	}
	return g
}

// label is a field's name for people: emq_jobs_acked → jobs acked.
func label(name string) string {
	return strings.ReplaceAll(strings.TrimPrefix(name, "emq_"), "_", " ")
}
