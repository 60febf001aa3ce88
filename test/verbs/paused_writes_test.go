package verbs

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/echomq/emq/internal/valkeytest"
)

// TestNothingIsWrittenWhileWritesArePaused: CLIENT PAUSE … WRITE (which
// FAILOVER and CLUSTER FAILOVER use) pauses the clients' writes, but the
// server keeps firing module timers. A delayed job falling due inside the
// pause, with a worker waiting and a replica attached, once made the timer
// promote and serve it — a write the server asserts never happens while
// paused, so it aborted. Now nothing is written during the pause, and the
// job reaches the worker once the pause ends.
func TestNothingIsWrittenWhileWritesArePaused(t *testing.T) {
	primary := valkeytest.Start(t, valkeytest.Options{})
	replica := valkeytest.StartReplica(t, primary, valkeytest.Options{})
	id := jobN(1)
	require.NoError(t, primary.Do(bq.enqueue(id, "p")...).Error())
	require.NoError(t, primary.Do("ZREM", bq.pending, id).Error())
	require.NoError(t, primary.Do("HSET", bq.job(id), "state", "delayed").Error())

	worker := blockB(t, primary, 60_000, 20_000)
	const pause = 1500 * time.Millisecond
	var paused time.Time
	for try := 0; ; try++ { // the job must fall due inside the pause
		due := time.Now().Add(400 * time.Millisecond)
		require.NoError(t, primary.Do("ZADD", bq.delayed, strconv.FormatInt(due.UnixMilli(), 10), id).Error())
		paused = time.Now()
		require.NoError(t, primary.Do("CLIENT", "PAUSE", strconv.FormatInt(pause.Milliseconds(), 10), "WRITE").Error())
		if time.Now().Before(due) {
			break
		}
		require.Less(t, try, 3, "a loaded machine: the pause never began before the due time")
		require.NoError(t, primary.Do("CLIENT", "UNPAUSE").Error())
		reply, err := worker.read()
		require.NoError(t, err)
		require.Equal(t, id, claimedID(t, reply))
		must(t, primary, bq.fail(id, 1, 60_000_000, 5, "again")...)
		worker = blockB(t, primary, 60_000, 20_000)
	}
	reply, err := worker.read()
	served := time.Now()
	require.NoError(t, err)
	require.True(t, primary.Running(), "the primary survives the pause:\n%s", primary.LogTail(30))
	assert.Equal(t, id, claimedID(t, reply), "the job reaches the worker")
	assert.GreaterOrEqual(t, served.Sub(paused), pause-50*time.Millisecond, "not before the pause ends")
	assert.Less(t, served.Sub(paused), pause+2*time.Second, "soon after it ends")
	valkeytest.WaitReplicated(t, primary, replica)
	state, err := replica.Do("HGET", bq.job(id), "state").ToString()
	require.NoError(t, err)
	assert.Equal(t, "active", state, "the replica holds the claim")
}
