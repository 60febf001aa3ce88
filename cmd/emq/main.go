// Command emq shows and steers emq queues: what every queue holds, the
// jobs of a state, one job, a queue's live events, reviving, deleting and
// purging jobs, pausing a queue, its rate limit and its events, the
// module's counters, a web dashboard and Prometheus metrics. It talks
// to a standalone server or to a cluster (every primary) through
// valkey-go; `emq help` lists the subcommands with examples.
//
//	go install ./cmd/emq
//	emq queues
//	emq jobs emails --state dead
//	emq revive emails --all
//	emq pause emails
//	emq limit emails 50 1s
//	emq tail emails
//	emq --addr 10.0.0.5:6379 enqueue emails '{"to":"ann@example.com"}' --delay 10m
//	emq dash --listen 127.0.0.1:8080 --write
//
// Exit codes: 0 done; 1 failed (no server, an unexpected reply); 2 bad
// usage; 3 a job (or schedule) named does not exist; 4 the server refused
// an action (a refusal code, NOPERM, a replica's READONLY, OOM over
// maxmemory), or some jobs of a bulk action.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	emqverbs "github.com/echomq/emq/emq"
	emqerrors "github.com/echomq/emq/errors"
	"github.com/echomq/emq/inspect"
	"github.com/valkey-io/valkey-go"
)

// The exit codes a script can test.
const (
	exitOK       = 0
	exitFailed   = 1
	exitUsage    = 2
	exitNotFound = 3
	exitRefused  = 4
)

// env is what one run talks to: its streams, the environment, the clock.
type env struct {
	stdout, stderr io.Writer
	getenv         func(string) string
	now            func() time.Time
	// progress is where bulk actions draw their progress bar: stderr when
	// it is a terminal, else nil (no bar).
	progress io.Writer
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	e := env{stdout: os.Stdout, stderr: os.Stderr, getenv: os.Getenv, now: time.Now}
	if fi, err := os.Stderr.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
		e.progress = os.Stderr
	}
	os.Exit(run(ctx, os.Args[1:], e))
}

// exitError is an error with the exit code it ends the run with.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// usageError is a bad invocation: exit code 2.
func usageError(format string, args ...any) error {
	return &exitError{code: exitUsage, err: fmt.Errorf(format, args...)}
}

// exitCode is the code err ends a run with.
func exitCode(err error) int {
	var ee *exitError
	var refusal *emqerrors.Refusal
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &ee):
		return ee.code
	case errors.Is(err, inspect.ErrNoJob), errors.Is(err, emqerrors.NoJob):
		return exitNotFound
	case migrating(err): // a passing failure, whoever answered it: run it again
		return exitFailed
	case errors.As(err, &refusal), serverRefused(err, "READONLY"), serverRefused(err, "OOM"):
		return exitRefused
	}
	return exitFailed
}

// serverRefused reports whether err is the server's refusal of a write
// with code: a replica's READONLY, or OOM over maxmemory — a refusal as
// NOPERM is.
func serverRefused(err error, code string) bool {
	var verr *valkey.ValkeyError
	return errors.As(err, &verr) && strings.HasPrefix(verr.Error(), code+" ")
}

// migrating reports whether err is TRYAGAIN of a queue whose slot is
// migrating: the server's own (a call's keys split), or a verb's (a key
// its queue names has moved).
func migrating(err error) bool {
	return serverRefused(err, "TRYAGAIN") || emqerrors.CodeOf(err) == emqerrors.TryAgain
}

// run runs the command line args (without the program's name) and returns
// the exit code.
func run(ctx context.Context, args []string, e env) int {
	args = commandFirst(args, e)
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" || args[0] == "-help" {
		if len(args) > 1 {
			cmd := lookup(args[1])
			if cmd == nil {
				fmt.Fprintf(e.stderr, "emq help: no command %q\n\n%s", args[1], overview())
				return exitUsage
			}
			fmt.Fprint(e.stdout, cmd.help(e))
			return exitOK
		}
		w := e.stdout
		if len(args) == 0 {
			w = e.stderr
		}
		fmt.Fprint(w, overview())
		if len(args) == 0 {
			return exitUsage
		}
		return exitOK
	}
	if args[0] == "version" || args[0] == "--version" || args[0] == "-version" { // the common flags ignored
		// the module's version, which this emq was built with; a server's
		// own is EMQ.CAPS's
		fmt.Fprintf(e.stdout, "emq %s\n", emqverbs.Version)
		return exitOK
	}
	cmd := lookup(args[0])
	if cmd == nil {
		fmt.Fprintf(e.stderr, "emq: no command %q\n\n%s", args[0], overview())
		return exitUsage
	}
	o := &options{}
	fs := cmd.flagSet(o, e)
	pos, err := parseInterleaved(fs, args[1:])
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(e.stdout, cmd.help(e))
		return exitOK
	}
	switch {
	case err != nil:
	case len(pos) < cmd.minArgs || (cmd.maxArgs >= 0 && len(pos) > cmd.maxArgs):
		err = usageError("%s takes %s", cmd.name, cmd.argsText())
	case o.timeout <= 0:
		err = usageError("--timeout %v: want a positive duration", o.timeout)
	default:
		err = o.check()
	}
	if err != nil {
		fmt.Fprintf(e.stderr, "emq %s: %s\nusage: %s (emq help %s)\n", cmd.name, terminalText(err.Error()),
			strings.TrimSpace("emq "+cmd.name+" "+cmd.args), cmd.name)
		return exitUsage
	}
	if !cmd.serves {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.timeout)
		defer cancel()
	}
	s := &session{e: e, o: o}
	defer s.close()
	if err := cmd.run(ctx, s, pos); err != nil {
		hint := ""
		switch {
		case serverRefused(err, "READONLY"):
			hint = " (--addr names a replica: actions go to its primary)"
		case migrating(err):
			hint = " (the queue's slot is migrating, some of its keys moved: run it again once the slot has moved)"
		case s.sentinel(err):
			hint = " (--addr names a Sentinel: give --sentinel <name> of the primary it monitors)"
		}
		fmt.Fprintf(e.stderr, "emq %s: %s%s\n", cmd.name, terminalText(err.Error()), hint)
		return exitCode(err)
	}
	return exitOK
}

// commandFirst moves the common flags given before the command (emq
// --addr host:port queues) to after it, where the command parses them;
// args that do not start so are returned as they are.
func commandFirst(args []string, e env) []string {
	if len(args) == 0 || !strings.HasPrefix(args[0], "-") {
		return args
	}
	fs := (&command{}).flagSet(&options{}, e)
	if fs.Parse(args) != nil || fs.NArg() == 0 {
		return args // help, or a flag only a command takes: run says which
	}
	rest := fs.Args()
	flags := args[:len(args)-len(rest)]
	return append(append([]string{rest[0]}, flags...), rest[1:]...)
}

// parseInterleaved parses flags anywhere among the positional arguments
// (emq jobs emails --state dead); everything after "--" is positional.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if len(args) > 0 && negative(args[0]) { // an argument, -5 or -1s: no flag starts with a digit
			pos, args = append(pos, args[0]), args[1:]
			continue
		}
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if used := len(args) - len(rest); used > 0 && args[used-1] == "--" {
			return append(pos, rest...), nil
		}
		if len(rest) == 0 {
			return pos, nil
		}
		pos, args = append(pos, rest[0]), rest[1:]
	}
}

// negative reports whether arg is a negative number or duration.
func negative(arg string) bool {
	return len(arg) > 1 && arg[0] == '-' && arg[1] >= '0' && arg[1] <= '9'
}

// overview is the top-level help: every command in one line each.
func overview() string {
	var b strings.Builder
	b.WriteString("emq shows and steers emq queues on a server or a cluster.\n\nUsage: emq <command> [arguments] [flags]\n\nCommands:\n")
	width := 0
	for _, c := range commands {
		width = max(width, len(c.name))
	}
	for _, c := range commands {
		fmt.Fprintf(&b, "  %-*s  %s\n", width, c.name, c.summary)
	}
	b.WriteString(`
Every command takes --addr host:port (a cluster: any node, or several
comma-separated; a unix socket's path; default $EMQ_ADDR or
127.0.0.1:6379), --user ($EMQ_USER; the password comes from $EMQ_PASSWORD),
--db ($EMQ_DB), --tls (with --cacert, --cert and --key, --sni, --insecure),
--sentinel <name> (--addr then lists Sentinels), --timeout, and --json (for
scripts) but for dash and metrics.

Exit codes: 0 done, 1 failed, 2 bad usage, 3 no such job (or schedule),
4 refused by the server (a replica's READONLY, OOM too), or some jobs of a
bulk action.

"emq help <command>" shows a command's flags and examples; "emq version"
its version (a server's module says its own: EMQ.CAPS).
`)
	return b.String()
}
