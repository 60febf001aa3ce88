package builtin

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/echomq/emq/internal/valkeytest"
)

// forkTimeout is the longest one BGSAVE or BGREWRITEAOF of the small data
// here may take; a child running Go code would hang far past it.
const forkTimeout = 20 * time.Second

func TestForksUnderLoad(t *testing.T) {
	forks := 10
	if soak() {
		forks = 50
	}
	s := start(t, valkeytest.Options{Config: []string{"appendonly", "yes"}})
	forksBefore := infoInt(t, s, "stats", "total_forks")

	stop := make(chan struct{})
	var wg sync.WaitGroup
	drivers := make([]*workload, 4)
	for i := range drivers {
		drivers[i] = newWorkload(t, s.Client(), "fork"+strconv.Itoa(i)+"-", 3)
		wg.Add(1)
		go func(w *workload) {
			defer wg.Done()
			w.runUntil(t, stop)
		}(drivers[i])
	}
	pings := pingThroughout(t, s, stop, &wg)

	var slowest time.Duration
	for i := 0; i < forks; i++ {
		slowest = max(slowest, background(t, s, "BGSAVE", "rdb_bgsave_in_progress", "rdb_last_bgsave_status"))
		slowest = max(slowest, background(t, s, "BGREWRITEAOF", "aof_rewrite_in_progress", "aof_last_bgrewrite_status"))
		if t.Failed() {
			break
		}
	}
	// A full sync forks too: link a replica while the drivers write.
	replica := valkeytest.StartReplica(t, s, valkeytest.Options{NoModule: true, Dir: t.TempDir()})
	close(stop)
	wg.Wait()
	rounds := 0
	for _, w := range drivers {
		rounds += w.rounds
	}
	t.Logf("%d forks under %d drivers (%d rounds); slowest fork %v; %d pings, slowest %v",
		2*forks, len(drivers), rounds, slowest, pings.n, pings.slowest)

	t.Run("every fork finished and reported ok", func(t *testing.T) {
		assert.GreaterOrEqual(t, infoInt(t, s, "stats", "total_forks")-forksBefore, int64(2*forks))
		assert.Empty(t, s.Warnings())
	})
	t.Run("the server answered PING throughout", func(t *testing.T) {
		assert.Zero(t, pings.failed)
		assert.Greater(t, pings.n, 0)
	})
	t.Run("the drivers' writes are all there", func(t *testing.T) {
		for _, w := range drivers {
			assert.Greater(t, w.rounds, 0)
			w.verify(t)
		}
	})
	t.Run("a replica synced under load holds the same data", func(t *testing.T) {
		valkeytest.WaitReplicated(t, s, replica)
		assert.Equal(t, digest(t, s), digest(t, replica))
	})
	t.Run("a replay of the rewritten AOF without the module gives the same data", func(t *testing.T) {
		want := digest(t, s)
		s.Stop()
		r := start(t, valkeytest.Options{NoModule: true, Dir: s.Dir, Config: []string{"appendonly", "yes"}})
		assert.Equal(t, want, digest(t, r))
	})
}

// background runs a forking command (BGSAVE, BGREWRITEAOF), waits until the
// INFO persistence field inProgress is 0 again, checks that status is ok,
// and returns how long it took.
func background(t *testing.T, s *valkeytest.Server, cmd, inProgress, status string) time.Duration {
	t.Helper()
	began := time.Now()
	require.NoError(t, s.Do(cmd).Error(), cmd)
	eventually(t, forkTimeout, cmd+" to finish", func() bool {
		return s.InfoField("persistence", inProgress) == "0" && s.InfoField("persistence", "aof_rewrite_scheduled") == "0"
	})
	assert.Equal(t, "ok", s.InfoField("persistence", status), cmd)
	return time.Since(began)
}

// pings counts the PINGs sent while the forks ran.
type pings struct {
	n, failed int
	slowest   time.Duration
}

// pingThroughout pings s on a connection of its own every 10ms until stop
// closes, each PING allowed a second; the counts are final once wg is done.
func pingThroughout(t *testing.T, s *valkeytest.Server, stop chan struct{}, wg *sync.WaitGroup) *pings {
	cl := newClient(t, s, "")
	p := &pings{}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			case <-time.After(10 * time.Millisecond):
			}
			c, cancel := context.WithTimeout(context.Background(), time.Second)
			began := time.Now()
			if err := cl.Do(c, cl.B().Ping().Build()).Error(); err != nil {
				p.failed++
			}
			cancel()
			p.n++
			p.slowest = max(p.slowest, time.Since(began))
		}
	}()
	return p
}

// infoInt returns an integer field of INFO section.
func infoInt(t *testing.T, s *valkeytest.Server, section, field string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(s.InfoField(section, field), 10, 64)
	require.NoError(t, err, field)
	return n
}
