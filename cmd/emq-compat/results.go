package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strings"
	"time"
)

// event is one line of `go test -json`.
type event struct {
	Time    time.Time
	Action  string
	Package string
	Test    string
	Elapsed float64
	Output  string
}

// suite is what one package's tests did against one server. Only leaf
// tests count — a test or subtest with no subtests of its own — so a
// table-driven test counts its rows, not itself again.
type suite struct {
	passed, failed, skipped int
	broken                  bool          // the package failed with no test failing: a build error, a panic, a timeout
	elapsed                 time.Duration // the package's run
	skips                   []note        // what each skipped test said
	failures                []string      // the failed tests' names
}

// note is one skipped test and the reason it gave.
type note struct{ test, reason string }

// run is every suite's result against one server.
type run struct {
	suites map[string]*suite // by package
	wall   time.Duration     // from the first event to the last
}

// testOutcome is one test's end.
type testOutcome struct {
	action string
	output []string // what the test printed, "=== RUN" and "--- PASS" lines left out
}

// readRun reads a `go test -json` stream.
func readRun(r io.Reader) (run, error) {
	tests := map[string]map[string]*testOutcome{} // package → test → outcome
	res := run{suites: map[string]*suite{}}
	var first, last time.Time
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) == 0 || line[0] != '{' {
			continue // a build error on its own line
		}
		var e event
		if err := json.Unmarshal(line, &e); err != nil {
			return run{}, fmt.Errorf("go test -json: %w", err)
		}
		if first.IsZero() {
			first = e.Time
		}
		last = e.Time
		if e.Package == "" {
			continue
		}
		s := res.suites[e.Package]
		if s == nil {
			s = &suite{}
			res.suites[e.Package], tests[e.Package] = s, map[string]*testOutcome{}
		}
		if e.Test == "" {
			switch e.Action {
			case "pass", "fail", "skip":
				s.elapsed = time.Duration(e.Elapsed * float64(time.Second))
				s.broken = e.Action == "fail"
			}
			continue
		}
		o := tests[e.Package][e.Test]
		if o == nil {
			o = &testOutcome{}
			tests[e.Package][e.Test] = o
		}
		switch e.Action {
		case "output":
			if s := strings.TrimSpace(e.Output); s != "" && !strings.HasPrefix(s, "=== ") && !strings.HasPrefix(s, "--- ") {
				o.output = append(o.output, s)
			}
		case "pass", "fail", "skip":
			o.action = e.Action
		}
	}
	if err := sc.Err(); err != nil {
		return run{}, err
	}
	for pkg, ts := range tests {
		res.suites[pkg].count(ts)
	}
	res.wall = last.Sub(first)
	return res, nil
}

// sourcePrefix is the "file_test.go:12: " that t.Log puts before a line.
var sourcePrefix = regexp.MustCompile(`^[\w.-]+\.go:\d+: `)

// count tallies the leaf tests of one package.
func (s *suite) count(tests map[string]*testOutcome) {
	names := make([]string, 0, len(tests))
	for name := range tests {
		names = append(names, name)
	}
	sort.Strings(names)
	for i, name := range names {
		if i+1 < len(names) && strings.HasPrefix(names[i+1], name+"/") {
			continue // a parent: its subtests count
		}
		o := tests[name]
		switch o.action {
		case "pass":
			s.passed++
		case "skip":
			s.skipped++
			reason := ""
			if len(o.output) > 0 {
				reason = sourcePrefix.ReplaceAllString(o.output[len(o.output)-1], "")
			}
			s.skips = append(s.skips, note{name, reason})
		default: // failed, or never finished (a panic, a timeout)
			s.failed++
			s.failures = append(s.failures, name)
		}
	}
	if s.failed > 0 {
		s.broken = false // the failures say why
	}
}

// ok reports whether every test of the suite passed or was skipped.
func (s *suite) ok() bool { return s.failed == 0 && !s.broken }
