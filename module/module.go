// Package module is what the server loads: it names the module, registers
// every row of the command table, and serves each call of a verb — run it,
// reply its refusal if it refuses, count it for INFO emq.
package module

import (
	"errors"
	"slices"
	"strconv"
	"strings"

	"github.com/echomq/emq/emq"
	emqerrors "github.com/echomq/emq/errors"
	"github.com/echomq/emq/host"
	"github.com/echomq/emq/registry"
)

// moduleVersion is emq.Version as MODULE LIST shows it:
// major*10000 + minor*100 + patch.
func moduleVersion() int {
	v := 0
	for _, part := range strings.SplitN(emq.Version, ".", 3) {
		n, _ := strconv.Atoi(part)
		v = v*100 + n
	}
	return v
}

// Load sets the module up in a server; host calls it from OnLoad, once per
// load, with every package variable it touches reset here.
func Load(m *host.Module) error {
	if err := m.Init(registry.ModuleName, moduleVersion()); err != nil {
		return err
	}
	if m.Has("RedisModule_AddACLCategory") {
		if err := m.AddACLCategory(registry.ACLCategory); err != nil {
			return err
		}
	} else {
		m.Log(host.Warning, "emq: this server has no module ACL categories, so the verbs are in none (not @emq, @write or @fast, and -@write does not refuse them): grant each by name, +emq.enqueue style, or all with +@all")
	}
	if err := m.Intern(emq.Constants); err != nil {
		return err
	}
	lim, err := loadConfigs(m, m.Args())
	if err != nil {
		return err
	}
	rows := registry.Rows()
	stats = newStats(rows)
	for i, row := range rows {
		if err := m.Register(row.CommandSpec, serve(row.Verb.Run, &stats.verbs[i], lim)); err != nil {
			return err
		}
	}
	m.OnSweep(serve(emq.Sweep.Run, nil, lim))
	if err := m.CanWait(); err != nil {
		return err
	}
	if err := m.OnInfo(stats.info); err != nil {
		return err
	}
	// last, where nothing after it can fail the load: no failed load leaves
	// the server a subscription into a module it did not keep
	warnEviction(m)
	return m.OnConfigChange(func(m *host.Module, names []string) {
		if slices.Contains(names, "maxmemory-policy") {
			warnEviction(m)
		}
	})
}

// warnEviction warns in the server log when its maxmemory-policy may evict
// any key: at load, and after a CONFIG SET of the policy.
func warnEviction(m *host.Module) {
	if policy := m.ServerInfo("memory", "maxmemory_policy"); strings.HasPrefix(policy, "allkeys-") {
		m.Log(host.Warning, "emq: maxmemory-policy is "+policy+": once it reaches maxmemory the server may evict a job's row or a queue's set, and the job is lost; a server holding queues needs noeviction (docs/OPERATIONS.md, Memory)")
	}
}

// serve turns a verb into the handler of its command; counts nil for the
// queues' sweep, which is no command.
func serve(verb func(emq.Call) error, counts *verbStats, lim limits) host.Handler {
	if counts == nil {
		counts = new(verbStats)
	}
	return func(c *host.Call, args [][]byte, plan *emq.Plan) {
		if !c.Woken() { // a wake-up is the same call again
			counts.calls++
		}
		returned := false
		defer func() {
			if !returned { // a panic: host replies ERR and logs it
				counts.refused[emqerrors.Internal]++
			}
		}()
		err := verb(emq.Call{Args: args, Server: c, Plan: plan, Limits: lim.emq()})
		returned = true
		if err != nil {
			r := refusalOf(err)
			counts.refused[r.Code]++
			c.ReplyError(r.Code.String(), r.Msg)
			return
		}
		stats.count(plan)
	}
}

// refusalOf is the refusal a verb's error is replied and counted as: the
// refusal it is or wraps, or else an internal one (ERR) with its text — not
// counted under code 0, which INFO emq shows under no code.
func refusalOf(err error) *emqerrors.Refusal {
	var r *emqerrors.Refusal
	if errors.As(err, &r) {
		return r
	}
	return &emqerrors.Refusal{Code: emqerrors.Internal, Msg: err.Error()}
}
