// Command emq-compat writes the results section of docs/COMPATIBILITY.md
// from the suites' runs against each server of the matrix: the servers and
// where they came from, suites × servers with pass counts, what was skipped
// and why, and what failed. The rest of the document is prose it keeps.
//
//	emq-compat -in build/compat -out docs/COMPATIBILITY.md -commit abc1234 valkey-8.0 redis-7.0 …
//
// For each server name, -in holds NAME.json (`go test -json` of the
// suites), NAME.version (`server --version`) and NAME.origin (where in
// Debian's archive it came from; scripts/compat.sh writes all three). It
// exits 1 if any suite failed against any server, after writing.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/echomq/emq/internal/docsection"
)

// section names the generated part of the document.
const section = "emq-compat:results"

func main() {
	in := flag.String("in", "build/compat", "the directory of the runs")
	out := flag.String("out", "docs/COMPATIBILITY.md", "the document whose results section to rewrite")
	commit := flag.String("commit", "", "the commit the suites ran at")
	flag.Parse()
	if flag.NArg() == 0 {
		fail(fmt.Errorf("name at least one server"))
	}
	r := report{date: time.Now(), commit: *commit}
	for _, name := range flag.Args() {
		s, err := load(*in, name)
		if err != nil {
			fail(err)
		}
		r.servers = append(r.servers, s)
	}
	var body bytes.Buffer
	r.write(&body)
	old, err := os.ReadFile(*out)
	if err != nil && !os.IsNotExist(err) {
		fail(err)
	}
	if err := os.WriteFile(*out, []byte(docsection.Replace(string(old), section, body.String())), 0o644); err != nil {
		fail(err)
	}
	fmt.Print(body.String())
	if !r.ok() {
		fmt.Fprintln(os.Stderr, "emq-compat: not every suite passed on every server")
		os.Exit(1)
	}
}

// load reads one server's run.
func load(dir, name string) (server, error) {
	s := server{name: name}
	text := func(ext string) (string, error) {
		b, err := os.ReadFile(filepath.Join(dir, name+ext))
		first, _, _ := strings.Cut(string(b), "\n")
		return strings.TrimSpace(first), err
	}
	var err error
	if s.version, err = text(".version"); err != nil {
		return s, err
	}
	if s.origin, err = text(".origin"); err != nil {
		return s, err
	}
	f, err := os.Open(filepath.Join(dir, name+".json"))
	if err != nil {
		return s, err
	}
	defer f.Close()
	if s.run, err = readRun(f); err != nil {
		return s, fmt.Errorf("%s: %w", name, err)
	}
	return s, nil
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "emq-compat:", err)
	os.Exit(2)
}
