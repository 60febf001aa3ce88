package module

import (
	"fmt"
	"strconv"

	"github.com/echomq/emq/emq"
	"github.com/echomq/emq/host"
)

// config is one module config: emq.<name> in valkey.conf and CONFIG SET, or
// `<name> <value>` after the module's path on the loadmodule line.
type config struct {
	name          string
	def, min, max int64
}

// appendMaxEntries caps the entries of one EMQ.APPEND; above it the call is
// an EMQSHAPE refusal.
var appendMaxEntries = config{
	name: "append-max-entries", def: 100_000, min: 1, max: 1<<31 - 1,
}

// sweepBatch bounds the jobs one sweep of a claim (promoting delayed jobs,
// requeueing stalled ones) moves.
var sweepBatch = config{
	name: "sweep-batch", def: emq.DefaultSweepBatch, min: 1, max: 100_000,
}

// configs are every config the module has.
var configs = []*config{&appendMaxEntries, &sweepBatch}

// limits reads the configs the verbs obey, as they are now.
type limits struct {
	appendMaxEntries, sweepBatch host.NumericConfig
}

func (l limits) emq() emq.Limits {
	return emq.Limits{AppendMaxEntries: int(l.appendMaxEntries.Value()), SweepBatch: int(l.sweepBatch.Value())}
}

// loadConfigs registers the configs, with defaults taken from the load
// arguments (name value pairs), then applies valkey.conf's emq.<name> lines.
func loadConfigs(m *host.Module, args []string) (limits, error) {
	if len(args)%2 != 0 {
		return limits{}, fmt.Errorf("load arguments must be name value pairs, got %q", args)
	}
	defs := map[string]int64{}
	for i := 0; i < len(args); i += 2 {
		c := lookupConfig(args[i])
		if c == nil {
			return limits{}, fmt.Errorf("unknown load argument %q", args[i])
		}
		v, err := strconv.ParseInt(args[i+1], 10, 64)
		if err != nil || v < c.min || v > c.max {
			return limits{}, fmt.Errorf("%s must be an integer from %d to %d, got %q", c.name, c.min, c.max, args[i+1])
		}
		defs[c.name] = v
	}
	var l limits
	for _, c := range configs {
		def, ok := defs[c.name]
		if !ok {
			def = c.def
		}
		nc, err := m.NumericConfig(c.name, def, c.min, c.max)
		if err != nil {
			return limits{}, err
		}
		switch c {
		case &appendMaxEntries:
			l.appendMaxEntries = nc
		case &sweepBatch:
			l.sweepBatch = nc
		}
	}
	return l, m.LoadConfigs()
}

func lookupConfig(name string) *config {
	for _, c := range configs {
		if c.name == name {
			return c
		}
	}
	return nil
}
