package main

import (
	"bufio"
	"io"
	"sort"
	"strconv"
	"strings"
)

// profile is a callgrind dump's instructions by where they ran: each
// function's own (self) cost, and each object's (binary or library).
type profile struct {
	total    int64
	function map[string]int64 // "function [object]"
	object   map[string]int64
	cron     int64 // the inclusive cost of every call of cronFunction
	yield    int64 // the inclusive cost of every call yieldFunction makes
}

// counted is what a measurement counts of the profile: all of it but the
// cron and the scheduler turns.
func (p profile) counted() int64 { return p.total - p.cron - p.yield }

// cronFunction is the server's periodic cron: at hz 1 it runs once a
// second, mostly to sample the allocator's statistics, whatever the
// clients do. A count that leaves it out does not depend on how long a
// loaded machine took to run the measured commands.
const cronFunction = "serverCron"

// yieldFunction gives the Go scheduler a turn (runtime.Gosched) when the
// module's last was 5 ms ago or more by the server's clock, ~1,300
// instructions each: paced by time too, at most 200 a second, so a
// native server pays a few instructions a call for it, where a server
// under callgrind, some 50 times slower, pays ~50 times as many turns a
// call — a hundred instructions, growing with how loaded the machine is.
// The counts leave its turns out, as they leave out the cron, and keep
// the check it makes every call.
const yieldFunction = "github.com/echomq/emq/host.yieldOnTime"

// parseProfile reads a callgrind dump made with positions "line" and the one
// event Ir, naming each object (binary, library) by objectName of its path.
// callgrind_annotate is not used: it double counts across the stack
// switches of Go's cgo callbacks.
func parseProfile(r io.Reader, objectName func(path string) string) (profile, error) {
	p := profile{function: map[string]int64{}, object: map[string]int64{}}
	// Names are compressed: "(id) name" defines an id, "(id)" refers to it;
	// ob/cob share one space, fn/cfn another.
	objects, functions := map[string]string{}, map[string]string{}
	name := func(space map[string]string, v string) string {
		id, rest, ok := strings.Cut(v, ")")
		if !strings.HasPrefix(id, "(") || !ok {
			return v
		}
		if rest = strings.TrimSpace(rest); rest != "" {
			space[id] = rest
		}
		return space[id]
	}
	var ob, fn, callee string
	afterCalls := false
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		key, value, isSpec := strings.Cut(line, "=")
		if isSpec && !strings.ContainsAny(key, " +-*") {
			switch key {
			case "ob":
				ob = objectName(name(objects, value))
			case "cob":
				name(objects, value)
			case "fn":
				fn = unrecursed(name(functions, value))
			case "cfn":
				callee = name(functions, value)
			case "calls":
				afterCalls = true
			}
			continue
		}
		fields := strings.Fields(line)
		if len(fields) != 2 || !isPosition(fields[0]) {
			continue
		}
		cost, err := strconv.ParseInt(fields[1], 10, 64)
		if err != nil {
			continue
		}
		if afterCalls { // the inclusive cost of a call, counted in the callee
			afterCalls = false
			switch {
			case callee == cronFunction:
				p.cron += cost
			case fn == yieldFunction:
				p.yield += cost
			}
			continue
		}
		p.total += cost
		p.function[fn+" ["+ob+"]"] += cost
		p.object[ob] += cost
	}
	return p, sc.Err()
}

// unrecursed is a function's name without the "'2", "'3" … callgrind
// appends to name its recursive activations, and sometimes a Go callback's
// frames after a stack switch: one function, one line in a listing.
func unrecursed(name string) string {
	i := strings.LastIndexByte(name, '\'')
	if i <= 0 || i == len(name)-1 {
		return name
	}
	if _, err := strconv.ParseUint(name[i+1:], 10, 32); err != nil {
		return name
	}
	return name[:i]
}

// isPosition reports whether s is a cost line's position: a number, a
// relative +n/-n, or * for the same as before.
func isPosition(s string) bool {
	s = strings.TrimLeft(s, "+-")
	if s == "*" {
		return true
	}
	_, err := strconv.ParseUint(s, 10, 64)
	return err == nil && s != ""
}

// cost is one named share of a profile.
type cost struct {
	name string
	ir   int64
}

// top returns the n largest entries of m, largest first.
func top(m map[string]int64, n int) []cost {
	out := make([]cost, 0, len(m))
	for k, v := range m {
		out = append(out, cost{k, v})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].ir != out[j].ir {
			return out[i].ir > out[j].ir
		}
		return out[i].name < out[j].name
	})
	return out[:min(n, len(out))]
}

// minus is, per name, how much more a has than b.
func minus(a, b map[string]int64) map[string]int64 {
	d := map[string]int64{}
	for k, v := range a {
		d[k] = v - b[k]
	}
	for k, v := range b {
		if _, ok := a[k]; !ok {
			d[k] = -v
		}
	}
	return d
}

// plus is p's and q's instructions together.
func (p profile) plus(q profile) profile {
	sum := profile{total: p.total + q.total, cron: p.cron + q.cron, yield: p.yield + q.yield,
		function: map[string]int64{}, object: map[string]int64{}}
	for _, m := range []profile{p, q} {
		for k, v := range m.function {
			sum.function[k] += v
		}
		for k, v := range m.object {
			sum.object[k] += v
		}
	}
	return sum
}
