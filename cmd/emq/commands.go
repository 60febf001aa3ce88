package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/echomq/emq/client"
	"github.com/echomq/emq/ids"
	"github.com/echomq/emq/inspect"
	"github.com/valkey-io/valkey-go"
)

// command is one subcommand: its usage, its flags and what it runs.
type command struct {
	name, args, summary string
	// detail says more than the summary, for emq help <command>.
	detail   string
	examples []string
	// minArgs and maxArgs bound the positional arguments; maxArgs -1 is
	// no bound.
	minArgs, maxArgs int
	// flags adds the command's own flags to the common ones.
	flags func(fs *flag.FlagSet, o *options)
	run   func(ctx context.Context, s *session, args []string) error
	// serves is a command that runs until interrupted: --timeout bounds
	// only its connections' dials and greetings, not the run.
	serves bool
	// noJSON is a command that prints no table: it takes no --json.
	noJSON bool
}

// commands is every subcommand, in the order help lists them.
var commands []*command

func init() {
	commands = []*command{
		queuesCmd, jobsCmd, jobCmd, repeatsCmd,
		reviveCmd, deleteCmd, purgeCmd, pauseCmd, resumeCmd, limitCmd, eventsCmd, unrepeatCmd, enqueueCmd,
		tailCmd, statsCmd, dashCmd, metricsCmd,
	}
}

// lookup returns the command called name, or nil.
func lookup(name string) *command {
	for _, c := range commands {
		if c.name == name {
			return c
		}
	}
	return nil
}

// options are every flag's value; each command registers those it takes.
type options struct {
	target
	json     bool
	timeout  time.Duration
	node     uint
	delay    time.Duration
	priority int64

	state         string
	limit, offset int
	all           bool
	olderThan     time.Duration

	from  string
	count int

	listen, auth string
	allowHosts   string
	write        bool
	sample       time.Duration
}

// flagSet is the command's flags: the common ones, then its own.
func (c *command) flagSet(o *options, e env) *flag.FlagSet {
	fs := flag.NewFlagSet(c.name, flag.ContinueOnError)
	fs.SetOutput(io.Discard) // run reports parse errors and help itself
	targetFlags(fs, &o.target, e)
	if !c.noJSON {
		fs.BoolVar(&o.json, "json", false, "print JSON for scripts instead of a table")
	}
	timeout := "give up after this long"
	if c.serves {
		timeout = "give up dialing and greeting a node after this long (the command runs until interrupted)"
	}
	fs.DurationVar(&o.timeout, "timeout", 30*time.Second, timeout)
	if c.flags != nil {
		c.flags(fs, o)
	}
	return fs
}

// argsText says how many arguments the command takes, for a usage error.
func (c *command) argsText() string {
	if c.args == "" {
		return "no arguments"
	}
	return c.args
}

// help is the command's page: usage, what it does, flags, examples.
func (c *command) help(e env) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Usage: emq %s [flags]\n\n%s\n", strings.TrimSpace(c.name+" "+c.args), c.summary)
	if c.detail != "" {
		fmt.Fprintf(&b, "\n%s\n", strings.TrimSpace(c.detail))
	}
	b.WriteString("\nFlags:\n")
	fs := c.flagSet(&options{}, e) // the defaults as this run takes them: $EMQ_ADDR's, $EMQ_USER's
	fs.SetOutput(&b)
	fs.PrintDefaults()
	if len(c.examples) > 0 {
		b.WriteString("\nExamples:\n")
		for _, ex := range c.examples {
			fmt.Fprintf(&b, "  %s\n", ex)
		}
	}
	return b.String()
}

// topologyRefresh is how often a cluster's slot map is read again.
const topologyRefresh = 10 * time.Second

// session is one run's connection, opened on first use.
type session struct {
	e  env
	o  *options
	vk valkey.Client
	in *inspect.Inspector
	c  *client.Client
	// noRetry makes the client return a read that failed rather than send
	// it again itself until the server answers, saying nothing (tail says
	// so, then reads again).
	noRetry bool
}

// inspector is the session's Inspector, connected.
func (s *session) inspector() (*inspect.Inspector, error) {
	if err := s.connect(); err != nil {
		return nil, err
	}
	return s.in, nil
}

// queue is a handle on the queue name whose enqueues mint ids with the
// --node snowflake node.
func (s *session) queue(name string) (*client.Queue, error) {
	if err := s.connect(); err != nil {
		return nil, err
	}
	m, err := ids.NewMinter(uint32(s.o.node))
	if err != nil {
		return nil, usageError("--node: %v", err)
	}
	q, err := s.c.Queue(name, m, client.Policy{})
	if err != nil {
		return nil, usageError("%v", err)
	}
	return q, nil
}

func (s *session) close() {
	if s.vk != nil {
		s.vk.Close()
	}
}

// The states a --state names: any, to list; those purge removes, not
// active jobs, which workers hold.
const (
	anyState   = "pending, active, delayed or dead"
	purgeState = "pending, delayed or dead"
)

// stateFlag adds --state; all says what no state means.
func stateFlag(fs *flag.FlagSet, o *options, all string) {
	fs.StringVar(&o.state, "state", "", anyState+" ("+all+")")
}

// parseState reads --state, whose refusal says want, the states the
// command takes; "" is no state chosen.
func parseState(s, want string) (inspect.State, error) {
	if s == "" {
		return "", nil
	}
	st, ok := inspect.ParseState(s)
	if !ok {
		return "", usageError("--state %q: want %s", s, want)
	}
	return st, nil
}

// parseJobID reads a job id argument.
func parseJobID(text string) (ids.ID, error) {
	id, ok := ids.Parse(ids.Job, []byte(text))
	if !ok {
		return ids.ID{}, usageError("not a job id (JOB and 16 lowercase hex digits): %q", text)
	}
	return id, nil
}
