package main

import (
	"fmt"
	"io"
	"regexp"
	"sort"
	"strings"
	"time"
)

// server is one column of the matrix: which server, where it came from,
// and what the suites did against it.
type server struct {
	name    string // as scripts/servers.sh names it: valkey-8.1
	version string // the first line of `server --version`
	origin  string // where in Debian's archive it came from
	run     run
}

// versionField matches "v=8.1.1" and "malloc=jemalloc-5.3.0" in `--version`.
var versionField = regexp.MustCompile(`\b(v|malloc)=(\S+)`)

// serverName splits a matrix name into its server and what it runs with:
// "valkey-8.0-io-threads" is valkey-8.0 run with "io-threads".
var serverName = regexp.MustCompile(`^[a-z]+-[0-9.]+(?:-(.+))?$`)

// title is the product and version, and what the server runs with when
// its name says: "Valkey 8.1.1", "Valkey 8.0.1 with io-threads".
func (s server) title() string {
	product, _, _ := strings.Cut(s.version, " ")
	title := product + " " + s.field("v")
	if m := serverName.FindStringSubmatch(s.name); m != nil && m[1] != "" {
		title += " with " + m[1]
	}
	return title
}

func (s server) field(name string) string {
	for _, m := range versionField.FindAllStringSubmatch(s.version, -1) {
		if m[1] == name {
			return m[2]
		}
	}
	return "?"
}

// report is the generated section of docs/COMPATIBILITY.md.
type report struct {
	date    time.Time
	commit  string
	servers []server
}

// packages returns every package any server ran, sorted.
func (r report) packages() []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range r.servers {
		for p := range s.run.suites {
			if !seen[p] {
				seen[p] = true
				out = append(out, p)
			}
		}
	}
	sort.Strings(out)
	return out
}

// ok reports whether every suite passed on every server.
func (r report) ok() bool {
	for _, s := range r.servers {
		for _, p := range r.packages() {
			if st := s.run.suites[p]; st == nil || !st.ok() {
				return false
			}
		}
	}
	return true
}

// write prints the section: the servers, then suites × servers with pass
// counts, then every skipped test with its reason, and every failure.
func (r report) write(w io.Writer) {
	fmt.Fprintf(w, "Written by `make compat` (`cmd/emq-compat`) on %s at commit %s. Each count is the tests and table rows that passed, out of those run, with `EMQ_SERVER` naming the server.\n\n",
		r.date.UTC().Format("2006-01-02"), r.commit)
	fmt.Fprintln(w, "| server | from Debian's archive | allocator |")
	fmt.Fprintln(w, "|---|---|---|")
	for _, s := range r.servers {
		fmt.Fprintf(w, "| %s | %s | %s |\n", s.title(), s.origin, s.field("malloc"))
	}
	fmt.Fprintln(w)

	pkgs := r.packages()
	prefix := commonDir(pkgs)
	fmt.Fprint(w, "| suite |")
	for _, s := range r.servers {
		fmt.Fprintf(w, " %s |", s.title())
	}
	fmt.Fprint(w, "\n|---|")
	fmt.Fprint(w, strings.Repeat("---:|", len(r.servers)))
	fmt.Fprintln(w)
	for _, p := range pkgs {
		fmt.Fprintf(w, "| %s |", strings.TrimPrefix(p, prefix))
		for _, s := range r.servers {
			fmt.Fprintf(w, " %s |", cell(s.run.suites[p]))
		}
		fmt.Fprintln(w)
	}
	fmt.Fprint(w, "| **every suite** |")
	for _, s := range r.servers {
		var all suite
		for _, p := range pkgs {
			if st := s.run.suites[p]; st != nil {
				all.passed, all.failed, all.skipped = all.passed+st.passed, all.failed+st.failed, all.skipped+st.skipped
				all.broken = all.broken || st.broken
			} else {
				all.broken = true
			}
		}
		fmt.Fprintf(w, " **%s** |", cell(&all))
	}
	fmt.Fprint(w, "\n| wall time |")
	for _, s := range r.servers {
		fmt.Fprintf(w, " %s |", s.run.wall.Round(time.Second))
	}
	fmt.Fprintln(w)

	r.list(w, "Skipped, and why", prefix, func(st *suite) []string {
		var out []string
		for _, n := range st.skips {
			out = append(out, fmt.Sprintf("`%s` — %s", n.test, n.reason))
		}
		return out
	})
	r.list(w, "Failed", prefix, func(st *suite) []string {
		out := append([]string(nil), st.failures...)
		for i := range out {
			out[i] = "`" + out[i] + "`"
		}
		if st.broken {
			out = append(out, "the package failed outside its tests (build, panic or timeout)")
		}
		return out
	})
}

// list prints a headed list of what items says about each suite of each
// server, or nothing if it says nothing.
func (r report) list(w io.Writer, heading, prefix string, items func(*suite) []string) {
	var lines []string
	for _, s := range r.servers {
		for _, p := range r.packages() {
			st := s.run.suites[p]
			if st == nil {
				continue
			}
			for _, it := range items(st) {
				lines = append(lines, fmt.Sprintf("- %s, %s: %s", s.title(), strings.TrimPrefix(p, prefix), it))
			}
		}
	}
	if len(lines) == 0 {
		return
	}
	fmt.Fprintf(w, "\n%s:\n\n%s\n", heading, strings.Join(lines, "\n"))
}

// cell is one suite's count: "41/41", "40/41, 1 skipped", "FAIL 39/41".
func cell(st *suite) string {
	switch {
	case st == nil:
		return "not run"
	case st.broken:
		return "FAIL (package)"
	}
	c := fmt.Sprintf("%d/%d", st.passed, st.passed+st.failed+st.skipped)
	if st.failed > 0 {
		c = "FAIL " + c
	}
	if st.skipped > 0 {
		c += fmt.Sprintf(", %d skipped", st.skipped)
	}
	return c
}

// commonDir is the directory every package path starts with, slash
// included: "github.com/echomq/emq/".
func commonDir(pkgs []string) string {
	if len(pkgs) == 0 {
		return ""
	}
	prefix := pkgs[0]
	for _, p := range pkgs[1:] {
		for !strings.HasPrefix(p, prefix) {
			prefix = prefix[:len(prefix)-1]
		}
	}
	if len(pkgs) == 1 || !strings.HasSuffix(prefix, "/") {
		prefix = prefix[:strings.LastIndex(prefix, "/")+1]
	}
	return prefix
}
