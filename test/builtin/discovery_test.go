package builtin

import (
	"slices"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/echomq/emq/ids"
	"github.com/echomq/emq/internal/valkeytest"
	"github.com/echomq/emq/registry"
)

// keyPositions is what a cluster client learns of a command from COMMAND
// INFO: where its keys are, and whether it must ask the server instead.
type keyPositions struct {
	first, last, step int
	movable           bool // movablekeys: only COMMAND GETKEYS can tell
}

// keys returns the keys of argv at the positions, as redis-py's cluster
// client reads them: argv[first], argv[first+step] … argv[last], last
// counted from the end when negative.
func (p keyPositions) keys(argv []string) []string {
	last := p.last
	if last < 0 {
		last += len(argv)
	}
	var out []string
	for i := p.first; p.step > 0 && i <= last && i < len(argv); i += p.step {
		out = append(out, argv[i])
	}
	return out
}

// discover reads the key positions of each named command from s's
// COMMAND INFO, in one call, as a cluster client does when it starts.
func discover(t *testing.T, s *valkeytest.Server, names []string) map[string]keyPositions {
	t.Helper()
	infos, err := s.Do(append([]string{"COMMAND", "INFO"}, names...)...).ToArray()
	require.NoError(t, err)
	require.Len(t, infos, len(names))
	out := map[string]keyPositions{}
	for i, info := range infos {
		fields, err := info.ToArray()
		require.NoError(t, err, names[i])
		flags, err := fields[2].AsStrSlice()
		require.NoError(t, err)
		var pos [3]int64
		for j := range pos {
			pos[j], err = fields[3+j].AsInt64()
			require.NoError(t, err)
		}
		out[names[i]] = keyPositions{int(pos[0]), int(pos[1]), int(pos[2]), slices.Contains(flags, "movablekeys")}
	}
	return out
}

// TestClusterClientsRouteByCommandInfoAlone: a cluster client that routes
// by COMMAND INFO, as redis-py's does, finds every verb's keys at fixed
// positions, computes their slot itself and sends each call straight to
// the primary that owns it — no MOVED, and not one COMMAND GETKEYS, which
// such a client sends before every call of a command flagged movablekeys.
func TestClusterClientsRouteByCommandInfoAlone(t *testing.T) {
	c := valkeytest.StartCluster(t, 3, 0, valkeytest.Options{})
	for _, s := range c.Nodes {
		noModuleWarnings(t, s)
	}
	m, err := ids.NewMinter(22)
	require.NoError(t, err)
	var verbs []string
	for _, r := range registry.Rows() {
		if r.Keys > 0 {
			verbs = append(verbs, r.Name)
		}
	}
	positions := discover(t, c.Nodes[0], verbs)
	for _, name := range verbs {
		assert.False(t, positions[name].movable, "%s is flagged movablekeys", name)
	}
	// keysOf is the client's view of a call's keys: at the positions, or,
	// for a command flagged movablekeys, what COMMAND GETKEYS answers.
	keysOf := func(name string, argv []string) []string {
		if !positions[name].movable {
			return positions[name].keys(argv)
		}
		keys, err := c.Nodes[0].Do(append([]string{"COMMAND", "GETKEYS"}, argv...)...).AsStrSlice()
		require.NoError(t, err)
		return keys
	}
	served := map[string]int{}
	builder := c.Nodes[0].Client().B()
	for tag := 0; tag < 24; tag++ {
		calls, _ := oneOfEach(m, "route"+strconv.Itoa(tag))
		for _, call := range calls {
			argv := call.argv()
			keys := keysOf(call.name, argv)
			require.Equal(t, call.keys, keys, "%s: the keys the client finds", call)
			// the client's own slot computation (valkey-go's CRC16 of the hash tag)
			routed := builder.Arbitrary(argv[:2]...).Keys(keys...).Args(argv[2+len(keys):]...).Build()
			slot := routed.Slot() & (valkeytest.Slots - 1) // the rest are valkey-go's marks
			require.Equal(t, c.Slot(t, keys[0]), int(slot), "%s: the slot the client computes is the server's", call)
			owner := c.Owner(t, int(slot)) // by CLUSTER SLOTS, as the client knows the topology
			require.NoError(t, owner.Do(argv...).Error(), "%s sent to the owner of slot %d", call, slot)
			served[owner.Addr]++
		}
	}
	t.Run("every primary served calls", func(t *testing.T) {
		for _, s := range c.Primaries {
			assert.Positive(t, served[s.Addr], s.Addr)
		}
	})
	t.Run("no node was asked COMMAND GETKEYS", func(t *testing.T) {
		for _, s := range c.Nodes {
			stats := s.Info("commandstats")
			assert.NotContains(t, stats, "cmdstat_command|getkeys", s.Addr)
			assert.NotContains(t, stats, "cmdstat_command|getkeysandflags", s.Addr)
		}
	})
}
