package builtin

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/valkey-io/valkey-go"

	"github.com/echomq/emq/ids"
	"github.com/echomq/emq/internal/valkeytest"
	"github.com/echomq/emq/keys"
)

// TestAHugeBatchGivesItsMemoryBack: one EMQ.APPEND of 100,000 entries grows
// the module's Go heap by tens of MB for the length of the call. The verbs
// allocate nothing afterwards, so no later collection would free it: the
// call itself hands it back. The Go heap and the server's RSS come back to
// within a few percent of before.
func TestAHugeBatchGivesItsMemoryBack(t *testing.T) {
	const entries = 100_000
	s := start(t, valkeytest.Options{})
	m, err := ids.NewMinter(21)
	require.NoError(t, err)
	small := func() {
		calls, _ := oneOfEach(m, "small")
		for _, c := range append(calls, caps) {
			require.NoError(t, s.Do(c.argv()...).Error(), c.String())
		}
	}

	// A built-in call as large first (400,000 arguments, as the batch has):
	// what the server keeps after one — allocator arenas, buffers sized by
	// the largest call — is then in the baseline, and the module is what
	// the two readings differ by.
	fields := make([]string, 0, 4*entries)
	for i := 0; i < 2*entries; i++ {
		fields = append(fields, "f"+strconv.Itoa(i), "v")
	}
	require.NoError(t, alone(t, s, builtin("HSET", 1, append([]string{"emq:{huge}:h"}, fields...)...)).Error())
	small()
	before := settledMemory(t, s)

	huge := make([]entry, entries)
	for i := range huge {
		huge[i] = entry{m.Mint(ids.Evt), []string{"n", strconv.Itoa(i)}}
	}
	got, err := alone(t, s, appendTo("huge", "s", huge...)).AsStrSlice()
	require.NoError(t, err)
	require.Len(t, got, entries)
	small()
	after := settledMemory(t, s)

	assert.LessOrEqual(t, after.goLive, before.goInuse, "the heap the last collection kept is no more than was in use before")
	assert.LessOrEqual(t, after.goInuse, before.goInuse*105/100+goHeapSlack,
		"the Go heap in use is back within 5 %% (and %d bytes)", goHeapSlack)
	// The collection that frees the batch leaves its own work buffers to
	// the runtime's background sweeper, so they are freed after the call
	// returned its memory; the background scavenger returns what free
	// memory exceeds the heap goal, and waiting for it is fair.
	bound := before.rss*105/100 + goRetained
	for deadline := time.Now().Add(5 * time.Second); after.rss > bound && time.Now().Before(deadline); {
		time.Sleep(100 * time.Millisecond)
		after.rss = residentSet(t, s)
	}
	t.Logf("before → after the batch: Go heap in use %d → %d, Go heap live %d → %d, RSS %d → %d",
		before.goInuse, after.goInuse, before.goLive, after.goLive, before.rss, after.rss)
	assert.LessOrEqual(t, after.rss, bound, "RSS is back within 5 %% (and the %d bytes of free memory the runtimes may keep)", goRetained)
}

// TestAQueueOfALongNameLeavesNoMemoryBehind: between calls the module
// keeps a little of the queues it serves — the names of a queue's
// settings keys, a queue its workers waited on lately — but nothing of a
// queue whose name is long: a claim and a blocking claim that timed out,
// on a queue of a 4 MB name, leave neither the server's used_memory
// (which maxmemory counts and no FLUSHALL frees) nor the module's Go heap
// larger. (Kept, they were 4 MB of the one and 8 MB of the other.)
func TestAQueueOfALongNameLeavesNoMemoryBehind(t *testing.T) {
	s := start(t, valkeytest.Options{})
	m, err := ids.NewMinter(21)
	require.NoError(t, err)
	// collect makes a call over the plan's kept room, which the host
	// follows by collecting the Go heap: what it keeps is then live — a
	// reading of the live heap from before it would say nothing
	collect := func() {
		cycles := valkeytest.InfoInt(s.Info("emq"), "emq_go_gc_cycles")
		batch := make([]entry, 5000)
		for i := range batch {
			batch[i] = entry{m.Mint(ids.Evt), []string{"n", "1"}}
		}
		require.NoError(t, alone(t, s, appendTo("gc", "s", batch...)).Error())
		require.Greater(t, valkeytest.InfoInt(s.Info("emq"), "emq_go_gc_cycles"), cycles, "a collection ran")
	}
	collect()
	before := settledMemory(t, s)

	name := strings.Repeat("n", 4<<20)
	sets := []string{keys.Pending(name), keys.Set(name, keys.ActiveSet), keys.Set(name, keys.DelayedSet), keys.Set(name, keys.DeadSet)}
	for _, v := range []string{"EMQ.CLAIM", "EMQ.BCLAIM"} {
		args := []string{"30000", "1", "3"}
		if v == "EMQ.BCLAIM" {
			args = append(args, "1") // a 1 ms wait, over before the reply
		}
		require.True(t, valkey.IsValkeyNil(alone(t, s, verb(v, sets, args...)).Error()), v)
	}
	collect()
	after := settledMemory(t, s)
	t.Logf("before → after: used_memory %d → %d, Go heap live %d → %d", before.used, after.used, before.goLive, after.goLive)
	assert.Less(t, after.used, before.used+1<<20, "used_memory")
	assert.Less(t, after.goLive, before.goLive+1<<20, "the Go heap the collection kept")
}

// goHeapSlack is what two readings of a Go heap that holds the same may
// differ by: the garbage of a few calls and INFO replies, in 8 KB spans.
const goHeapSlack = 16 * 8 << 10

// goRetained is the memory a settled server may keep resident without
// holding anything: the Go runtime's free heap up to its goal (4 MB for a
// heap as small as the module's) and a few of jemalloc's 2 MB residency
// steps, seen on a loaded machine. Keeping the batch's memory is 35 MB
// more: this bound still tells the two apart.
const goRetained = 10 << 20

// alone sends c on a connection of its own, closed at once, so that no
// client buffer sized by the call outlives it.
func alone(t *testing.T, s *valkeytest.Server, c command) valkey.ValkeyResult {
	t.Helper()
	cl := newClient(t, s, "")
	defer cl.Close()
	return as(t, cl, c)
}

// memoryHeld is what a server holds at one moment.
type memoryHeld struct {
	goInuse, goLive int64 // INFO emq: emq_go_heap_inuse_bytes, emq_go_heap_live_bytes
	rss             int64 // the server process's resident set
	used            int64 // INFO memory: used_memory, what the server's allocator holds
}

// settledMemory frees the data set and hands the allocator's free pages
// back, so that what remains is the server and the module, and reads it.
func settledMemory(t *testing.T, s *valkeytest.Server) memoryHeld {
	t.Helper()
	ok(t, s, "FLUSHALL", "SYNC")
	ok(t, s, "MEMORY", "PURGE")
	time.Sleep(200 * time.Millisecond) // clientsCron shrinks idle clients' buffers every 100 ms
	ok(t, s, "MEMORY", "PURGE")
	info := s.Info("emq")
	h := memoryHeld{goInuse: valkeytest.InfoInt(info, "emq_go_heap_inuse_bytes"),
		goLive: valkeytest.InfoInt(info, "emq_go_heap_live_bytes"), rss: residentSet(t, s),
		used: valkeytest.InfoInt(s.Info("memory"), "used_memory")}
	require.Positive(t, h.goInuse, "INFO emq")
	return h
}

// residentSet reads the server process's resident set from /proc.
func residentSet(t *testing.T, s *valkeytest.Server) int64 {
	t.Helper()
	kb, err := s.ProcStatus("VmRSS")
	require.NoError(t, err)
	return kb << 10
}
